"""``nyz mcp add | list | remove | login | logout | serve``: manage MCP servers, and serve nyz's own tools.

Module-level imports are stdlib only (``nyz --help`` must not load the 1 s ``mcp`` SDK);
handlers import what they need.
"""

from __future__ import annotations

import argparse
import sys

LIST_TIMEOUT = 20.0


def register(sub: argparse._SubParsersAction) -> None:
    from nyzhi.cli.main import _trust

    p = sub.add_parser("mcp", help="manage MCP servers, or serve nyz's tools over MCP")
    p.set_defaults(handler=lambda args: (p.print_help(), 0)[1])
    actions = p.add_subparsers(dest="mcp_action", metavar="ACTION")

    add = actions.add_parser(
        "add", help="add a server to the config",
        usage="nyz mcp add NAME [--scope project|global] "
              "(--url URL [--header K:V]... | [--env K=V]... -- CMD [ARGS...])",
    )
    add.add_argument("name")
    _add_options(add)
    # REMAINDER takes everything after NAME; run_add parses the options in it up to "--".
    add.add_argument("command", nargs=argparse.REMAINDER,
                     help="after --: the stdio server's command and its arguments")
    add.set_defaults(handler=run_add)

    ls = actions.add_parser("list", help="connect to each server and show its status")
    ls.add_argument("--timeout", type=float, default=LIST_TIMEOUT,
                    help=f"seconds to wait for servers to connect (default {LIST_TIMEOUT:g})")
    ls.add_argument("-y", "--trust", type=_trust, default=argparse.SUPPRESS,
                    help="accepted; a trust mode approves tool calls, never project servers "
                    "(see --approve-project-config)")
    ls.add_argument("--approve-project-config", action="store_true",
                    help="start the project's servers without asking, as approved for this run")
    ls.set_defaults(handler=run_list)

    rm = actions.add_parser("remove", help="remove a server from the config")
    rm.add_argument("name")
    rm.add_argument("--scope", choices=("project", "global"),
                    help="which file (default: the project file, else the global one)")
    rm.set_defaults(handler=run_remove)

    login = actions.add_parser("login", help="log in to an OAuth-protected http server "
                               "(opens the authorization page in your browser)")
    login.add_argument("name")
    login.set_defaults(handler=run_login)
    logout = actions.add_parser("logout", help="forget a server's stored OAuth login")
    logout.add_argument("name")
    logout.set_defaults(handler=run_logout)
    _register_serve(actions)


def _register_serve(actions: argparse._SubParsersAction) -> None:
    """``nyz mcp serve``'s options: the same gates and sandbox an agent has."""
    from nyzhi.cli.cmd_run import _sandbox
    from nyzhi.cli.main import _trust

    serve = actions.add_parser(
        "serve", help="expose nyz's tools to other MCP clients (stdio, or --http)",
        description="Serves nyz's built-in tools through the same gates as an agent: calls "
                    "that need approval are refused unless --trust allows them, and the "
                    "sandbox (default read-only) applies. Not served: ask_user, the team "
                    "tools (a client is in no team), and the subagent tools unless "
                    "--allow-subagents.",
    )
    # SUPPRESS: a subparser default would overwrite `nyz -y full mcp serve`'s value.
    serve.add_argument("--trust", "-y", type=_trust, default=argparse.SUPPRESS,
                       help="trust mode for calls (default off: read-only tools only)")
    serve.add_argument("--sandbox", type=_sandbox, default=argparse.SUPPRESS,
                       help="read-only (default), workspace-write or full-access")
    serve.add_argument("--http", metavar="[HOST:]PORT",
                       help="serve streamable HTTP instead of stdio (default host 127.0.0.1)")
    serve.add_argument("--token", help="the bearer token HTTP clients must send "
                       "(default: a random one, printed on stderr)")
    serve.add_argument("--allow-remote", action="store_true",
                       help="allow --http on a non-loopback address")
    serve.add_argument("--allow-subagents", action="store_true",
                       help="also serve spawn_agent, send_input, wait, close_agent and "
                            "resume_agent (subagents run on the configured model, at your "
                            "expense)")
    serve.set_defaults(handler=run_serve)


def _add_options(p: argparse.ArgumentParser, default: object = None) -> None:
    d = {} if default is None else {"default": default}
    p.add_argument("--scope", choices=("project", "global"),
                   help="project: <root>/.nyzhi/config.toml (default); global: the user file",
                   **({"default": "project"} if default is None else d))
    p.add_argument("--url", help="a streamable HTTP server's URL", **d)
    p.add_argument("--header", action="append", metavar="K:V",
                   help="an HTTP header sent with every request (repeatable)",
                   **({"default": []} if default is None else d))
    p.add_argument("--env", action="append", metavar="K=V",
                   help="an environment variable for a stdio server (repeatable)",
                   **({"default": []} if default is None else d))


def _split_add(args: argparse.Namespace) -> list[str]:
    """Options given after NAME (they land in the remainder) are parsed here; what follows
    ``--`` is the command."""
    rest = list(args.command or [])
    if "--" in rest:
        opts, command = rest[: rest.index("--")], rest[rest.index("--") + 1 :]
    elif rest and rest[0].startswith("-"):
        opts, command = rest, []
    else:  # argparse already dropped a "--" right after NAME
        opts, command = [], rest
    late = argparse.ArgumentParser(prog="nyz mcp add", add_help=False)
    _add_options(late, default=argparse.SUPPRESS)
    parsed, unknown = late.parse_known_args(opts)
    if unknown:
        raise ValueError(f"unexpected {' '.join(unknown)!r}: put the server command after --, "
                         "as in `nyz mcp add NAME -- npx -y some-server`")
    for key, value in vars(parsed).items():
        if isinstance(value, list):
            value = [*getattr(args, key), *value]
        setattr(args, key, value)
    return command


def _fail(message: object) -> int:
    print(f"nyz: {message}", file=sys.stderr)
    return 1


def _target(scope: str):
    from nyzhi.config import load_config, paths

    if scope == "global":
        return paths.global_config_path()
    return load_config().workspace.project_config_path


def run_add(args: argparse.Namespace) -> int:
    from nyzhi.config import ConfigError
    from nyzhi.config.edit import set_table

    try:
        command = _split_add(args)
    except ValueError as exc:
        return _fail(exc)
    if bool(args.url) == bool(command):
        return _fail("nyz mcp add: give either --url URL or -- COMMAND [ARGS...]")
    if not _valid_name(args.name):
        return _fail(f"invalid server name {args.name!r}: use letters, digits, '_', '-' or '.'")
    if args.url:
        if args.env:
            return _fail("nyz mcp add: --env is for stdio servers (-- COMMAND)")
        headers = {}
        for item in args.header:
            key, sep, value = item.partition(":")
            if not sep or not key.strip():
                return _fail(f"--header {item!r}: expected NAME:VALUE")
            headers[key.strip()] = value.strip()
        table: dict = {"url": args.url}
        if headers:
            table["headers"] = headers
    else:
        if args.header:
            return _fail("nyz mcp add: --header is for HTTP servers (--url)")
        env = {}
        for item in args.env:
            key, sep, value = item.partition("=")
            if not sep or not key:
                return _fail(f"--env {item!r}: expected NAME=VALUE")
            env[key] = value
        table = {"command": command[0], "args": command[1:]}
        if env:
            table["env"] = env
    from nyzhi.config.project_trust import keeping_approval

    try:
        path = _target(args.scope)
        # the person's own addition: no new question for it
        with keeping_approval(project=args.scope != "global"):
            replaced = set_table(path, ("mcp", "servers", args.name), table)
    except ConfigError as exc:
        return _fail(exc)
    verb = "replaced" if replaced else "added"
    print(f"{verb} MCP server {args.name!r} in {path}")
    return 0


def _valid_name(name: str) -> bool:
    import re

    return re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name) is not None


def run_remove(args: argparse.Namespace) -> int:
    from nyzhi.config import ConfigError, load_config
    from nyzhi.config.edit import remove_key
    from nyzhi.config.mcp_sources import read_mcp_json
    from nyzhi.config.project_trust import keeping_approval

    try:
        scopes = [args.scope] if args.scope else ["project", "global"]
        for scope in scopes:
            path = _target(scope)
            with keeping_approval(project=scope == "project"):
                removed = remove_key(path, ("mcp", "servers", args.name))
            if removed:
                print(f"removed MCP server {args.name!r} from {path}")
                return 0
        root = load_config().workspace.root
        if any(e.name == args.name for e in read_mcp_json(root)):
            return _fail(f"MCP server {args.name!r} is declared in {root / '.mcp.json'}: "
                         "edit that file to remove it")
    except ConfigError as exc:
        return _fail(exc)
    where = " or ".join(str(_target(s)) for s in scopes)
    return _fail(f"no MCP server named {args.name!r} in {where}")


def run_list(args: argparse.Namespace) -> int:
    import trio

    from nyzhi.config import ConfigError

    try:
        return trio.run(_list, args)
    except ConfigError as exc:
        return _fail(exc)


async def _ask_on_terminal(entry) -> bool:
    import trio

    if not sys.stdin.isatty():
        return False
    question = (f"Start the project MCP server {entry.name!r} from {entry.file}?\n"
                f"  {entry.describe()}\n[y/N] ")

    def ask() -> str:
        return input(question)

    try:
        answer = await trio.to_thread.run_sync(ask)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


async def _list(args: argparse.Namespace) -> int:
    import os

    import actors
    from nyzhi.config.mcp_sources import declared_servers
    from nyzhi.config.project_trust import load_trusted
    from nyzhi.core.runtime.mcp import McpPool
    from nyzhi.tools.registry import ToolRegistry

    approve = getattr(args, "approve_project_config", False)
    # a project's unapproved [mcp.servers] are left out (each .mcp.json one is asked below)
    loaded, verdict = load_trusted(None, approve=approve)
    for line in verdict.lines:
        print(f"nyz: {line}", file=sys.stderr)
    entries = declared_servers(loaded.config, loaded.workspace.root, os.environ)
    if not entries:
        print("no MCP servers configured (add one with `nyz mcp add NAME -- COMMAND` or "
              "`nyz mcp add NAME --url URL`)")
        return 0
    async with actors.open_system(name="nyz-mcp-list") as system:
        pool = await McpPool.open(
            system, ToolRegistry(), entries, root=loaded.workspace.root,
            startup_timeout=args.timeout, ask_trust=_ask_on_terminal,
            trust_all=approve or loaded.config.agent.trust.approve_project_config,
        )
        await pool.wait_started(args.timeout)
        statuses = pool.statuses()
        await system.shutdown()
    width = max(len(s.name) for s in statuses)
    for s in statuses:
        detail = s.target if s.status == "connected" else (s.reason or s.target)
        tools = f"{s.tools} tools" if s.status == "connected" else "-"
        source = "" if s.source == "config" else " (.mcp.json)"
        print(f"{s.name:<{width}}  {s.status:<11}  {tools:<9}  {detail}{source}")
    return 0


def run_login(args: argparse.Namespace) -> int:
    import trio

    from nyzhi.config import ConfigError
    from nyzhi.core.runtime.mcp import login_command

    try:
        ok, line = trio.run(lambda: login_command(args.name, say=lambda t: print(t, file=sys.stderr)))
    except ConfigError as exc:
        return _fail(exc)
    if not ok:
        return _fail(line)
    print(line)
    return 0


def run_logout(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.mcp import logout

    print(f"logged out of {args.name!r}" if logout(args.name)
          else f"no stored login for {args.name!r}")
    return 0


def run_serve(args: argparse.Namespace) -> int:
    import trio

    from nyzhi.core.runtime.mcp.serve import ServeError, serve

    try:
        return trio.run(serve, args)
    except ServeError as exc:
        return _fail(exc)
