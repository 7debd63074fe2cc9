"""``nyz mcp serve``: nyz's built-in tools for other MCP clients, behind the same gates.

Each call runs through ``execute_calls`` with the gates an agent has (sandbox, deny rules,
trust, approval): with nobody to ask, a call that needs approval is refused unless
``--trust`` allows it, and the sandbox defaults to read-only. Large outputs are offloaded
to files as for an agent.

Over HTTP (streamable, served by hypercorn's trio worker) every request needs
``Authorization: Bearer TOKEN``; binding a non-loopback address needs ``--allow-remote``.
On a loopback address (all of 127.0.0.0/8, ::1, localhost) ``loopback_guard`` also refuses a
request whose ``Host`` or ``Origin`` is not that address and port: a web page whose DNS name
was rebound to the loopback address must not reach the tools through the user's browser. The
SDK does this only for 127.0.0.1, localhost and ::1 by name, so it is done here, for all.

What a client gets is chosen, not whatever the registry holds (``served_names``):

* every tool the session has, the deferred ones (``git_show``, the ``lsp_*`` tools,
  ``ast_search``...) included: a model in nyz finds those with ``tool_search``, but an MCP
  client lists tools itself and calls only what it was listed, so ``tool_search`` is not
  served;
* ``ask_user`` never: nobody sits at this process;
* the team tools only in a team: a client of ``nyz mcp serve`` is in none, so none of the
  nine (``send_team_message``, ``task_list``, ...) is offered;
* the five subagent tools (``spawn_agent``, ``send_input``, ``wait``, ``close_agent``,
  ``resume_agent``) only with ``--allow-subagents``, since each subagent runs on the
  configured model at the user's expense. With it the server opens the whole runtime (the
  subagent manager, its limits and budgets from ``[agent.agents]``, the provider) and serves
  the main agent's tools, so the client is that agent, spawning under ``/agents/main``.

A call of a tool that is not served is a JSON-RPC error (``-32602``, as the MCP spec's tools
page has it for an unknown tool), not a tool result with ``isError``.

Every result is redacted (``nyzhi.config.secrets.Redactor``: provider keys, secret-named config
values, auth.json) before it goes to the client, as it is before it goes to a model.
"""

from __future__ import annotations

import argparse
import functools
import hmac
import json
import secrets
import sys
import uuid
from pathlib import Path
from typing import Any

import trio

from nyzhi.loopback import is_loopback, loopback_refusal, security_headers, split_host

# Tools that need a person at the other end of *this* process.
# ``tool_search``: every tool is listed (below), so there is nothing for it to load.
NOT_SERVED = frozenset({"ask_user", "tool_search"})


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


def build_tooling(args: argparse.Namespace, cwd: Path) -> Any:
    from nyzhi.config.modes import SandboxLevel, TrustMode
    from nyzhi.config.project_trust import load_trusted
    from nyzhi.core.runtime.assembly import build_tooling as assemble
    from nyzhi.core.runtime.runtime import RuntimeOptions

    # With nobody to ask: nothing that needs approval, and a read-only sandbox, by default.
    trust = getattr(args, "trust", None) or TrustMode.OFF
    # The project's unapproved security settings and nodes are left out (project_trust).
    loaded, verdict = load_trusted(cwd, approve=getattr(args, "approve_project_config", False))
    sandbox = getattr(args, "sandbox", None) or SandboxLevel.READ_ONLY
    config = loaded.config.with_overrides(trust=trust, sandbox=sandbox)
    options = RuntimeOptions(cwd=cwd, trust=trust, sandbox=sandbox, interactive=False)
    return assemble(config, loaded.workspace, options, broker=None,
                    claude_allow=verdict.claude_allow)


def served_names(names: set[str], *, allow_subagents: bool, in_team: bool) -> set[str]:
    """Which of the registry's tools a client of ``nyz mcp serve`` gets (module docstring)."""
    from nyzhi.tools.builtin import agents, team

    withheld = set(NOT_SERVED)
    if not in_team:
        withheld |= {tool.name for tool in team.TOOLS}
    if not allow_subagents:
        withheld |= {tool.name for tool in agents.TOOLS}
    return names - withheld


def build_server(tooling: Any, *, allow_subagents: bool = False) -> Any:
    """A low-level SDK server listing and calling ``tooling``'s tools through its gates."""
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from nyzhi import __version__
    from nyzhi.tools.execution import ToolCallRequest, execute_calls

    registry = tooling.registry
    for tool in registry.hidden():  # the deferred tools too: a client lists what it calls
        registry.discover(tool.name)
    schemas = registry.schemas()
    names = served_names({s["name"] for s in schemas}, allow_subagents=allow_subagents,
                         in_team=bool(getattr(tooling.context, "team_name", None)))
    served = [s for s in schemas if s["name"] in names]

    async def list_tools(_ctx: Any, _params: Any) -> Any:
        return types.ListToolsResult(tools=[
            types.Tool(name=s["name"], description=s["description"], input_schema=s["parameters"])
            for s in served
        ])

    async def call_tool(_ctx: Any, params: Any) -> Any:
        if params.name not in names:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        request = ToolCallRequest(uuid.uuid4().hex[:12], params.name,
                                  dict(params.arguments or {}))
        [outcome] = await execute_calls([request], registry=registry, gates=tooling.gates,
                                        ctx=tooling.context)
        result = outcome.result
        # The way out to the MCP client: known secrets never pass (execute_calls redacted the
        # result already; this is the exit's own check, as the bus is for events).
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=tooling.redactor.redact(result.output))],
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


def loopback_guard(app: Any, host: str, port: list[int]) -> Any:
    """An ASGI wrapper for a loopback bind refusing what ``loopback_refusal`` refuses.
    ``port`` is a one-item list, filled in once the socket is bound (``--http HOST:0`` picks
    it then)."""

    shared = [(k.lower().encode(), v.encode()) for k, v in security_headers()]

    async def refuse(send: Any, status: int, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    async def guarded(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            # the one loopback header set (nyzhi.loopback) on every answer, the app's own
            # headers of the same names replaced
            if message.get("type") == "http.response.start":
                names = {k for k, _v in shared}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = {**message, "headers": [*kept, *shared]}
            await send(message)

        refused = loopback_refusal(host, port[0], scope.get("headers"))
        if refused is not None:
            await refuse(send_with_headers, *refused)
            return
        await app(scope, receive, send_with_headers)

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
    allow_subagents = bool(getattr(args, "allow_subagents", False))
    if not allow_subagents:
        return await _serve(build_server(build_tooling(args, cwd)), args, http)
    async with _runtime(args, cwd) as rt:
        return await _serve(build_server(rt.main_agent.tooling, allow_subagents=True),
                            args, http)


def _runtime(args: argparse.Namespace, cwd: Path) -> Any:
    """The runtime ``--allow-subagents`` serves from: the same gates as ``build_tooling``
    (nobody to ask; read-only sandbox by default), not saved as a session."""
    from nyzhi.config.modes import SandboxLevel, TrustMode
    from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime

    return open_runtime(RuntimeOptions(
        cwd=cwd, trust=getattr(args, "trust", None) or TrustMode.OFF,
        sandbox=getattr(args, "sandbox", None) or SandboxLevel.READ_ONLY,
        interactive=False, ephemeral=True))


async def _serve(server: Any, args: argparse.Namespace, http: tuple[str, int] | None) -> int:
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
    served_port = [port]
    if is_loopback(host):
        app = loopback_guard(app, host, served_port)
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(functools.partial(hypercorn_serve, app, config))
        url = (bound[0] if bound else f"http://{host}:{port}") + "/mcp"
        served_port[0] = split_host(url.split("://", 1)[1].split("/", 1)[0])[1] or port
        print(f"nyz mcp serve: listening on {url}", file=sys.stderr, flush=True)
        if generated:
            print(f"nyz mcp serve: bearer token {token}", file=sys.stderr, flush=True)
    return 0
