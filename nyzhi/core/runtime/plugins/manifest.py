"""Reading Claude Code's marketplace and plugin files as they are.

A marketplace is a directory with ``.claude-plugin/marketplace.json``: ``name``, ``owner``,
``plugins`` (each ``name``, ``source``, ``description``, ``version``...), and optionally
``metadata.pluginRoot`` (the base of relative sources). A plugin's ``source`` is one of:

* a relative path (``"./plugins/x"``), inside the marketplace;
* ``{"source": "github", "repo": "owner/name", "ref", "sha"}``;
* ``{"source": "url", "url": "https://….git", "ref", "sha"}`` (``"git"`` is taken as the same);
* ``{"source": "git-subdir", "url", "path", "ref", "sha"}``: a folder of a repository.

A plugin is a directory with ``.claude-plugin/plugin.json`` (``name``, ``version``,
``description``...; optional when the folders say it all) and any of ``commands/``, ``agents/``,
``skills/``, ``hooks/hooks.json``, ``.mcp.json`` and ``output-styles/``.

Bad input is one line naming the file and key (``PluginError``), never a traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from nyzhi import records

MAX_JSON = 1 << 20
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# Folders whose files are text the model reads: they load at once, outside the digest.
TEXT_PARTS = ("commands", "agents", "skills", "output-styles")


class PluginError(ValueError):
    """A marketplace or plugin file that cannot be used; the message names file and key."""


def read_json(path: Path) -> Any:
    try:
        if path.stat().st_size > MAX_JSON:
            raise PluginError(f"{path}: larger than {MAX_JSON} bytes")
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PluginError(f"{path}: not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PluginError(f"{path}: cannot be read ({exc})") from None
    except ValueError as exc:
        raise PluginError(f"{path}: not valid JSON ({exc})") from None


@records.frozen
class Source:
    """Where a plugin's files are: ``kind`` ``path`` (in the marketplace), ``git`` (a whole
    repository) or ``git-subdir``; ``url``, ``path`` (the folder), ``ref``, ``sha``."""

    kind: str
    url: str = ""
    path: str = ""
    ref: str = ""
    sha: str = ""


@records.frozen
class Entry:
    name: str
    source: Source
    description: str = ""
    version: str = ""


@records.frozen
class Marketplace:
    name: str
    root: Path
    plugins: tuple[Entry, ...]


def _str(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PluginError(f"{where}: expected a string, got {type(value).__name__}")
    return value


def parse_source(raw: Any, where: str, plugin_root: str = "") -> Source:
    if isinstance(raw, str):
        if raw.startswith(("./", "../")) or not re.match(r"^[a-z]+://", raw):
            rel = os.path.normpath(os.path.join(plugin_root, raw))
            if rel.startswith("..") or os.path.isabs(rel):
                raise PluginError(f"{where}: {raw!r} leaves the marketplace")
            return Source("path", path=rel)
        return Source("git", url=raw)
    if not isinstance(raw, dict):
        raise PluginError(f"{where}: expected a path or an object, got {type(raw).__name__}")
    kind = _str(raw.get("source"), f"{where}.source")
    ref, sha = _str(raw.get("ref"), f"{where}.ref"), _str(raw.get("sha"), f"{where}.sha")
    if sha and not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise PluginError(f"{where}.sha: expected 40 hex digits, got {sha!r}")
    if kind == "github":
        repo = _str(raw.get("repo"), f"{where}.repo")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo):
            raise PluginError(f"{where}.repo: expected owner/name, got {repo!r}")
        return Source("git", url=f"https://github.com/{repo}.git", ref=ref, sha=sha)
    if kind in ("url", "git"):
        return Source("git", url=_str(raw.get("url"), f"{where}.url"), ref=ref, sha=sha)
    if kind == "git-subdir":
        path = os.path.normpath(_str(raw.get("path"), f"{where}.path"))
        if path.startswith("..") or os.path.isabs(path):
            raise PluginError(f"{where}.path: {path!r} leaves the repository")
        url = _str(raw.get("url") or raw.get("repo"), f"{where}.url")
        if re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", url):
            url = f"https://github.com/{url}.git"
        return Source("git-subdir", url=url, path=path, ref=ref, sha=sha)
    if kind in ("local", "directory"):
        return parse_source(_str(raw.get("path"), f"{where}.path"), where, plugin_root)
    raise PluginError(f"{where}.source: expected \"github\", \"url\" or \"git-subdir\", "
                      f"got {kind!r}")


def read_marketplace(root: Path) -> Marketplace:
    path = root / ".claude-plugin" / "marketplace.json"
    data = read_json(path)
    if not isinstance(data, dict):
        raise PluginError(f"{path}: expected an object")
    name = _str(data.get("name"), f"{path}: name")
    if not NAME.fullmatch(name):
        raise PluginError(f"{path}: name: expected letters, digits and '_.-', got {name!r}")
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    plugin_root = _str(meta.get("pluginRoot"), f"{path}: metadata.pluginRoot")
    plugins = data.get("plugins")
    if not isinstance(plugins, list):
        raise PluginError(f"{path}: plugins: expected a list")
    entries = []
    for i, raw in enumerate(plugins):
        where = f"{path}: plugins[{i}]"
        if not isinstance(raw, dict):
            raise PluginError(f"{where}: expected an object")
        pname = _str(raw.get("name"), f"{where}.name")
        if not NAME.fullmatch(pname):
            raise PluginError(f"{where}.name: expected letters, digits and '_.-', got {pname!r}")
        entries.append(Entry(pname, parse_source(raw.get("source"), f"{where}.source",
                                                 plugin_root),
                             _str(raw.get("description"), f"{where}.description"),
                             str(raw.get("version") or "")))
    return Marketplace(name, root, tuple(entries))


@records.frozen
class Plugin:
    """A plugin's files, read: its name, root, manifest, and what it would run."""

    name: str
    root: Path
    manifest: dict[str, Any]
    hooks: dict[str, Any]  # Claude Code's hooks object, ${CLAUDE_PLUGIN_ROOT} not expanded
    mcp_servers: dict[str, Any]  # every declared server (plugin.json's win on a name)
    # (file, its mcpServers object) in reading order: .mcp.json, then plugin.json's
    # mcpServers (inline, or the file it names), for errors that name the file
    mcp_sources: tuple[tuple[Path, dict[str, Any]], ...] = ()

    def text_parts(self) -> list[str]:
        return [p for p in TEXT_PARTS if (self.root / p).is_dir()]

    def runs(self) -> list[str]:
        """One line per program the plugin would run (shown before installing)."""
        lines = []
        for event, groups in self.hooks.items():
            for group in groups if isinstance(groups, list) else []:
                matcher = group.get("matcher") if isinstance(group, dict) else None
                for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                    if isinstance(hook, dict) and hook.get("command"):
                        on = f"{event}({matcher})" if matcher else event
                        lines.append(f"hook {on}: {self.expand(str(hook['command']))}")
        for name, server in self.mcp_servers.items():
            if isinstance(server, dict):
                what = " ".join([str(server.get("command") or server.get("url") or ""),
                                 *map(str, server.get("args") or [])])
                lines.append(f"MCP server {name}: {self.expand(what.strip())}")
        return lines

    def expand(self, text: str) -> str:
        return text.replace("${CLAUDE_PLUGIN_ROOT}", str(self.root))

    def digest(self) -> str:
        """SHA-256 over every file that is not text for the model (hooks.json, .mcp.json,
        the scripts they run, plugin.json): an approval covers exactly these. A file is
        hashed as what its name opens (a symlinked file: its target); a symlinked folder is
        not walked. Walked with ``os.scandir``, not ``Path.rglob``: it runs at every start
        for every plugin with hooks or MCP servers, and pathlib was most of the cost."""
        h = hashlib.sha256()
        base = str(self.root)
        files: list[tuple[list[str], str]] = []  # (relative parts, path), sorted as Paths are

        def walk(folder: str, rel: list[str]) -> None:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                return
            for entry in entries:
                parts = [*rel, entry.name]
                if not rel and (entry.name in TEXT_PARTS or entry.name == ".git"):
                    continue  # the text folders are not walked at all
                try:
                    is_dir = entry.is_dir()
                    if is_dir and not entry.is_symlink():
                        walk(entry.path, parts)
                    elif not is_dir and entry.is_file():
                        files.append((parts, entry.path))
                except OSError:
                    continue

        walk(base, [])
        for parts, path in sorted(files):
            h.update("/".join(parts).encode() + b"\0")
            try:
                with open(path, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
            except OSError:
                h.update(b"unreadable")
        return h.hexdigest()


def read_plugin(root: Path, default_name: str = "") -> Plugin:
    manifest_path = root / ".claude-plugin" / "plugin.json"
    manifest: dict[str, Any] = {}
    if manifest_path.is_file():
        data = read_json(manifest_path)
        if not isinstance(data, dict):
            raise PluginError(f"{manifest_path}: expected an object")
        manifest = data
    name = _str(manifest.get("name") or default_name or root.name, f"{manifest_path}: name")
    if not NAME.fullmatch(name):
        raise PluginError(f"{manifest_path}: name: expected letters, digits and '_.-', "
                          f"got {name!r}")
    hooks: dict[str, Any] = {}
    hooks_file = root / "hooks" / "hooks.json"
    declared = manifest.get("hooks")
    if isinstance(declared, str):
        hooks_file = inside(root, declared, f"{manifest_path}: hooks")
    if isinstance(declared, dict):
        hooks = declared.get("hooks", declared)
    elif hooks_file.is_file():
        data = read_json(hooks_file)
        hooks = data.get("hooks", {}) if isinstance(data, dict) else {}
    if not isinstance(hooks, dict):
        raise PluginError(f"{hooks_file}: hooks: expected an object")
    sources: list[tuple[Path, Any]] = []
    if (root / ".mcp.json").is_file():
        data = read_json(root / ".mcp.json")
        sources.append((root / ".mcp.json",
                        data.get("mcpServers", {}) if isinstance(data, dict) else data))
    declared = manifest.get("mcpServers")
    if isinstance(declared, str):  # a file of the plugin, shaped as .mcp.json
        file = inside(root, declared, f"{manifest_path}: mcpServers")
        data = read_json(file)
        sources.append((file, data.get("mcpServers", data) if isinstance(data, dict) else data))
    elif isinstance(declared, dict):
        sources.append((manifest_path, declared))
    elif declared is not None:
        raise PluginError(f"{manifest_path}: mcpServers: expected an object or a path, got "
                          f"{type(declared).__name__}")
    servers: dict[str, Any] = {}
    for file, found in sources:
        if not isinstance(found, dict):
            raise PluginError(f"{file}: mcpServers: expected an object")
        servers.update(found)
    return Plugin(name, root, manifest, hooks, servers, tuple(sources))


def inside(root: Path, declared: str, where: str) -> Path:
    """The plugin file ``declared`` (relative, as plugin.json names its hooks or MCP file),
    refused when it leaves the plugin (``..``, absolute, a symlink out) or lies in a text
    folder: what runs programs must be inside what the digest covers."""
    rel = os.path.normpath(declared)
    if os.path.isabs(rel) or rel == ".." or rel.startswith("../"):
        raise PluginError(f"{where}: {declared!r} leaves the plugin")
    if rel.split("/", 1)[0] in (*TEXT_PARTS, ".git"):
        raise PluginError(f"{where}: {declared!r} is in {rel.split('/', 1)[0]}/, which the "
                          "approval does not cover; move it out")
    path = root / rel
    base = os.path.realpath(root)
    # no symlinked folder on the way (the digest does not walk one), and a linked file's
    # target inside the plugin, outside the text folders (the digest hashes what it opens)
    folder_ok = os.path.realpath(path.parent) == os.path.normpath(
        os.path.join(base, os.path.dirname(rel)))
    real = os.path.realpath(path)
    if not folder_ok or not real.startswith(base + os.sep) or os.path.relpath(
            real, base).split(os.sep, 1)[0] in (*TEXT_PARTS, ".git"):
        raise PluginError(f"{where}: {declared!r} resolves outside what the approval covers")
    return path
