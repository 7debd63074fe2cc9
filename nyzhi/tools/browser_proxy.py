"""Every connection the browser makes goes through here: a SOCKS5 proxy that checks and pins.

``Fetch`` interception (``nyzhi.tools.browser_guard``) sees the browser's HTTP requests, but
not its WebSockets, and it checks a URL on the addresses nyz resolves while Chromium resolves
again to connect (a name can answer differently the second time: DNS rebinding). So Chromium
is started with ``--proxy-server=socks5://127.0.0.1:PORT`` and ``--proxy-bypass-list=<-loopback>``
(loopback too goes through the proxy): it hands every connection's *name* and port to this
proxy, which checks them with ``nyzhi.tools.netguard``, connects to the address it checked, and
only then relays bytes. The workspace file server's port on 127.0.0.1 is the one loopback
address allowed. The proxy answers on loopback only, for as long as the browser runs.
"""

from __future__ import annotations

import ipaddress
import struct
from typing import Any

import trio

from nyzhi.tools.netguard import NetPolicy, Refused

HANDSHAKE_TIMEOUT = 30.0
CONNECT_TIMEOUT = 30.0
_CHUNK = 65536


class _Reader:
    """Exact reads from a stream (the SOCKS handshake), with what is left over kept."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.buffer = bytearray()

    async def exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = await self.stream.receive_some(_CHUNK)
            if not chunk:
                raise EOFError
            self.buffer.extend(chunk)
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out


class GuardProxy:
    """``serve`` is a ``trio.serve_tcp`` handler; ``refusals`` the latest reasons."""

    def __init__(self, policy: NetPolicy, files_port: int | None, note: Any = None) -> None:
        self.policy = policy
        self.files_port = files_port
        self.note = note  # called with each refusal's reason (the guard keeps them)
        self.connections = 0

    async def _target(self, host: str, port: int) -> str:
        """The address to connect to for ``host``:``port``; ``Refused`` otherwise."""
        if host == "127.0.0.1" and port == self.files_port:
            return host
        shown = f"[{host}]" if ":" in host else host
        target = await self.policy.check_url(f"http://{shown}:{port}/")
        return target.addresses[0]

    async def serve(self, client: trio.SocketStream) -> None:
        reader = _Reader(client)
        try:
            with trio.fail_after(HANDSHAKE_TIMEOUT):
                host, port = await self._handshake(reader, client)
        except (EOFError, trio.TooSlowError, trio.BrokenResourceError, ValueError):
            await client.aclose()
            return
        try:
            address = await self._target(host, port)
            with trio.fail_after(CONNECT_TIMEOUT):
                upstream = await trio.open_tcp_stream(address, port)
        except Refused as exc:
            if self.note is not None:
                self.note(f"a connection to {host}:{port}: {exc}")
            await self._reply(client, 0x02)  # connection not allowed by ruleset
            return
        except (OSError, trio.TooSlowError):
            await self._reply(client, 0x05)  # connection refused
            return
        self.connections += 1
        try:
            await client.send_all(b"\x05\x00\x00\x01" + bytes(4) + b"\x00\x00")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._pump, client, upstream, bytes(reader.buffer), nursery)
                nursery.start_soon(self._pump, upstream, client, b"", nursery)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            await upstream.aclose()
            await client.aclose()

    async def _handshake(self, reader: _Reader, client: trio.SocketStream) -> tuple[str, int]:
        version, count = await reader.exactly(2)
        if version != 5:
            raise ValueError("not SOCKS5")
        methods = await reader.exactly(count)
        if 0 not in methods:
            await client.send_all(b"\x05\xff")
            raise ValueError("no acceptable method")
        await client.send_all(b"\x05\x00")
        version, command, _reserved, kind = await reader.exactly(4)
        if version != 5:
            raise ValueError("not SOCKS5")
        if kind == 1:
            host = str(ipaddress.IPv4Address(await reader.exactly(4)))
        elif kind == 4:
            host = str(ipaddress.IPv6Address(await reader.exactly(16)))
        elif kind == 3:
            (length,) = await reader.exactly(1)
            host = (await reader.exactly(length)).decode("idna", errors="strict").lower()
        else:
            await self._reply(client, 0x08)
            raise ValueError("unknown address type")
        (port,) = struct.unpack(">H", await reader.exactly(2))
        if command != 1:  # CONNECT only: no BIND, no UDP
            await self._reply(client, 0x07)
            raise ValueError("only CONNECT")
        return host, port

    @staticmethod
    async def _reply(client: trio.SocketStream, code: int) -> None:
        try:
            await client.send_all(bytes([5, code, 0, 1]) + bytes(6))
            await client.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    @staticmethod
    async def _pump(src: trio.SocketStream, dst: trio.SocketStream, first: bytes,
                    nursery: trio.Nursery) -> None:
        try:
            if first:
                await dst.send_all(first)
            while True:
                chunk = await src.receive_some(_CHUNK)
                if not chunk:
                    break
                await dst.send_all(chunk)
            await dst.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            nursery.cancel_scope.cancel()
