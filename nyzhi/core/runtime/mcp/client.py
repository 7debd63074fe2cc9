"""Talking to one MCP server with the official SDK: connect, notice a drop, convert results.

Everything here imports ``mcp`` (0.6–1.2 s), so this module is only imported from inside a
server actor's background task, never at start-up.

A dropped connection must crash the server's actor so its supervisor restarts it. The SDK
only tells callers (pending requests fail with "Connection closed"), so the transport's
read stream is wrapped to set an event when it ends; the actor waits on that event.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

import trio

from nyzhi.config.mcp_sources import ServerEntry
from nyzhi.config.schema import McpStdioServer

CLIENT_NAME = "nyzhi"


class _WatchedRead:
    """A read stream that sets ``closed`` when the peer's side ends (EOF or error)."""

    def __init__(self, inner: Any, closed: trio.Event) -> None:
        self._inner = inner
        self._closed = closed
        self.last_context = None

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except BaseException as exc:
            if not isinstance(exc, trio.Cancelled):
                self._closed.set()
            raise
        self.last_context = getattr(self._inner, "last_context", None)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedRead:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def _watched(transport: Any, closed: trio.Event) -> AsyncIterator[Any]:
    async with transport as (read, write):
        yield _WatchedRead(read, closed), write


def _transport(entry: ServerEntry, errlog: IO[str], auth: Any = None) -> Any:
    server = entry.server
    if isinstance(server, McpStdioServer):
        from nyzhi.core.runtime.mcp.stdio import stdio_transport

        # not the SDK's stdio_client: the server must die with nyz (nyzhi.spawn)
        return stdio_transport(server, errlog)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    # The configured headers go with every request (auth tokens, API keys). Without a
    # configured Authorization header, OAuth: the stored login of ``nyz mcp login``, if the
    # server asks for one (``nyzhi.core.runtime.mcp.oauth``).
    if auth is None and not any(k.lower() == "authorization" for k in server.headers):
        from nyzhi.core.runtime.mcp.oauth import client_secret_of, provider_for

        auth = provider_for(entry.name, server.url, client_id=server.client_id,
                            client_secret=client_secret_of(server))
    http = create_mcp_http_client(headers=dict(server.headers), auth=auth)
    return _with_http_client(streamable_http_client(server.url, http_client=http), http)


@contextlib.asynccontextmanager
async def _with_http_client(transport: Any, http: Any) -> AsyncIterator[Any]:
    async with http, transport as streams:
        yield streams


def route_sdk_logs(log_dir: Path) -> None:
    """The SDK logs protocol noise (a server printing non-JSON, ...) through ``logging``;
    with no handler configured Python would print it over the user's terminal. Send it to
    ``log_dir/sdk.log`` instead (once per process)."""
    sdk = logging.getLogger("mcp")
    if any(getattr(h, "_nyzhi", False) for h in sdk.handlers):
        return
    log_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_dir / "sdk.log", encoding="utf-8", delay=True)
    handler._nyzhi = True  # type: ignore[attr-defined]
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    sdk.addHandler(handler)
    sdk.propagate = False


async def connect(stack: contextlib.AsyncExitStack, entry: ServerEntry, errlog: IO[str],
                  closed: trio.Event, elicit: Any = None, auth: Any = None) -> Any:
    """A connected ``mcp.Client`` for ``entry`` (closed with ``stack``); ``closed`` is set
    when the connection ends. ``elicit``: the server's elicitation callback
    (``nyzhi.core.runtime.mcp.elicit``); given, the client offers elicitation. ``auth``: an http
    server's OAuth provider (default: stored logins only, ``nyzhi.core.runtime.mcp.oauth``)."""
    from mcp import Client
    from mcp.types import Implementation

    from nyzhi import __version__

    client = Client(
        _watched(_transport(entry, errlog, auth), closed),
        client_info=Implementation(name=CLIENT_NAME, version=__version__),
        cache=None,
        elicitation_callback=elicit,
    )
    return await stack.enter_async_context(client)


async def list_all(fetch: Any, attr: str) -> list[Any]:
    """Every page of a paginated list call (``fetch(cursor=...)``)."""
    items: list[Any] = []
    cursor = None
    while True:
        page = await fetch(cursor=cursor)
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if not cursor:
            return items


def is_connection_error(exc: BaseException) -> bool:
    """Whether a failed request means the connection is gone (not a tool's own error)."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.error.code == CONNECTION_CLOSED
    return isinstance(exc, OSError | trio.BrokenResourceError | trio.ClosedResourceError) or (
        type(exc).__module__.startswith(("httpx", "httpcore", "anyio"))
    )


def content_text(content: list[Any], structured: Any = None) -> str:
    """The text a model reads for a list of MCP content blocks."""
    parts: list[str] = []
    for block in content or ():
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "image" or kind == "audio":
            size = len(block.data) * 3 // 4
            parts.append(f"[{kind}: {block.mime_type}, about {size} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {block.uri}" + (f" ({block.name})" if block.name else "") + "]")
        elif kind == "resource":
            res = block.resource
            text = getattr(res, "text", None)
            parts.append(text if text is not None else f"[resource: {res.uri} ({res.mime_type})]")
        else:
            parts.append(json.dumps(block.model_dump(mode="json", exclude_none=True)))
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)
