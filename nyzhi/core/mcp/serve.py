"""``nyz mcp serve``: nyz's built-in tools for other MCP clients, behind the same gates.

Each call runs through ``execute_calls`` with the gates an agent has (sandbox, deny rules,
trust, approval): with nobody to ask, a call that needs approval is refused unless
``--trust`` allows it, and the sandbox defaults to read-only. Large outputs are offloaded
to files as for an agent.

Over HTTP (streamable, served by hypercorn's trio worker) every request needs
``Authorization: Bearer TOKEN``; binding a non-loopback address needs ``--allow-remote``.
"""

from __future__ import annotations

import argparse
import functools
import hmac
import ipaddress
import json
import secrets
import sys
import uuid
from pathlib import Path
from typing import Any

import trio

# Tools that need a person at the other end of *this* process.
NOT_SERVED = frozenset({"ask_user"})
LOOPBACK_NAMES = ("localhost",)


class ServeError(Exception):
    """Bad ``nyz mcp serve`` options; the message says what to change."""


def parse_http(value: str) -> tuple[str, int]:
    """``[HOST:]PORT`` -> (host, port); the host defaults to 127.0.0.1."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise ServeError(f"--http {value!r}: expected [HOST:]PORT with a numeric port") from None
    if not 0 <= number <= 65535:
        raise ServeError(f"--http {value!r}: the port must be between 0 and 65535")
    return host, number


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_tooling(args: argparse.Namespace, cwd: Path) -> Any:
    from nyzhi.config.modes import SandboxLevel, TrustMode
    from nyzhi.config.project_trust import load_trusted
    from nyzhi.core.assembly import build_tooling as assemble
    from nyzhi.core.runtime import RuntimeOptions

    # With nobody to ask: nothing that needs approval, and a read-only sandbox, by default.
    trust = getattr(args, "trust", None) or TrustMode.OFF
    # The project's unapproved security settings and nodes are left out (project_trust).
    loaded, _verdict = load_trusted(cwd, trust_full=trust == TrustMode.FULL)
    sandbox = getattr(args, "sandbox", None) or SandboxLevel.READ_ONLY
    config = loaded.config.with_overrides(trust=trust, sandbox=sandbox)
    options = RuntimeOptions(cwd=cwd, trust=trust, sandbox=sandbox, interactive=False)
    return assemble(config, loaded.workspace, options, broker=None)


def build_server(tooling: Any) -> Any:
    """A low-level SDK server listing and calling ``tooling``'s tools through its gates."""
    from mcp import types
    from mcp.server.lowlevel import Server

    from nyzhi import __version__
    from nyzhi.tools.execution import ToolCallRequest, execute_calls

    registry = tooling.registry
    served = [s for s in registry.schemas() if s["name"] not in NOT_SERVED]
    names = {s["name"] for s in served}

    async def list_tools(_ctx: Any, _params: Any) -> Any:
        return types.ListToolsResult(tools=[
            types.Tool(name=s["name"], description=s["description"], input_schema=s["parameters"])
            for s in served
        ])

    async def call_tool(_ctx: Any, params: Any) -> Any:
        if params.name not in names:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Unknown tool `{params.name}`.")],
                is_error=True)
        request = ToolCallRequest(uuid.uuid4().hex[:12], params.name,
                                  dict(params.arguments or {}))
        [outcome] = await execute_calls([request], registry=registry, gates=tooling.gates,
                                        ctx=tooling.context)
        result = outcome.result
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.output)],
            is_error=result.is_error,
        )

    return Server("nyzhi", version=__version__,
                  instructions="nyz's coding tools (files, search, git, shell), gated by "
                               "the trust mode and sandbox this server was started with.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


def bearer_guard(app: Any, token: str) -> Any:
    """An ASGI wrapper answering 401 unless ``Authorization: Bearer <token>`` is sent."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                body = json.dumps({"error": "missing or wrong bearer token"}).encode()
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="nyz mcp serve"'),
                ]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


async def serve(args: argparse.Namespace, cwd: Path | None = None) -> int:
    cwd = cwd or Path.cwd()
    http = parse_http(args.http) if args.http else None
    if http and not is_loopback(http[0]) and not args.allow_remote:
        raise ServeError(f"--http {args.http}: {http[0]} is not a loopback address; pass "
                         "--allow-remote to serve other machines (the bearer token is then "
                         "all that protects your files)")
    if args.token is not None and not args.token.strip():
        raise ServeError("--token must not be empty")
    tooling = build_tooling(args, cwd)
    server = build_server(tooling)
    if http is None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return 0
    return await _serve_http(server, http, args.token or secrets.token_urlsafe(24),
                             generated=args.token is None)


async def _serve_http(server: Any, http: tuple[str, int], token: str, *, generated: bool) -> int:
    from hypercorn.config import Config
    from hypercorn.trio import serve as hypercorn_serve

    host, port = http
    app = bearer_guard(server.streamable_http_app(host=host), token)
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(functools.partial(hypercorn_serve, app, config))
        url = (bound[0] if bound else f"http://{host}:{port}") + "/mcp"
        print(f"nyz mcp serve: listening on {url}", file=sys.stderr, flush=True)
        if generated:
            print(f"nyz mcp serve: bearer token {token}", file=sys.stderr, flush=True)
    return 0
