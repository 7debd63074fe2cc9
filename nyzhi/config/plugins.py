"""Installed Claude Code plugins: where they are and which are on, read one way by every user
of a plugin's parts (commands and skills in ``nyzhi.knowledge``, agents, hooks and MCP
servers in ``nyzhi.core``). Installing and fetching is ``nyzhi.core.runtime.plugins``.

Layout, under ``data_dir()/plugins`` (``$XDG_DATA_HOME/nyzhi/plugins``):

* ``state.json``: ``{"marketplaces": {NAME: {"source": ..., "path": DIR}}, "plugins":
  {"NAME@MARKETPLACE": {"path": DIR, "enabled": bool, "digest": HEX, "approved": HEX}}}``;
* ``marketplaces/NAME``: a git marketplace's clone (a local one is used where it is);
* ``installed/MARKETPLACE/NAME``: each installed plugin's files.

Which plugins are on: those installed and ``enabled``; a project's ``.claude/settings.json``
``enabledPlugins`` (``{"name@marketplace": true|false}``) turns an installed plugin on or off
for that project (``settings.local.json`` wins). Its text (commands, agents, skills, output
styles) loads at once; its hooks and MCP servers run programs, so they are used only while
``approved`` equals the plugin's ``digest`` (``nyz plugin approve``), never because of a
trust mode.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nyzhi import records
from nyzhi.config import paths

STATE_FILE = "state.json"
MAX_STATE_BYTES = 1 << 20


def plugins_dir(env: Mapping[str, str] | None = None) -> Path:
    return paths.data_dir(env) / "plugins"


def state_path(env: Mapping[str, str] | None = None) -> Path:
    return plugins_dir(env) / STATE_FILE


@records.frozen
class ActivePlugin:
    """A plugin that is on for a workspace: ``ident`` ``name@marketplace``, its files at
    ``root``, and the digest its hooks and MCP servers were approved at (``approved``; ""
    for none). Whoever runs them compares it with the digest of the files as they are now
    (``nyzhi.core.runtime.plugins.parts``): a changed file asks again."""

    name: str
    marketplace: str
    root: Path
    approved: str = ""
    # On only because the project's enabledPlugins says so (you disabled it): its programs
    # then also need the project approved (nyz config trust), as any project setting that
    # runs programs does.
    by_project: bool = False

    @property
    def ident(self) -> str:
        return f"{self.name}@{self.marketplace}"


def read_state(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The state file's object (``{}`` parts when missing or unreadable: no plugins)."""
    path = state_path(env)
    try:
        if path.stat().st_size > MAX_STATE_BYTES:
            return {"marketplaces": {}, "plugins": {}}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    for key in ("marketplaces", "plugins"):
        if not isinstance(data.get(key), dict):
            data[key] = {}
    return data


def project_enabled(workspace_root: Path | str | None) -> dict[str, bool]:
    """``enabledPlugins`` of the project's Claude Code settings (local file wins)."""
    if workspace_root is None:
        return {}
    from nyzhi.config.claude_settings import read_settings

    out: dict[str, bool] = {}
    files, _notes = read_settings(workspace_root)  # its notes are said by the hooks' reader
    for settings in files:
        data = settings.data if isinstance(settings.data, dict) else {}
        enabled = data.get("enabledPlugins")
        if isinstance(enabled, dict):
            out.update({k: v for k, v in enabled.items()
                        if isinstance(k, str) and isinstance(v, bool)})
    return out


def project_marketplaces(workspace_root: Path | str | None) -> dict[str, Any]:
    """``extraKnownMarketplaces`` of the project's Claude Code settings: name -> its
    ``source`` object (``{"source": "github", "repo"}``, ``"git"``/``"url"``, ``"directory"``)."""
    if workspace_root is None:
        return {}
    from nyzhi.config.claude_settings import read_settings

    out: dict[str, Any] = {}
    for settings in read_settings(workspace_root)[0]:
        data = settings.data if isinstance(settings.data, dict) else {}
        known = data.get("extraKnownMarketplaces")
        if isinstance(known, dict):
            out.update({k: v["source"] for k, v in known.items()
                        if isinstance(v, dict) and "source" in v})
    return out


def missing_plugins(workspace_root: Path | str | None,
                    env: Mapping[str, str] | None = None) -> list[str]:
    """The idents the project's ``enabledPlugins`` turns on that are not installed."""
    wanted = [i for i, on in project_enabled(workspace_root).items() if on and "@" in i]
    if not wanted:
        return []
    have = read_state(env)["plugins"]
    return [i for i in wanted if i not in have]


def active_plugins(workspace_root: Path | str | None,
                   env: Mapping[str, str] | None = None) -> list[ActivePlugin]:
    """The plugins on for ``workspace_root``, sorted by ident. Cheap when none is installed
    (one missing file)."""
    if not os.path.exists(state_path(env)):
        return []
    state = read_state(env)
    if not state["plugins"]:
        return []
    project = project_enabled(workspace_root)
    found = []
    for ident, entry in sorted(state["plugins"].items()):
        if not isinstance(entry, dict) or "@" not in ident:
            continue
        mine = entry.get("enabled", True) is not False
        on = project.get(ident, mine)
        root = Path(str(entry.get("path") or ""))
        if not on or not root.is_dir():
            continue
        name, _, marketplace = ident.partition("@")
        found.append(ActivePlugin(name, marketplace, root, str(entry.get("approved") or ""),
                                  by_project=not mine))
    return found


def plugin_dirs(workspace_root: Path | str | None, folder: str,
                env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """(plugin name, its ``folder``) for every active plugin that has one (``commands``,
    ``agents``, ``skills``, ``output-styles``)."""
    return [(p.name, p.root / folder) for p in active_plugins(workspace_root, env)
            if (p.root / folder).is_dir()]
