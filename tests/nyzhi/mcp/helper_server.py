"""A small scripted MCP server for the tests and the benchmark, built on the SDK's MCPServer.

    python helper_server.py [--delay S] [--log FILE] [--http PORT --require-header K=V]

Tools: ``echo(text)``; ``wait(seconds)`` (appends "cancelled" to --log when the client
cancels it); with ``--elicit``, ``book()`` and ``sign_up()`` ask the user through elicitation (a form with
defaults for every field; one with a required field without a default) and say what came back. ``--delay`` sleeps before serving (a slow server); ``--http`` serves streamable
HTTP on 127.0.0.1 under hypercorn's trio worker and answers 401 without the header.
"""

from __future__ import annotations

import argparse
import functools
import json
from typing import Annotated

import trio
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Elicit, Resolve
from pydantic import BaseModel, Field


class Booking(BaseModel):
    table_for: int = Field(default=2, description="how many people")
    time: str = Field(default="19:00")
    terrace: bool = Field(default=False)


class SignUp(BaseModel):
    email: str = Field(description="where to send the confirmation")
    newsletter: bool = Field(default=True)


def ask_booking() -> Elicit[Booking]:
    return Elicit("Book a table?", Booking)


def ask_sign_up() -> Elicit[SignUp]:
    return Elicit("Sign up for the list?", SignUp)


def said(answer: ElicitationResult) -> str:
    """What the client answered, as the tool's text."""
    if answer.action == "accept":
        return f"accept {json.dumps(answer.data.model_dump(), sort_keys=True)}"
    return answer.action


def build(log: str | None, elicit: bool = False):
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

    if elicit:
        _elicitation_tools(server)

    @server.resource("helper://greeting")
    def greeting() -> str:
        return "hello from the helper"

    return server


def _elicitation_tools(server) -> None:
    @server.tool()
    async def book(answer: Annotated[ElicitationResult[Booking], Resolve(ask_booking)]) -> str:
        """Book a table (asks the user for the details)."""
        return said(answer)

    @server.tool()
    async def sign_up(answer: Annotated[ElicitationResult[SignUp], Resolve(ask_sign_up)]) -> str:
        """Sign up (asks the user for an email)."""
        return said(answer)


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
    parser.add_argument("--elicit", action="store_true", help="add book and sign_up")
    args = parser.parse_args()
    if args.delay:
        await trio.sleep(args.delay)
    server = build(args.log, args.elicit)
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
