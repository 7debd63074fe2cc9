"""Running the real ``nyz serve`` in tests and talking to it as a client would, over
``trio-websocket``.

    async with serve_nyz(workspace, home) as srv:
        async with srv.connect() as client:
            await client.hello()
            await client.send({"type": "message", "text": "hi"})
            await client.until(lambda m: event_type(m) == "turn_complete")
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from nyzhi.testing.cli import NYZ, nyz_env

TOKEN = "web-test-token-0123456789"


def event_type(message: dict[str, Any]) -> str | None:
    """The event type of an ``event`` message, else None."""
    return message["event"]["type"] if message.get("type") == "event" else None


@attrs.define
class Client:
    ws: Any
    seen: list[dict[str, Any]] = attrs.field(factory=list)

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send_message(json.dumps(message))

    async def receive(self) -> dict[str, Any]:
        message = json.loads(await self.ws.get_message())
        self.seen.append(message)
        return message

    async def until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Read messages until one satisfies ``done``; that one. Fails after 60 seconds."""
        with trio.fail_after(60):
            while True:
                message = await self.receive()
                if done(message):
                    return message

    async def hello(self, session: str | None = None, since: int = 0) -> tuple[dict, dict]:
        """Send hello; the welcome and state messages."""
        await self.send({"type": "hello", "protocol": 1, "session": session, "since": since})
        welcome = await self.receive()
        assert welcome["type"] == "welcome", welcome
        state = await self.receive()
        assert state["type"] == "state", state
        return welcome, state


@attrs.define
class Served:
    proc: trio.Process
    port: int
    stderr: bytearray
    token: str = TOKEN

    def url(self, path: str = "/ws", token: str | None = None) -> str:
        token = self.token if token is None else token
        return f"ws://127.0.0.1:{self.port}{path}?token={token}"

    @asynccontextmanager
    async def connect(self, token: str | None = None, **kw: Any) -> AsyncIterator[Client]:
        """A WebSocket client of ``/ws``. The TCP stream is opened here and closed however the
        connection ends: trio-websocket's own ``open_websocket_url`` leaves the socket of a
        refused handshake open (a ResourceWarning when it is collected). One error comes out
        as itself, as ``open_websocket_url`` has it (``ConnectionRejected``, an assertion)."""
        from trio_websocket import wrap_client_stream

        token = self.token if token is None else token
        stream = await trio.open_tcp_stream("127.0.0.1", self.port)
        async with stream:
            try:
                async with trio.open_nursery() as nursery:
                    ws = await wrap_client_stream(nursery, stream, f"127.0.0.1:{self.port}",
                                                  f"/ws?token={token}", **kw)
                    try:
                        yield Client(ws)
                    finally:
                        await ws.aclose()
                        nursery.cancel_scope.cancel()
            except BaseExceptionGroup as group:
                if len(group.exceptions) == 1:
                    raise group.exceptions[0] from None
                raise

    @asynccontextmanager
    async def connect_stalled(self) -> AsyncIterator[Client]:
        """A client that reads nothing after ``hello``: a tiny receive buffer and a
        one-message queue, so the server's sends back up at once."""
        import socket

        from trio_websocket import wrap_client_stream

        sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
        with sock:  # closed however it ends (the WebSocket's close alone left it to the collector)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            await sock.connect(("127.0.0.1", self.port))
            stream = trio.SocketStream(sock)
            async with trio.open_nursery() as nursery:
                ws = await wrap_client_stream(nursery, stream, f"127.0.0.1:{self.port}",
                                              f"/ws?token={self.token}", message_queue_size=1)
                try:
                    yield Client(ws)
                finally:
                    await ws.aclose()
                    nursery.cancel_scope.cancel()

    async def http(self, request: bytes) -> tuple[int, bytes]:
        """One raw HTTP request; (status, body)."""
        status, _head, body = await self.http_full(request)
        return status, body

    async def http_full(self, request: bytes) -> tuple[int, bytes, bytes]:
        """One raw HTTP request; (status, head, body)."""
        stream = await trio.open_tcp_stream("127.0.0.1", self.port)
        async with stream:
            await stream.send_all(request)
            got = b""
            with trio.fail_after(30):
                while chunk := await stream.receive_some(65536):
                    got += chunk
        head, _, body = got.partition(b"\r\n\r\n")
        return int(head.split(b" ", 2)[1]), head, body


@asynccontextmanager
async def serve_nyz(cwd: Path, home: Path, *args: str, token: str = TOKEN,
                    token_via: str = "flag") -> AsyncIterator[Served]:
    """``nyz [ARGS] serve --port 0 --token TOKEN`` (global flags may come first in ARGS,
    serve's own after a ``serve``), stopped on leaving. ``token_via``: ``"file"`` gives it as
    ``--token-file`` (a file under ``home``), ``"env"`` as ``NYZHI_SERVE_TOKEN``."""
    args_list = list(args)
    if "serve" not in args_list:
        args_list.append("serve")
    env = nyz_env(home)
    env.pop("NYZHI_SERVE_TOKEN", None)
    given = ["--token", token]
    if token_via == "file":
        path = home / "serve-token"
        path.write_text(token + "\n")
        path.chmod(0o600)
        given = ["--token-file", str(path)]
    elif token_via == "env":
        env["NYZHI_SERVE_TOKEN"], given = token, []
    cmd = [*NYZ, *args_list, "--port", "0", *given]
    async with trio.open_nursery() as nursery:
        proc: trio.Process = await nursery.start(functools.partial(
            trio.run_process, cmd, cwd=cwd, env=env, stderr=subprocess.PIPE,
            check=False))
        seen = bytearray()
        port = 0
        with trio.fail_after(60):
            while not port:
                chunk = await proc.stderr.receive_some(4096)
                if not chunk:
                    raise AssertionError(f"nyz serve did not start: {seen.decode()}")
                seen += chunk
                for line in seen.decode().splitlines():
                    if "listening on http://" in line:
                        port = int(line.split("listening on http://", 1)[1].split("/")[0]
                                   .rpartition(":")[2])

        async def drain() -> None:
            async for chunk in proc.stderr:
                seen.extend(chunk)

        nursery.start_soon(drain)
        try:
            yield Served(proc, port, seen, token)
        finally:
            proc.terminate()
            nursery.cancel_scope.deadline = trio.current_time() + 30
