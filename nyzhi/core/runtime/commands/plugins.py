"""``/plugin`` and ``/output-style``: the plugin verbs of ``nyz plugin`` and the project's
output style, in every front end (one registry).

``/plugin`` changes what the next session loads; the running one keeps what it started with
(its prompt and tools stay byte-identical for caching). Approving a plugin's programs here
needs the word: ``/plugin approve NAME`` lists what it runs, ``/plugin approve NAME yes``
approves. ``/output-style NAME`` writes ``outputStyle`` to ``.claude/settings.local.json``, as
Claude Code does, for the next session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nyzhi.core.runtime.commands.registry import BODY, ERROR, CommandHost, command

USAGE = ("/plugin list · install|uninstall|enable|disable|approve NAME[@MARKET] · "
         "marketplace add|list|remove|update SOURCE")
LATER = " (from the next session)"  # what a change to the plugins waits for


def plugin_text(arg: str, root: Path) -> tuple[str, str]:
    """(kind, text) for ``/plugin ARG`` (blocking: file reads, maybe a git clone)."""
    from nyzhi.core.runtime.plugins import store
    from nyzhi.core.runtime.plugins.manifest import PluginError

    words = arg.split()
    verb = words[0] if words else "list"
    rest = words[1:]
    try:
        if verb == "list":
            rows = [f"{i}  {'enabled' if e.get('enabled', True) else 'disabled'}  "
                    f"{'approved' if e.get('approved') == e.get('digest') else 'programs off'}"
                    for i, e in sorted(store.installed().items())]
            return BODY, "\n".join(rows) or "no plugins installed"
        if verb == "marketplace":
            return _marketplace_text(rest)
        if not rest:
            return ERROR, USAGE
        name = rest[0]
        if verb == "install":
            return _install_text(name, root)
        if verb == "approve":
            if rest[1:2] != ["yes"]:
                return _approval_question(name)
            ident, _runs = store.approve(name)
            return BODY, f"approved {ident}{LATER}"
        if verb == "uninstall":
            return BODY, f"uninstalled {store.uninstall(name)}{LATER}"
        if verb in ("enable", "disable"):
            return BODY, f"{verb}d {store.set_enabled(name, verb == 'enable')}{LATER}"
    except PluginError as exc:
        return ERROR, str(exc)
    return ERROR, USAGE


def _marketplace_text(rest: list[str]) -> tuple[str, str]:
    """``/plugin marketplace list|add|remove|update SOURCE``."""
    from nyzhi.core.runtime.plugins import store

    sub, target = (rest + ["list", ""])[:2] if rest else ("list", "")
    if sub == "list":
        return BODY, "\n".join(sorted(store.marketplaces())) or "no marketplaces"
    if sub == "add" and target:
        m = store.marketplace_add(target)
        return BODY, f"added {m.name}: " + ", ".join(e.name for e in m.plugins)
    if sub == "remove" and target:
        store.marketplace_remove(target)
        return BODY, f"removed {target}"
    if sub == "update" and target:
        changed = store.marketplace_update(target)
        return BODY, f"updated {target}" + "".join(
            f"\n{i}: changed, its programs are off until /plugin approve {i}"
            for i in changed)
    return ERROR, USAGE


def _install_text(name: str, root: Path) -> tuple[str, str]:
    """``/plugin install NAME``: installed, with what it would run (off until approved)."""
    from nyzhi.core.runtime.plugins import store

    plugin = store.install(name, workspace_root=root)
    runs = plugin.runs()
    text = f"installed {name}{LATER}"
    if runs:
        text += ("\nit runs (off until approved: /plugin approve " + name + " yes):\n"
                 + "\n".join(f"  {r}" for r in runs))
    return BODY, text


def _approval_question(name: str) -> tuple[str, str]:
    """``/plugin approve NAME`` without the word: what the plugin runs, and how to approve
    it (an approval needs ``yes``)."""
    from nyzhi.core.runtime.plugins import store
    from nyzhi.core.runtime.plugins.manifest import read_plugin

    entry = store.installed().get(name) or next(
        (e for i, e in store.installed().items() if i.partition("@")[0] == name),
        None)
    if entry is None:
        return ERROR, f"plugin {name!r} is not installed"
    runs = read_plugin(Path(entry["path"])).runs()
    return BODY, ("it runs:\n" + "\n".join(f"  {r}" for r in runs)
                  + f"\napprove with: /plugin approve {name} yes")


@command("plugin", "Claude Code plugins: /plugin list · install|approve NAME",
         needs_runtime=False)
async def _plugin(host: CommandHost, arg: str) -> None:
    import trio

    from nyzhi.config.workspace import find_root

    root = find_root(Path(host.cwd))
    kind, text = await trio.to_thread.run_sync(plugin_text, arg, root)
    host.show(kind, text)


def output_style_text(arg: str, root: Path) -> tuple[str, str]:
    from nyzhi.knowledge.output_styles import chosen_style, discover_styles

    styles = discover_styles(root)
    name = arg.strip()
    if not name:
        current = chosen_style(root)
        rows = [f"{'*' if current and current.name == n else ' '} {n}  {s.description}"
                for n, s in sorted(styles.items())]
        return BODY, "\n".join(["  default  nyz's own", *rows])
    if name != "default" and name not in styles:
        return ERROR, f"no output style {name!r}: " + ", ".join(["default", *sorted(styles)])
    _set_local(root, "outputStyle", name)
    return BODY, f"output style {name} (.claude/settings.local.json), from the next session"


def _set_local(root: Path, key: str, value: Any) -> None:
    from nyzhi.config.fsutil import atomic_write

    path = root / ".claude" / "settings.local.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    data[key] = value
    atomic_write(path, (json.dumps(data, indent=2) + "\n").encode(), dir_mode=0o755,
                 what="the Claude Code local settings")


@command("output-style", "the output style: /output-style lists · /output-style NAME",
         needs_runtime=False)
async def _output_style(host: CommandHost, arg: str) -> None:
    import trio

    from nyzhi.config.workspace import find_root

    root = find_root(Path(host.cwd))
    kind, text = await trio.to_thread.run_sync(output_style_text, arg, root)
    host.show(kind, text)
