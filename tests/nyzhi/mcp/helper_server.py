"""A small scripted MCP server for the tests and the benchmark, built on the SDK's MCPServer.

    python helper_server.py [--delay S] [--log FILE] [--http PORT --require-header K=V]

Tools: ``echo(text)``; ``wait(seconds)`` (appends "cancelled" to --log when the client
cancels it). ``--delay`` sleeps before serving (a slow server); ``--http`` serves streamable
HTTP on 127.0.0.1 under hypercorn's trio worker and answers 401 without the header.
"""

from __future__ import annotations

import argparse
import functools
import json

import trio


def build(log: str | None):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("helper", instructions="A test helper: echo and wait.")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    async def wait(seconds: float) -> str:
        """Sleep for the given seconds."""
        if log:
            with open(log, "a") as fh:  # noqa: ASYNC230 - a tiny write: the test waits on it
                fh.write("started\n")
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            if log:
                with open(log, "a") as fh:  # noqa: ASYNC230 - a tiny write while cancelled
                    fh.write("cancelled\n")
            raise
        return "waited"

    @server.resource("helper://greeting")
    def greeting() -> str:
        return "hello from the helper"

    return server


def header_guard(app, name: str, value: str):
    want = (name.lower().encode(), value.encode())

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and want not in scope.get("headers", []):
            body = json.dumps({"error": f"missing {name}"}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return guarded


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--log")
    parser.add_argument("--http", type=int)
    parser.add_argument("--require-header")
    args = parser.parse_args()
    if args.delay:
        await trio.sleep(args.delay)
    server = build(args.log)
    if args.http is None:
        await server.run_stdio_async()
        return
    from hypercorn.config import Config
    from hypercorn.trio import serve

    app = server.streamable_http_app()
    if args.require_header:
        name, _, value = args.require_header.partition("=")
        app = header_guard(app, name, value)
    config = Config()
    config.bind = [f"127.0.0.1:{args.http}"]
    config.accesslog = None
    config.errorlog = None
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(serve, app, config))
        print("ready", flush=True)  # bound: clients can connect now


if __name__ == "__main__":
    trio.run(main)
