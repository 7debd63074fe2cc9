"""``nyz plugin …``: Claude Code plugins and marketplaces (``nyzhi.core.runtime.plugins``).

``marketplace add|list|remove|update SOURCE``; ``install|uninstall|enable|disable NAME[@MARKET]``,
``approve NAME[@MARKET]`` (let its hooks and MCP servers run, as its files are now) and
``list``. Installing shows what the plugin runs and asks before approving it (``--yes``
approves without asking; headless without ``--yes``, its programs stay off).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    for p in (sub.add_parser("plugin", aliases=["plugins"],
                             help="Claude Code plugins and marketplaces"),):
        p.set_defaults(handler=lambda args, p=p: (p.print_help(), 0)[1])
        verbs = p.add_subparsers(dest="plugin_action", metavar="ACTION")
        market = verbs.add_parser("marketplace", help="add, list, remove or update marketplaces")
        market.set_defaults(handler=lambda args, m=market: (m.print_help(), 0)[1])
        mverbs = market.add_subparsers(dest="market_action", metavar="ACTION")
        for verb, helptext in (("add", "add a marketplace: a directory, git URL or owner/name"),
                               ("remove", "forget a marketplace and uninstall its plugins"),
                               ("update", "fetch a marketplace again and reinstall its plugins")):
            v = mverbs.add_parser(verb, help=helptext)
            v.add_argument("source", metavar="SOURCE" if verb == "add" else "NAME")
            v.set_defaults(handler=run_market, verb=verb)
        mverbs.add_parser("list", help="the added marketplaces").set_defaults(
            handler=run_market, verb="list", source="")
        for verb, helptext in (("install", "install a plugin (shows what it runs)"),
                               ("uninstall", "remove a plugin and its files"),
                               ("enable", "turn an installed plugin on"),
                               ("disable", "turn an installed plugin off"),
                               ("approve", "let a plugin's hooks and MCP servers run")):
            v = verbs.add_parser(verb, help=helptext)
            v.add_argument("name", metavar="NAME[@MARKETPLACE]")
            if verb in ("install", "approve"):
                v.add_argument("--yes", action="store_true",
                               help="approve its hooks and MCP servers without asking")
            v.set_defaults(handler=run_plugin, verb=verb)
        verbs.add_parser("list", help="installed plugins").set_defaults(
            handler=run_plugin, verb="list", name="")


def _confirm(runs: list[str], yes: bool) -> bool:
    if not runs:
        return False
    print("it runs these programs (hooks and MCP servers):")
    for line in runs:
        print(f"  {line}")
    if yes:
        return True
    if not sys.stdin.isatty():
        print("not approved (no terminal to ask; approve with --yes): they stay off")
        return False
    answer = input("allow them to run? [y/N] ").strip().lower()
    return answer in ("y", "yes")


def run_market(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.plugins import store
    from nyzhi.core.runtime.plugins.manifest import PluginError

    try:
        if args.verb == "add":
            market = store.marketplace_add(args.source)
            print(f"added marketplace {market.name} ({len(market.plugins)} plugins): "
                  + ", ".join(e.name for e in market.plugins))
        elif args.verb == "list":
            for name, record in sorted(store.marketplaces().items()):
                src = record.get("source", {})
                print(f"{name}\t{src.get('url') or src.get('path', '')}")
        elif args.verb == "remove":
            store.marketplace_remove(args.source)
            print(f"removed marketplace {args.source}")
        else:
            changed = store.marketplace_update(args.source)
            print(f"updated marketplace {args.source}")
            for ident in changed:
                print(f"{ident} changed: its hooks and MCP servers are off until "
                      f"`nyz plugin approve {ident}`")
    except PluginError as exc:
        print(f"nyz plugin marketplace {args.verb}: {exc}", file=sys.stderr)
        return 1
    return 0


def run_plugin(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.plugins import store
    from nyzhi.core.runtime.plugins.manifest import PluginError

    try:
        if args.verb == "install":
            from nyzhi.config.workspace import find_root

            plugin = store.install(args.name, workspace_root=find_root(Path.cwd()))
            ident = next(i for i, e in store.installed().items()
                         if e.get("path") == str(plugin.root))
            parts = ", ".join(plugin.text_parts()) or "nothing to read"
            print(f"installed {ident} ({parts})")
            if _confirm(plugin.runs(), args.yes):
                store.approve(ident)
                print("approved: its hooks and MCP servers run from the next session")
        elif args.verb == "approve":
            ident, runs = store.approve(args.name) if args.yes else (args.name, [])
            if not args.yes:
                entry = store.installed().get(args.name) or {}
                from nyzhi.core.runtime.plugins.manifest import read_plugin

                path = entry.get("path") or ""
                runs = read_plugin(Path(path)).runs() if path else []
                if not _confirm(runs or ["(nothing)"], False):
                    return 1
                ident, runs = store.approve(args.name)
            print(f"approved {ident}")
        elif args.verb == "uninstall":
            print(f"uninstalled {store.uninstall(args.name)}")
        elif args.verb in ("enable", "disable"):
            ident = store.set_enabled(args.name, args.verb == "enable")
            print(f"{args.verb}d {ident}")
        else:
            for ident, entry in sorted(store.installed().items()):
                state = "enabled" if entry.get("enabled", True) else "disabled"
                trusted = ("approved" if entry.get("approved") == entry.get("digest")
                           else "programs not approved")
                print(f"{ident}\t{entry.get('version') or '-'}\t{state}\t{trusted}")
    except PluginError as exc:
        print(f"nyz plugin {args.verb}: {exc}", file=sys.stderr)
        return 1
    return 0
