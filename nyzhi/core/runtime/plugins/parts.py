"""An active plugin's programs for the runtime: its hooks and MCP servers, only when approved.

Hooks are Claude Code hooks (``nyzhi.core.runtime.hooks.claude``: Claude's payload and answers), with
``${CLAUDE_PLUGIN_ROOT}`` expanded in their commands and set in their environment. MCP
servers come from the plugin's ``.mcp.json`` and ``mcpServers`` in ``plugin.json`` (an
object, or the path of a file shaped as ``.mcp.json``; it wins on a name), read as the
project's ``.mcp.json`` is, with ``${CLAUDE_PLUGIN_ROOT}`` expanded; a server declared in
the config or the project of the same name wins. A plugin whose approval does not match its
files gets one notice and neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from nyzhi.config.plugins import ActivePlugin, active_plugins


def _unapproved(plugin: ActivePlugin, what: str) -> str:
    return (f"plugin {plugin.ident}: its {what} are not used: they are new or changed since "
            f"you approved them; review them with `nyz plugin approve {plugin.ident}`")


def plugin_hooks(workspace_root: Path | str, env: Mapping[str, str] | None = None, *,
                 project_approved: bool = True) -> tuple[list[Any], list[str]]:
    """(HookSpecs, notes) of the active plugins' approved hooks. ``project_approved``: the
    project's gated settings are approved; without it a plugin you disabled and the project's
    ``enabledPlugins`` turned on runs nothing."""
    from nyzhi.config.plugins import missing_plugins
    from nyzhi.core.runtime.hooks.claude import claude_hooks_from_settings
    from nyzhi.core.runtime.plugins.manifest import PluginError, read_plugin

    specs: list[Any] = []
    notes: list[str] = [
        f"the project enables plugin {ident}, which is not installed: "
        f"`nyz plugin install {ident}`" for ident in missing_plugins(workspace_root, env)]
    for active in active_plugins(workspace_root, env):
        try:
            plugin = read_plugin(active.root, active.name)
        except PluginError as exc:
            notes.append(f"plugin {active.ident}: {exc}")
            continue
        if (plugin.hooks or plugin.mcp_servers) and plugin.digest() != active.approved:
            what = " and ".join(w for w, has in (("hooks", plugin.hooks),
                                                 ("MCP servers", plugin.mcp_servers)) if has)
            notes.append(_unapproved(active, what))  # one notice for both (plugin_servers)
            continue
        if active.by_project and not project_approved and (plugin.hooks or plugin.mcp_servers):
            notes.append(f"plugin {active.ident}: on only by the project's enabledPlugins; its "
                         "hooks and MCP servers wait for the project's approval "
                         "(nyz config trust)")
            continue
        if not plugin.hooks:
            continue
        got, more = claude_hooks_from_settings(plugin.hooks, source=f"plugin {active.ident}")
        root = str(active.root)
        specs += [attrs.evolve(s, command=plugin.expand(s.command),
                               env={**s.env, "CLAUDE_PLUGIN_ROOT": root}) for s in got]
        notes += more
    return specs, notes


def plugin_servers(workspace_root: Path | str, env: Mapping[str, str], taken: set[str], *,
                   project_approved: bool = True) -> tuple[list[Any], list[str]]:
    """(ServerEntries, notes) of the active plugins' approved MCP servers not in ``taken``."""
    from nyzhi.config.errors import ConfigError
    from nyzhi.config.mcp_sources import servers_from
    from nyzhi.core.runtime.plugins.manifest import PluginError, read_plugin

    entries: list[Any] = []
    notes: list[str] = []
    for active in active_plugins(workspace_root, env):
        try:
            plugin = read_plugin(active.root, active.name)
        except PluginError as exc:
            notes.append(f"plugin {active.ident}: {exc}")
            continue
        if not plugin.mcp_servers or plugin.digest() != active.approved:  # plugin_hooks says
            continue
        if active.by_project and not project_approved:
            continue
        expand = {**env, "CLAUDE_PLUGIN_ROOT": str(active.root)}
        found: dict[str, Any] = {}
        try:  # .mcp.json, then plugin.json's mcpServers (which wins on a name)
            for file, servers in plugin.mcp_sources:
                found.update({e.name: e for e in servers_from(servers, file, expand)})
        except ConfigError as exc:
            notes.append(f"plugin {active.ident}: {exc}")
            continue
        for entry in found.values():  # approved with the plugin: not asked about again
            if entry.name not in taken:
                entries.append(attrs.evolve(entry, source="config"))
                taken.add(entry.name)
    return entries, notes
