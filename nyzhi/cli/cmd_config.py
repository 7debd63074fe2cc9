"""``nyz config [show | get KEY | set KEY VALUE [--project|--local] | trust [--yes]]``.

Module-level imports are stdlib only so ``nyz --help`` stays fast; the config package is
imported inside the handlers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="show, get or set configuration values",
                       description="Without an action: show the merged configuration.")
    p.set_defaults(handler=run_show)
    actions = p.add_subparsers(dest="config_action", metavar="ACTION")
    show = actions.add_parser("show", help="print the merged config and where each value came from")
    show.set_defaults(handler=run_show)
    get = actions.add_parser("get", help="print one merged value (dotted key, e.g. agent.max_steps)")
    get.add_argument("key")
    get.set_defaults(handler=run_get)
    put = actions.add_parser("set", help="set a value in one layer (default: the global file)")
    put.add_argument("key")
    put.add_argument("value", help="a TOML literal (42, true, [\"a\"]) or plain text")
    where = put.add_mutually_exclusive_group()
    where.add_argument("--global", dest="layer", action="store_const", const="global",
                       help="the user file (default)")
    where.add_argument("--project", dest="layer", action="store_const", const="project",
                       help="<root>/.nyzhi/config.toml")
    where.add_argument("--local", dest="layer", action="store_const", const="local",
                       help="<root>/.nyzhi/config.local.toml (keep out of git)")
    put.set_defaults(handler=run_set, layer="global")
    trust = actions.add_parser(
        "trust", help="show the project's hooks, MCP servers and security settings, and approve "
                      "them (they are not used until approved, nor after they change)")
    trust.add_argument("--yes", action="store_true", help="approve without asking")
    trust.set_defaults(handler=run_trust)


def _fail(exc: Exception) -> int:
    print(f"nyz: {exc}", file=sys.stderr)
    return 1


def _warn(warnings: Sequence[object]) -> None:
    for warning in warnings:
        print(f"nyz: warning: {warning}", file=sys.stderr)


def run_show(args: argparse.Namespace) -> int:
    from nyzhi.config import ConfigError, load_config
    from nyzhi.config.convert import dotted
    from nyzhi.config.render import render

    try:
        loaded = load_config()
    except ConfigError as exc:
        return _fail(exc)
    _warn(loaded.warnings)
    paths = {layer.name: layer.path for layer in loaded.candidates}

    def source(path: tuple) -> str:
        label = loaded.source_of(dotted(path))
        if label == "default":
            return "default"
        return "from " + " + ".join(f"{name} ({paths[name]})" for name in label.split("+"))

    existing = {layer.name for layer in loaded.layers}
    print("# nyzhi configuration (merged: global < project < local)")
    for layer in loaded.candidates:
        state = "" if layer.name in existing else "  (not present)"
        print(f"# {layer.name}: {layer.path}{state}")
    print()
    sys.stdout.write(render(loaded.config, (), source))
    return 0


def run_trust(args: argparse.Namespace) -> int:
    """Show what of the project's configuration needs approval and record the user's yes."""
    import json

    import attrs

    from nyzhi.config import ConfigError, load_config
    from nyzhi.config.project_trust import approve, approve_mcp_json, check, pending_mcp_json
    from nyzhi.oserror import StorageError

    try:
        loaded = load_config()
        servers = pending_mcp_json(loaded.workspace.root)
    except ConfigError as exc:
        return _fail(exc)
    verdict = check(loaded)
    if servers:  # each .mcp.json server is approved on its own, here with the rest
        verdict = attrs.evolve(verdict, approved=False, parts={
            **verdict.parts, str(servers[0].file): {
                f"mcpServers.{s.name}": s.describe() for s in servers}})
    if not verdict.parts:
        print(f"nothing to approve: the project in {loaded.workspace.root} sets nothing that "
              "needs approval (hooks, MCP servers, nodes, hosts, environment, looser limits...)")
        return 0
    state = "approved" if verdict.approved else "NOT approved (new or changed)"
    print(f"# {loaded.workspace.root}: {state}")
    for file, parts in sorted(verdict.parts.items()):
        print(f"\n{file}:")
        for key, value in parts.items():
            print(f"  {key} = {json.dumps(value, ensure_ascii=False, default=str)}")
    if verdict.approved:
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            return _fail(ValueError("not approved: re-run on a terminal to answer, or with --yes"))
        try:
            answer = input("\nRun these hooks and servers and use these settings? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print("not approved")
            return 1
    try:
        approve(loaded, digest=verdict.digest)  # what was shown, not a later edit
        approve_mcp_json(loaded.workspace.root, servers)
    except StorageError as exc:
        return _fail(exc)
    print("approved (asked again if any of it changes)")
    return 0


def run_get(args: argparse.Namespace) -> int:
    import attrs

    from nyzhi.config import ConfigError, load_config
    from nyzhi.config.edit import lookup, parse_key
    from nyzhi.config.render import format_value, render

    try:
        parts = parse_key(args.key)
        loaded = load_config()
        value = lookup(loaded.config, parts)
    except ConfigError as exc:
        return _fail(exc)
    _warn(loaded.warnings)
    if value is None:
        print(f"nyz: {args.key} is not set", file=sys.stderr)
        return 1
    if attrs.has(type(value)) or (isinstance(value, dict) and value) or (
        isinstance(value, tuple) and value and attrs.has(type(value[0]))
    ):
        if isinstance(value, tuple):
            for item in value:
                sys.stdout.write(render(item, parts))
        elif isinstance(value, dict) and not attrs.has(type(next(iter(value.values())))):
            for k, v in value.items():
                print(f"{k} = {format_value(v, (*parts, k))}")
        else:
            sys.stdout.write(render(value, parts))
        return 0
    if isinstance(value, str):
        from nyzhi.config.secrets import is_secret_key, mask_secret

        print(mask_secret(value) if is_secret_key(parts) else value)
    else:
        print(format_value(value, parts))
    return 0


def run_set(args: argparse.Namespace) -> int:
    from nyzhi.config import ConfigError, detect_workspace, paths
    from nyzhi.config.edit import parse_key, set_value
    from nyzhi.config.secrets import is_secret_key

    workspace = detect_workspace()
    target = {
        "global": paths.global_config_path(),
        "project": workspace.project_config_path,
        "local": workspace.local_config_path,
    }[args.layer]
    try:
        parts = parse_key(args.key)
        # Global and local files may hold keys: create them private. Project files are shared.
        from nyzhi.config.project_trust import keeping_approval

        # the person's own edit: an approved project stays approved
        with keeping_approval(project=args.layer != "global"):
            set_value(target, args.key, args.value,
                      new_file_mode=0o644 if args.layer == "project" else 0o600)
    except ConfigError as exc:
        return _fail(exc)
    except OSError as exc:  # a full or read-only disk: StorageError names the file and why
        print(f"nyz: {exc}", file=sys.stderr)
        return 1
    secret = is_secret_key(parts)
    shown = "(hidden)" if secret else args.value
    print(f"set {args.key} = {shown} in {target}")
    if secret and args.layer == "project":
        print("warning: the project config is usually committed to git; prefer --local, "
              "an environment variable or `nyz login` for secrets", file=sys.stderr)
    return 0
