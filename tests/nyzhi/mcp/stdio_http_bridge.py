"""The smallest streamable-HTTP front for a stdio MCP server, so that the conformance suite's
server scenarios (which only speak HTTP) reach ``nyz mcp serve`` over stdio.

It does not speak MCP itself: each ``initialize`` POST starts a new ``nyz mcp serve`` child (one
MCP session, named by a fresh ``Mcp-Session-Id``), and every later POST of that session is
written to the child's stdin as one line, byte for byte; a request's answer is the child's
line with the same ``id``, sent back as ``application/json``. Notifications and responses get
202. GET is 405 (the spec lets a server offer no GET stream; nyz mcp serve sends nothing
unasked), DELETE ends the session's child. So what the suite judges is nyz's own JSON-RPC.

Usage: ``python stdio_http_bridge.py -- CMD ARGS...``; prints ``listening on URL`` once bound.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import uuid
from typing import Any

import trio

MAX_BODY = 4 << 20


class Session:
    """One ``nyz mcp serve`` child and the answers it has sent, by request id."""

    def __init__(self, proc: trio.Process) -> None:
        self.proc = proc
        self.waiting: dict[Any, trio.Event] = {}
        self.answers: dict[Any, bytes] = {}
        self.writing = trio.Lock()  # concurrent POSTs: one line at a time on stdin

    async def write(self, body: bytes) -> None:
        async with self.writing:
            await self.proc.stdin.send_all(body.rstrip(b"\n") + b"\n")

    async def read(self) -> None:
        buffer = b""
        async for chunk in self.proc.stdout:
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                try:
                    key = json.dumps(json.loads(line).get("id"))
                except (ValueError, AttributeError):
                    continue
                if key in self.waiting:
                    self.answers[key] = line
                    self.waiting.pop(key).set()
        for event in self.waiting.values():  # the child ended: nobody waits forever
            event.set()

    async def ask(self, body: bytes, request_id: Any) -> bytes | None:
        key = json.dumps(request_id)
        self.waiting[key] = done = trio.Event()
        await self.write(body)
        await done.wait()
        return self.answers.pop(key, None)


def bridge_app(command: list[str], nursery: trio.Nursery):
    sessions: dict[str, Session] = {}

    async def answer(send: Any, status: int, body: bytes = b"", headers=()) -> None:
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), *headers]})
        await send({"type": "http.response.body", "body": body})

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        headers = dict(scope["headers"])
        sid = headers.get(b"mcp-session-id", b"").decode("latin-1")
        if scope["method"] == "GET":
            return await answer(send, 405)
        if scope["method"] == "DELETE":
            session = sessions.pop(sid, None)
            if session is not None:
                session.proc.kill()
            return await answer(send, 200 if session else 404)
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_BODY:
                return await answer(send, 413)
            if not message.get("more_body"):
                break
        try:
            msg = json.loads(body)
        except ValueError:
            return await answer(send, 400, b'{"jsonrpc":"2.0","id":null,"error":'
                                           b'{"code":-32700,"message":"Parse error"}}')
        if isinstance(msg, dict) and msg.get("method") == "initialize":
            proc = await trio.lowlevel.open_process(command, stdin=subprocess.PIPE,
                                                    stdout=subprocess.PIPE)
            sid = uuid.uuid4().hex
            sessions[sid] = Session(proc)
            nursery.start_soon(sessions[sid].read)
        session = sessions.get(sid)
        if session is None:
            return await answer(send, 404 if sid else 400)
        own = [(b"mcp-session-id", sid.encode())]
        if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
            await session.write(body)
            return await answer(send, 202, headers=own)
        reply = await session.ask(body, msg["id"])
        if reply is None:
            return await answer(send, 502)
        await answer(send, 200, reply, headers=own)

    return app


async def main(command: list[str]) -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = config.errorlog = None
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(functools.partial(serve, bridge_app(command, nursery),
                                                      config))
        print(f"listening on {bound[0]}", flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[sys.argv.index("--") + 1:])
