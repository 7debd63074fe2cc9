"""Adding marketplaces and installing plugins: what ``nyz plugin …`` does.

A local marketplace (a directory with ``.claude-plugin/marketplace.json``) is used where it
is; any other source (a git URL, a local repository, ``owner/name`` on GitHub) is cloned
into ``data_dir()/plugins/marketplaces/NAME`` through ``nyzhi.tools.gitsafe.clone`` (no hooks,
no filters, no ``ext::`` transport). Installing copies the plugin's files into
``installed/MARKETPLACE/NAME`` (from the marketplace, or cloned from its own git source), so a
later edit of the source changes nothing until ``update``. The state file is written with the
one atomic write (``nyzhi.config.fsutil``).

Trust: installing records the plugin's digest (``manifest.Plugin.digest``). Its hooks and MCP
servers are used only once ``approved`` equals that digest: ``install --yes`` or
``approve`` records it, after showing what the plugin runs. An update whose digest differs
leaves the old approval behind, so the plugin's programs stop until approved again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nyzhi.config.fsutil import atomic_write, rename_durably
from nyzhi.config.plugins import plugins_dir, read_state, state_path
from nyzhi.core.runtime.plugins.manifest import (
    Entry,
    Marketplace,
    Plugin,
    PluginError,
    parse_source,
    read_marketplace,
    read_plugin,
)


def _save(state: dict[str, Any], env: Mapping[str, str] | None) -> None:
    atomic_write(state_path(env), (json.dumps(state, indent=2, sort_keys=True) + "\n").encode(),
                 mode=0o600, dir_mode=0o700, what="the plugin state")


def _clone(url: str, dest: Path, ref: str = "", sha: str = "") -> None:
    from nyzhi.tools.gitsafe import clone

    failed = clone(url, dest, ref=ref, sha=sha)
    if failed is not None:
        shutil.rmtree(dest, ignore_errors=True)
        raise PluginError(failed)


def _git_url(source: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", source) and not os.path.exists(source):
        return f"https://github.com/{source}.git"
    if os.path.exists(source):
        return Path(source).resolve().as_uri()
    return source


# ---- marketplaces ---------------------------------------------------------------------------


def marketplace_add(source: str, env: Mapping[str, str] | None = None) -> Marketplace:
    """Add a marketplace from a directory, a git URL or ``owner/name``; its catalog is read
    and checked before anything is recorded."""
    state = read_state(env)
    local = Path(source).expanduser()
    if (local / ".claude-plugin" / "marketplace.json").is_file():
        market = read_marketplace(local.resolve())
        record: dict[str, Any] = {"source": {"source": "directory", "path": str(market.root)},
                                  "path": str(market.root)}
    else:
        url = _git_url(source)
        base = plugins_dir(env) / "marketplaces"
        base.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".adding-", dir=base))
        _clone(url, tmp / "repo")
        try:
            market = read_marketplace(tmp / "repo")
        except PluginError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        dest = base / market.name
        shutil.rmtree(dest, ignore_errors=True)
        rename_durably(tmp / "repo", dest)
        shutil.rmtree(tmp, ignore_errors=True)
        market = read_marketplace(dest)
        record = {"source": {"source": "git", "url": url}, "path": str(dest)}
    state["marketplaces"][market.name] = record
    _save(state, env)
    return market


def marketplaces(env: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    return read_state(env)["marketplaces"]


def marketplace_remove(name: str, env: Mapping[str, str] | None = None) -> None:
    """Forget a marketplace (its clone is deleted; a local directory is left alone) and
    uninstall its plugins."""
    state = read_state(env)
    record = state["marketplaces"].pop(name, None)
    if record is None:
        raise PluginError(f"no marketplace named {name!r} (nyz plugin marketplace list)")
    for ident in [i for i in state["plugins"] if i.endswith(f"@{name}")]:
        _remove_files(state["plugins"].pop(ident), env)
    if record.get("source", {}).get("source") == "git":
        shutil.rmtree(record["path"], ignore_errors=True)
    _save(state, env)


def marketplace_update(name: str, env: Mapping[str, str] | None = None) -> list[str]:
    """Fetch the marketplace again (a git one: a fresh clone) and reinstall its installed
    plugins; returns the idents whose digest changed (their approval no longer holds)."""
    state = read_state(env)
    record = state["marketplaces"].get(name)
    if record is None:
        raise PluginError(f"no marketplace named {name!r} (nyz plugin marketplace list)")
    if record.get("source", {}).get("source") == "git":
        marketplace_add(record["source"]["url"], env)
    changed = []
    for ident, entry in list(read_state(env)["plugins"].items()):
        if ident.endswith(f"@{name}"):
            plugin = install(ident, env)
            if plugin_digest(plugin) != entry.get("digest"):
                changed.append(ident)
    return changed


def _market(name: str, env: Mapping[str, str] | None) -> Marketplace:
    record = read_state(env)["marketplaces"].get(name)
    if record is None:
        raise PluginError(f"no marketplace named {name!r}: add it with "
                          "`nyz plugin marketplace add SOURCE`")
    return read_marketplace(Path(record["path"]))


# ---- plugins --------------------------------------------------------------------------------


def resolve(spec: str, env: Mapping[str, str] | None = None, *,
            workspace_root: Path | None = None) -> tuple[Marketplace, Entry]:
    """The marketplace entry ``NAME`` or ``NAME@MARKETPLACE`` names. A marketplace not added
    yet that the project's ``extraKnownMarketplaces`` declares is added first."""
    name, _, market_name = spec.partition("@")
    if market_name and market_name not in read_state(env)["marketplaces"]:
        from nyzhi.config.plugins import project_marketplaces

        declared = project_marketplaces(workspace_root).get(market_name)
        if declared is not None:
            source = known_source(declared, f"extraKnownMarketplaces.{market_name}.source")
            if source and not os.path.isabs(source) and workspace_root is not None \
                    and "://" not in source:
                source = str(Path(workspace_root) / source)
            marketplace_add(source, env)
    names = [market_name] if market_name else sorted(read_state(env)["marketplaces"])
    found = []
    for mname in names:
        market = _market(mname, env)
        found += [(market, e) for e in market.plugins if e.name == name]
    if not found:
        where = f"marketplace {market_name!r}" if market_name else "any added marketplace"
        raise PluginError(f"no plugin {name!r} in {where}")
    if len(found) > 1:
        options = ", ".join(f"{name}@{m.name}" for m, _ in found)
        raise PluginError(f"{name!r} is in several marketplaces: name one ({options})")
    return found[0]


def preview(spec: str, env: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """(ident, what it would run) for a plugin not yet installed, read from its source
    when that is in the marketplace (a git source is shown after it is fetched)."""
    market, entry = resolve(spec, env)
    ident = f"{entry.name}@{market.name}"
    if entry.source.kind == "path":
        return ident, read_plugin(market.root / entry.source.path, entry.name).runs()
    return ident, []


def _fetch(market: Marketplace, entry: Entry, dest: Path) -> None:
    src = entry.source
    if src.kind == "path":
        shutil.copytree(market.root / src.path, dest, symlinks=True,
                        ignore=shutil.ignore_patterns(".git"))
        return
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=dest.parent) as tmp:
        _clone(src.url, Path(tmp) / "repo", ref=src.ref, sha=src.sha)
        folder = Path(tmp) / "repo" / (src.path if src.kind == "git-subdir" else "")
        if not folder.is_dir():
            raise PluginError(f"{src.url}: no folder {src.path!r}")
        shutil.copytree(folder, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))


def install(spec: str, env: Mapping[str, str] | None = None, *,
            approve: bool = False, workspace_root: Path | None = None) -> Plugin:
    """Install (or reinstall) a plugin, enabled. ``approve``: its hooks and MCP servers may
    run (the caller has shown ``Plugin.runs()``); else an earlier approval holds only while
    the digest is unchanged."""
    market, entry = resolve(spec, env, workspace_root=workspace_root)
    ident = f"{entry.name}@{market.name}"
    base = plugins_dir(env) / "installed" / market.name
    base.mkdir(parents=True, exist_ok=True)
    dest = base / entry.name
    staging = base / f".{entry.name}.new"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _fetch(market, entry, staging)
        plugin = read_plugin(staging, entry.name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(dest, ignore_errors=True)
    rename_durably(staging, dest)
    plugin = read_plugin(dest, entry.name)
    state = read_state(env)
    old = state["plugins"].get(ident, {})
    digest = plugin_digest(plugin)
    state["plugins"][ident] = {
        "path": str(dest), "enabled": old.get("enabled", True), "digest": digest,
        "approved": digest if approve else old.get("approved", ""),
        "version": entry.version or str(plugin.manifest.get("version") or ""),
    }
    _save(state, env)
    return plugin


def plugin_digest(plugin: Plugin) -> str:
    return plugin.digest()


def _entry(ident: str, state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if ident in state["plugins"]:
        return ident, state["plugins"][ident]
    matches = [i for i in state["plugins"] if i.partition("@")[0] == ident]
    if len(matches) == 1:
        return matches[0], state["plugins"][matches[0]]
    if matches:
        raise PluginError(f"{ident!r} is installed from several marketplaces: name one "
                          f"({', '.join(matches)})")
    raise PluginError(f"plugin {ident!r} is not installed (nyz plugin list)")


def _remove_files(entry: dict[str, Any], env: Mapping[str, str] | None) -> None:
    path = Path(str(entry.get("path") or ""))
    base = plugins_dir(env) / "installed"
    if path.is_relative_to(base):  # only what install made
        shutil.rmtree(path, ignore_errors=True)


def uninstall(ident: str, env: Mapping[str, str] | None = None) -> str:
    state = read_state(env)
    ident, entry = _entry(ident, state)
    _remove_files(entry, env)
    del state["plugins"][ident]
    _save(state, env)
    return ident


def set_enabled(ident: str, on: bool, env: Mapping[str, str] | None = None) -> str:
    state = read_state(env)
    ident, entry = _entry(ident, state)
    entry["enabled"] = on
    _save(state, env)
    return ident


def approve(ident: str, env: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """Approve the plugin's hooks and MCP servers as its files are now; (ident, what runs)."""
    state = read_state(env)
    ident, entry = _entry(ident, state)
    plugin = read_plugin(Path(entry["path"]), ident.partition("@")[0])
    entry["digest"] = entry["approved"] = plugin_digest(plugin)
    _save(state, env)
    return ident, plugin.runs()


def installed(env: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    return read_state(env)["plugins"]


def known_source(raw: Any, where: str) -> str:
    """A settings file's ``extraKnownMarketplaces`` source as ``marketplace_add`` takes it."""
    if isinstance(raw, dict) and raw.get("source") == "directory":
        return str(raw.get("path") or "")
    if isinstance(raw, dict) and raw.get("source") == "git":
        raw = {**raw, "source": "url"}
    src = parse_source(raw, where)
    if src.kind == "path":
        raise PluginError(f"{where}: expected a directory, github or git source")
    return src.url
