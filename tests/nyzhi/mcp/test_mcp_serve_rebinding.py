"""``nyz mcp serve --http`` on any loopback address refuses a foreign ``Host`` or ``Origin``.

A DNS-rebinding page reaches a loopback server through the user's browser with its own name in
``Host`` and its own origin in ``Origin``. The SDK guards only 127.0.0.1, localhost and ::1, so
nyz checks both itself, on every loopback address. Real HTTP/1.1 requests, written byte for
byte on a socket, against the served port (each with the right bearer token, so only the Host
and Origin checks can refuse them).
"""

from __future__ import annotations

import functools
import json
import subprocess

import pytest
import trio

from nyzhi.testing.cli import NYZ, nyz_env

TOKEN = "rebinding-test-token"
INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}}).encode()


async def _serve(nursery, workspace, home, bind: str) -> tuple[str, int]:
    """Start ``nyz mcp serve --http BIND``; (host as served, port) once it listens."""
    proc = await nursery.start(functools.partial(
        trio.run_process, [*NYZ, "mcp", "serve", "--http", bind, "--token", TOKEN],
        cwd=workspace, env=nyz_env(home), stderr=subprocess.PIPE, check=False))
    seen = b""
    async for chunk in proc.stderr:
        seen += chunk
        for line in seen.decode().splitlines():
            if "listening on " in line:
                netloc = line.split("listening on http://", 1)[1].split("/", 1)[0]
                host, _, port = netloc.rpartition(":")
                return host.strip("[]"), int(port)
    raise AssertionError(f"nyz mcp serve did not start: {seen.decode()}")


async def _status(addr: str, port: int, headers: list[tuple[str, str]],
                  token: str | None = TOKEN) -> int:
    """POST an MCP initialize with exactly ``headers`` (plus the token); the status code."""
    lines = ["POST /mcp HTTP/1.1", *(f"{k}: {v}" for k, v in headers),
             "Content-Type: application/json", "Accept: application/json, text/event-stream",
             f"Content-Length: {len(INITIALIZE)}", "Connection: close"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode() + INITIALIZE
    stream = await trio.open_tcp_stream(addr, port)
    async with stream:
        await stream.send_all(request)
        got = b""
        while b"\r\n" not in got:
            chunk = await stream.receive_some(4096)
            if not chunk:
                break
            got += chunk
    return int(got.split(b" ", 2)[1])


BINDS = ["127.0.0.2:0", "127.9.8.7:0", "[::1]:0", "127.0.0.1:0", "localhost:0"]


@pytest.mark.parametrize("bind", BINDS)
async def test_a_foreign_host_or_origin_is_refused_on_every_loopback_address(
        workspace, home, bind):
    async with trio.open_nursery() as nursery:
        with trio.fail_after(60):
            addr, port = await _serve(nursery, workspace, home, bind)
            name = "localhost" if bind.startswith("localhost") else (
                f"[{addr}]" if ":" in addr else addr)
            own = f"{name}:{port}"
            # the server's own name: served
            assert await _status(addr, port, [("Host", own)]) == 200
            assert await _status(addr, port, [("Host", f"localhost:{port}")]) == 200
            assert await _status(addr, port, [("Host", own), ("Origin", f"http://{own}")]) == 200
            # ... but the token still counts
            assert await _status(addr, port, [("Host", own)], token=None) == 401
            # foreign or wrong Host: 421
            for host in (f"evil.example:{port}", "evil.example", f"{name}:{port + 1}", name,
                         f"{name}.evil.example:{port}", f"localhost.evil.example:{port}",
                         f"{name}:{port}@evil.example", f"{name}:abc", "",
                         f"0x7f000001:{port}"):
                assert await _status(addr, port, [("Host", host)]) == 421, host
            # no Host, or two (HTTP/1.1 itself refuses those: 400)
            assert await _status(addr, port, []) in (400, 421)
            assert await _status(addr, port, [("Host", own), ("Host", "evil.example")]) in (
                400, 421)
            # foreign Origin with the right Host: 403
            for origin in ("http://evil.example", f"http://evil.example:{port}", "null",
                           f"https://{own}", f"http://{name}:{port + 1}", f"{own}",
                           f"http://{own}.evil.example", "file://"):
                assert await _status(addr, port, [("Host", own), ("Origin", origin)]) == 403, \
                    origin
        nursery.cancel_scope.cancel()


def test_a_non_loopback_bind_still_needs_allow_remote(workspace, home):
    for bind in ("0.0.0.0:0", "[::]:0", "10.1.2.3:0", "127.1:0"):
        proc = subprocess.run([*NYZ, "mcp", "serve", "--http", bind], cwd=workspace,
                              env=nyz_env(home), capture_output=True, text=True, check=False,
                              timeout=60)
        assert proc.returncode == 1 and "--allow-remote" in proc.stderr, bind
