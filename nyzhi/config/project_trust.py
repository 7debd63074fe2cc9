"""A project's configuration applies only its harmless keys until a person approved the rest.

A repository (or an agent that wrote into one) decides much of what nyz does through its
project files. ``nyzhi.config.key_classes`` classifies every key of the schema; this module
applies that table to the project layers (``.nyzhi/config.toml``, ``config.local.toml``) and
to what nyz reads of ``.claude/settings*.json``:

* a ``SAFE`` key, or a limit set in the tightening direction (compared with the user's own
  value, else the default), applies at once;
* a ``USER_ONLY`` key (``agent.trust.approve_project_config``) never applies from a project
  layer, approved or not: one line says it was ignored;
* every other key (runs a program, chooses a host, sets the environment, a path outside the
  workspace, a looser limit) is *gated*: used only as the user last approved it, and otherwise
  left out with one line per file and key saying so. A key the table does not know is gated.

The approval is a SHA-256 digest of all the gated parts, kept per workspace in the user's state
directory (``nyzhi.config.approvals``, never in the repository): ``nyz config trust`` (shows
them and asks) or, in an interactive session, one question through the front end's approvals
(``nyzhi.core.runtime.assembly.ask_project_trust``; a yes applies from the next session). For CI, the
person running nyz approves for one run with ``--approve-project-config`` or in their own
config with ``[agent.trust] approve_project_config = true``. A trust mode never approves
configuration: ``--trust full`` is about tool calls, and a hook the agent planted under it must
not run in the next ``--trust full`` run. ``.mcp.json`` servers are asked about one by one
(``nyzhi.core.runtime.mcp.trust``, the same record and the same rule).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from nyzhi import records
from nyzhi.config.claude_settings import SETTINGS_FILES
from nyzhi.config.errors import ConfigError
from nyzhi.config.key_classes import (
    CLAUDE_KEYS,
    ENTRIES,
    NAME,
    PREFIXES,
    TABLES,
    Entry,
    KeyClass,
    class_of,
    entry_for,
)
from nyzhi.config.loader import LoadedConfig, load_config, read_layer
from nyzhi.config.textfile import check_nesting, read_regular_text

PROJECT_LAYERS = ("project", "local")
TRUST_KEY = "project"
APPROVE_FLAG = "--approve-project-config"
APPROVE_KEY = ("agent", "trust", "approve_project_config")
_UNCLASSIFIED = Entry(KeyClass.LOOSENS_LIMIT, why="not classified")


@records.frozen
class ProjectTrust:
    """The outcome for one load: ``approved`` (or nothing gated), what was gated per file, and
    one line per gated or ignored key to show when it was left out."""

    approved: bool
    digest: str | None = None
    parts: dict[str, Any] = attrs.field(factory=dict, eq=False)
    lines: tuple[str, ...] = ()

    @property
    def notice(self) -> str:
        return "\n".join(self.lines)

    @property
    def claude_hooks(self) -> bool:
        """Whether the hooks of ``.claude/settings*.json`` may run."""
        return self.approved

    @property
    def claude_allow(self) -> bool:
        """Whether the ``permissions.allow`` rules of ``.claude/settings*.json`` may approve
        tools without asking (deny and ask rules only tighten, so they always apply)."""
        return self.approved


@records.frozen
class Split:
    """One project layer sorted by the table: ``kept`` (applies unapproved), ``gated``
    (dotted key -> (class, value)) and ``user_only`` (dotted keys never applied)."""

    kept: dict
    approved: dict  # what applies once approved: all but user_only
    gated: dict[str, tuple[KeyClass, Any]]
    user_only: tuple[str, ...]


def _dotted(path: tuple) -> str:
    from nyzhi.config.convert import dotted

    return dotted(path)


def _units(value: Any, form: tuple, path: tuple) -> Iterator[tuple[tuple, tuple, Any]]:
    """(raw path, regular form, value) of each classified unit under ``value``: a key the
    table lists, or a gated table above it; a key the table does not reach yields its form."""
    if form and (form in ENTRIES or form not in TABLES):
        yield path, form, value
        return
    if isinstance(value, dict):
        for k, v in value.items():
            sub = (*form, k)
            if sub not in PREFIXES and (*form, NAME) in PREFIXES:
                sub = (*form, NAME)
            yield from _units(v, sub, (*path, k))
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, v in enumerate(value):
            yield from _units(v, form, (*path, i))
    # a scalar where a table belongs: left for the loader to report as a wrong type


def _lookup(raw: Any, path: tuple) -> Any:
    for part in path:
        if not isinstance(raw, dict) or part not in raw:
            return None
        raw = raw[part]
    return raw


def _remove(raw: dict, path: tuple) -> None:
    node: Any = raw
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(path[-1], None)


def _schema_key(form: tuple) -> bool:
    from nyzhi.config.keys import schema_keys

    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = frozenset(schema_keys())
    return ".".join(form) in _SCHEMA


_SCHEMA: frozenset[str] | None = None


def gating(form: tuple, value: Any, baseline: Any, root: Path, *,
           may_tighten: bool = True) -> Entry | None:
    """The one rule for one unit of a project's configuration, whichever file it came from:
    None when it applies unapproved (a ``SAFE`` key, a typo the loader drops, or, with
    ``may_tighten``, a limit set in the tightening direction against ``baseline``, the user's
    own value), else the entry that gates it (``USER_ONLY`` included: the caller leaves it
    out). A schema key the table does not list is gated (``_UNCLASSIFIED``)."""
    found = entry_for(form)
    if found is None:
        if not _schema_key(form):
            return None  # a typo: the loader warns about it and drops it
        entry = _UNCLASSIFIED
    else:
        entry = found[1]
    if entry.cls is KeyClass.SAFE:
        return None
    if may_tighten and entry.safe is not None and entry.safe.tightens(value, baseline, root):
        return None
    return entry


def split_layer(raw: dict, user: dict | None, root: Path) -> Split:
    """Sort one project layer's raw TOML by the key table. ``user`` is the user's own layer
    (the baseline a limit must not loosen); ``root`` the workspace (paths must stay in it)."""
    gated: dict[str, tuple[KeyClass, Any]] = {}
    user_only: list[str] = []
    drop: list[tuple] = []
    for path, form, value in _units(raw, (), ()):
        # inside an array of tables a value has no user's counterpart to be tighter than
        inside_array = any(isinstance(p, int) for p in path)
        entry = gating(form, value, _lookup(user, path), root, may_tighten=not inside_array)
        if entry is None:
            continue
        # an array of tables is one unit: an entry without the gated key means nothing
        cut = next((i for i, p in enumerate(path) if isinstance(p, int)), len(path))
        unit = path[:cut]
        if entry.cls is KeyClass.USER_ONLY:
            user_only.append(_dotted(unit))
        else:
            gated.setdefault(_dotted(unit), (entry.cls, _lookup(raw, unit)))
        drop.append((unit, entry.cls))
    for unit in _replaced_whole(raw, user):  # a project entry would replace the user's own
        if _dotted(unit) not in gated:
            gated[_dotted(unit)] = (KeyClass.LOOSENS_LIMIT, _lookup(raw, unit))
            drop.append((unit, KeyClass.LOOSENS_LIMIT))
    if not drop:
        return Split(raw, raw, {}, ())
    kept, approved = copy.deepcopy(raw), copy.deepcopy(raw)
    for unit, cls in drop:
        _remove(kept, unit)
        if cls is KeyClass.USER_ONLY:
            _remove(approved, unit)
    return Split(kept, approved, gated, tuple(user_only))


def _replaced_whole(raw: dict, user: dict | None) -> Iterator[tuple]:
    """The entries (``merge.REPLACE_WHOLE``: a role, a server) that ``raw`` sets and the user
    also set: merged, the project's would replace the user's whole, ``read_only`` and all."""
    from nyzhi.config.merge import REPLACE_WHOLE

    for pattern in REPLACE_WHOLE:
        table = _lookup(raw, pattern[:-1])
        mine = _lookup(user, pattern[:-1])
        if isinstance(table, dict) and isinstance(mine, dict):
            yield from ((*pattern[:-1], name) for name in table if name in mine)


def _claude_gated(root: Path) -> dict[str, dict[str, tuple[KeyClass, Any]]]:
    """Per Claude settings file, what needs approval: the keys nyz reads there
    (``CLAUDE_KEYS``) that ``gating`` gates as the schema key each means (hooks,
    ``permissions.allow``), with the class it gives. Claude's values are in Claude's own
    form, so none counts as tightening: gated or safe by the key alone, as before."""
    hooks = _claude_class("hooks")
    out: dict[str, dict[str, tuple[KeyClass, Any]]] = {}
    for name in SETTINGS_FILES:
        path = root / ".claude" / name
        try:
            text = read_regular_text(path)
        except OSError:
            continue
        try:
            check_nesting(text, path, "json")  # hostile nesting: ConfigError, not RecursionError
            data = json.loads(text)
        except (ValueError, ConfigError):
            out[f".claude/{name}"] = {"hooks": (hooks, text)}  # unusable, unused; a change counts
            continue
        got: dict[str, tuple[KeyClass, Any]] = {}
        if isinstance(data, dict):
            for key, schema_key in CLAUDE_KEYS.items():
                value = _lookup(data, tuple(key.split(".")))
                entry = gating(tuple(schema_key.split(".")), value, None, root,
                               may_tighten=False) if value else None
                if entry is not None:
                    got[key] = (entry.cls, value)
        if got:
            out[f".claude/{name}"] = got
    return out


def _claude_class(key: str) -> KeyClass:
    entry = gating(tuple(CLAUDE_KEYS[key].split(".")), None, None, Path(), may_tighten=False)
    return entry.cls if entry is not None else KeyClass.SAFE


@records.frozen
class _Sorted:
    user: dict | None  # the user's own layer, raw: the baseline a limit must not loosen
    splits: dict[str, Split]  # layer name -> its split
    parts: dict[str, Any]  # file -> {key: value}: everything gated
    classes: dict[tuple[str, str], KeyClass]  # (file, key) -> why it is gated
    lines: tuple[str, ...]  # the user_only lines
    user_approves: bool  # the user's own config says approve_project_config = true


def _sort(loaded_layers: Any, root: Path) -> _Sorted:
    """Read the layers (``loader.Layer``s), split the project ones against the user's own.
    The user's layer is read only when there is something of the project's to weigh (most
    starts have no project file: nothing is read twice)."""
    from nyzhi.config.mcp_sources import MCP_JSON

    raws: dict[str, dict | None] = {}
    paths = {layer.name: layer.path for layer in loaded_layers}

    def read(name: str) -> dict | None:
        try:
            raw = read_layer(paths[name])
        except Exception:  # noqa: BLE001 (load_config reports a broken layer)
            return None
        return raw if isinstance(raw, dict) else None

    for name in PROJECT_LAYERS:
        if name in paths:
            raws[name] = read(name)
    claude = _claude_gated(root)
    user = None
    if "global" in paths and (any(raws.values()) or claude or (root / MCP_JSON).exists()):
        user = read("global")
    splits: dict[str, Split] = {}
    parts: dict[str, Any] = {}
    lines: list[str] = []
    classes: dict[tuple[str, str], KeyClass] = {}
    for name in PROJECT_LAYERS:
        raw = raws.get(name)
        if not isinstance(raw, dict):
            continue
        split = splits[name] = split_layer(raw, user, root)
        if split.gated:
            parts[str(paths[name])] = {k: v for k, (_c, v) in split.gated.items()}
            classes.update({(str(paths[name]), k): c for k, (c, _v) in split.gated.items()})
        lines += [f"{paths[name]}: {key} is ignored: only your own config "
                  "(~/.config/nyzhi/config.toml) may set it" for key in split.user_only]
    for name, got in claude.items():
        parts[str(root / name)] = {k: v for k, (_c, v) in got.items()}
        classes.update({(str(root / name), k): c for k, (c, _v) in got.items()})
    return _Sorted(user, splits, parts, classes, tuple(lines),
                   _lookup(user, APPROVE_KEY) is True)


def _gated_lines(found: _Sorted) -> list[str]:
    out = []
    for file, got in sorted(found.parts.items()):
        for key in got:
            cls = found.classes.get((file, key), KeyClass.RUNS_PROGRAM)
            out.append(f"{file}: {key} ({cls}) is new or changed since you last approved the "
                       "project's configuration: not used in this run. Review and approve it "
                       f"with `nyz config trust` (CI: {APPROVE_FLAG})")
    return out


def gated_parts(loaded: LoadedConfig) -> dict[str, Any]:
    """``{file: {key: value}}``: every gated part of the workspace's project files."""
    return _sort(loaded.candidates, loaded.workspace.root).parts


def digest_of(parts: Mapping[str, Any]) -> str:
    data = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8", "surrogateescape")).hexdigest()


def _verdict(found: _Sorted, root: Path, env: Mapping[str, str] | None,
             approve: bool, user_setting: bool = True) -> ProjectTrust:
    from nyzhi.config.approvals import trusted_digest

    if not found.parts:
        return ProjectTrust(True, None, {}, found.lines)
    digest = digest_of(found.parts)
    if approve or (user_setting and found.user_approves) or trusted_digest(root, TRUST_KEY, env) == digest:
        return ProjectTrust(True, digest, found.parts, found.lines)
    lines = (*_gated_lines(found), *found.lines)
    return ProjectTrust(False, digest, found.parts, lines)


def check(loaded: LoadedConfig, env: Mapping[str, str] | None = None) -> ProjectTrust:
    """Whether the gated parts of the loaded workspace are the ones the user approved (an
    approval recorded by a person; neither flag nor setting counts here)."""
    found = _sort(loaded.candidates, loaded.workspace.root)
    return _verdict(found, loaded.workspace.root, env, False, user_setting=False)


def load_trusted(cwd: Path | None, env: Mapping[str, str] | None = None, *,
                 approve: bool = False) -> tuple[LoadedConfig, ProjectTrust]:
    """``load_config`` with the project's gated keys left out unless approved: recorded by
    ``nyz config trust`` or the interactive question, or for this run by the person running
    it (``approve``: ``--approve-project-config``; or ``approve_project_config`` in their own
    config). USER_ONLY keys never apply from a project layer. No trust mode approves."""
    from nyzhi.config.loader import layer_paths
    from nyzhi.config.workspace import detect_workspace

    workspace = detect_workspace(cwd, env)
    found = _sort(layer_paths(workspace, env), workspace.root)
    verdict = _verdict(found, workspace.root, env, approve)
    if not (approve or found.user_approves):
        more = _mcp_json_lines(workspace.root, env)
        if more:
            verdict = attrs.evolve(verdict, lines=(*verdict.lines, *more))
    if not found.splits:
        return load_config(cwd, env=env, workspace=workspace), verdict

    def layer_filter(name: str, raw: dict) -> dict:
        if name not in PROJECT_LAYERS:
            return raw
        # ``raw`` is the layer as checked (typos dropped): split again, the same way
        split = split_layer(raw, found.user, workspace.root)
        return split.approved if verdict.approved else split.kept

    return load_config(cwd, env=env, workspace=workspace, layer_filter=layer_filter), verdict


def pending_mcp_json(root: Path, env: Mapping[str, str] | None = None) -> list[Any]:
    """The ``.mcp.json`` servers (``ServerEntry``) not approved as they are now: each is
    approved on its own (``nyzhi.core.runtime.mcp.trust``, the same record), and not started until."""
    from nyzhi.config.approvals import trusted_digest
    from nyzhi.config.mcp_sources import MCP_JSON, read_mcp_json

    if not (root / MCP_JSON).is_file():
        return []
    try:
        entries = read_mcp_json(root, env)
    except ConfigError:  # the runtime reports a broken file itself
        return []
    return [e for e in entries if trusted_digest(root, f"mcp:{e.name}", env) != e.fingerprint()]


def approve_mcp_json(root: Path, entries: list[Any], env: Mapping[str, str] | None = None) -> None:
    """Record the user's yes for these ``.mcp.json`` servers (``nyz config trust``)."""
    from nyzhi.config.approvals import record_trust

    for entry in entries:
        record_trust(root, f"mcp:{entry.name}", entry.fingerprint(), env)


def _mcp_json_lines(root: Path, env: Mapping[str, str] | None) -> list[str]:
    """One line per ``.mcp.json`` server not approved (the runtime does not start it)."""
    from nyzhi.config.key_classes import MCP_JSON_KEYS
    from nyzhi.config.mcp_sources import MCP_JSON

    cls = class_of(MCP_JSON_KEYS["mcpServers"])
    return [f"{root / MCP_JSON}: mcpServers.{e.name} ({cls}) is not approved: not started "
            "unless you approve it (`nyz config trust`, asked in the console, or `nyz mcp "
            f"list` on a terminal; CI: {APPROVE_FLAG})" for e in pending_mcp_json(root, env)]


@contextlib.contextmanager
def keeping_approval(cwd: Path | None = None, *, project: bool = True) -> Iterator[None]:
    """Around the user's own edit of a project file (``nyz mcp add``, ``nyz config set
    --project``): a project that was approved stays approved with the edit, since the person
    made it; one that was not stays unapproved (the edit approves nothing else). ``project``
    False (an edit of the user's own file): nothing is recorded, since a new baseline may
    gate a key the person never reviewed."""
    if not project:
        yield
        return
    try:
        was = check(load_config(cwd)).approved
    except ConfigError:
        was = False
    yield
    if was:
        approve(load_config(cwd))


def approve(loaded: LoadedConfig, env: Mapping[str, str] | None = None, *,
            digest: str | None = None) -> None:
    """Record as approved the gated parts the user was shown (``digest``; default: the current
    ones). Recording the shown digest means a file changed after it was shown is not approved."""
    from nyzhi.config.approvals import record_trust

    digest = digest or check(loaded, env).digest
    if digest is not None:
        record_trust(loaded.workspace.root, TRUST_KEY, digest, env)
