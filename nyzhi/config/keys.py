"""Which keys the schema knows, which of them do nothing yet, and what a layer sets that is neither.

One walker follows a raw TOML dict down the attrs schema the way the converter does (the
``[provider]`` section's free names, ``mcp.servers`` stdio/http entries, tables of tables,
arrays of tables). It serves three callers:

- the loader: keys nothing knows (typos) become warnings naming the file, the key and a close
  match, and are dropped before structuring, so a typo never stops nyz from starting;
- the loader again: keys that are known but not wired yet (``INACTIVE``) get a notice, so a
  setting that has no effect never looks as if it had one;
- the docs test: ``schema_keys()`` lists every key in one regular form (free names written
  ``NAME``, array entries without an index: ``agent.hooks.event``), compared with the keys
  docs/config.md documents.
"""

from __future__ import annotations

import copy
import difflib
import functools
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from nyzhi.config.convert import dotted
from nyzhi.config.errors import ConfigWarning
from nyzhi.config.schema import Config, McpHttpServer, McpServer, McpStdioServer, ProviderSection

NAME = "NAME"  # how a free name (a provider, a server, a role) is written in the regular form

# Known keys that nothing reads yet, and the issue that will wire each. An entry covers the key
# and everything under it. The issue that wires one removes it here and its mark in
# docs/config.md (tests/nyzhi/config/test_config_docs.py keeps the two equal).
INACTIVE: dict[str, str] = {
    "models": "legacy: use [provider.NAME] keys",
    "tui.accent": "issue: console",
    "tui.output_style": "issue: console",
    "tui.colors": "issue: console",
    "tui.notify": "issue: console",
    "provider.NAME.options": "not planned yet",
    "agent.enforce_todos": "not planned yet",
    "agent.auto_simplify": "not planned yet",
    "agent.auto_commit": "not planned yet",
    "agent.model_profile": "not planned yet",
    "agent.routing": "not planned yet",
    "agent.verify": "not planned yet",
    "agent.sharing": "not planned yet",
    "agent.voice": "not planned yet",
    "agent.hooks.prompt": "not planned yet",
    "agent.hooks.instructions": "not planned yet",
    "agent.hooks.model": "not planned yet",
    "shell.sandbox": "legacy: use [agent.sandbox]",
    "browser": "not planned yet",
    "update": "not planned yet",
    "external_notify": "not planned yet",
}


_INACTIVE_PARTS = {tuple(key.split(".")): key for key in INACTIVE}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _unwrap_optional(t: Any) -> Any:
    if typing.get_origin(t) in (typing.Union, types.UnionType) and t != McpServer:
        args = [a for a in typing.get_args(t) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return t


def _is_table(t: Any) -> bool:
    return attrs.has(t) or t == McpServer or t is ProviderSection


def _server_class(raw: Any) -> type | None:
    if isinstance(raw, dict) and "command" in raw:
        return McpStdioServer
    if isinstance(raw, dict) and "url" in raw:
        return McpHttpServer
    return None


@functools.cache
def _shape(t: Any) -> tuple[str, Any]:
    """What the walker does with a value of type ``t`` (worked out once per type):
    ("provider" | "server" | "table", field types) or ("map" | "array", item type) or
    ("leaf", None)."""
    t = _unwrap_optional(t)
    if t is ProviderSection:
        return "provider", typing.get_args(_hints(ProviderSection)["entries"])[1]
    if t == McpServer:
        return "server", None
    if attrs.has(t):
        return "table", _hints(t)
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is dict and _is_table(args[1]):
        return "map", args[1]
    if origin is tuple and args and _is_table(args[0]):
        return "array", args[0]
    return "leaf", None


Visit = Callable[[tuple, tuple], None]  # (raw path, regular-form path)


def walk(
    raw: Any, t: Any, on_key: Visit, on_unknown: Callable[[tuple, list[str]], None],
    path: tuple = (), form: tuple = (),
) -> None:
    """Follow ``raw`` down type ``t``: ``on_key(path, form)`` for each known key set,
    ``on_unknown(path, known_names)`` for each key the schema lacks. Values of the wrong
    type are left alone (the converter reports those)."""
    kind, sub = _shape(t)
    if kind == "leaf":
        return
    if kind == "server":
        cls = _server_class(raw)
        if cls is not None:
            walk(raw, cls, on_key, on_unknown, path, form)
        return
    if kind == "array":
        if isinstance(raw, list):
            for i, item in enumerate(raw):
                walk(item, sub, on_key, on_unknown, (*path, i), form)
        return
    if not isinstance(raw, dict):
        return
    for key, value in raw.items():
        here = (*path, key)
        if kind == "table":
            if key not in sub:
                on_unknown(here, list(sub))
                continue
            at, item_type = (*form, key), sub[key]
        elif kind == "provider" and key == "default":
            on_key(here, (*form, key))
            continue
        else:  # provider entries and tables of tables: free names
            at, item_type = (*form, NAME), sub
        on_key(here, at)
        walk(value, item_type, on_key, on_unknown, here, at)


def schema_keys(t: Any = Config, form: tuple = ()) -> Iterator[str]:
    """Every key of the schema in the regular form (``provider.NAME.model``,
    ``agent.hooks.event``), tables included (``agent.trust``)."""
    t = _unwrap_optional(t)
    if t is ProviderSection:
        yield ".".join((*form, "default"))
        yield ".".join((*form, NAME))
        yield from schema_keys(_shape(ProviderSection)[1], (*form, NAME))
        return
    if t == McpServer:
        seen: set[str] = set()
        for cls in (McpStdioServer, McpHttpServer):
            for key in schema_keys(cls, form):
                if key not in seen:
                    seen.add(key)
                    yield key
        return
    if attrs.has(t):
        for name, hint in _hints(t).items():
            here = (*form, name)
            yield ".".join(here)
            yield from schema_keys(hint, here)
        return
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is dict and _is_table(args[1]):
        yield ".".join((*form, NAME))
        yield from schema_keys(args[1], (*form, NAME))
    elif origin is tuple and args and _is_table(args[0]):
        yield from schema_keys(args[0], form)


def check_layer(raw: dict, file: Path | None) -> tuple[dict, list[ConfigWarning]]:
    """``raw`` without the keys the schema lacks, and the warnings for ``file``: one per such
    key (with a close match when there is one), one per inactive table or key that is set."""
    warnings: list[ConfigWarning] = []
    unknown: list[tuple] = []
    inactive: dict[str, str] = {}

    def on_unknown(path: tuple, known: list[str]) -> None:
        unknown.append(path)
        close = difflib.get_close_matches(str(path[-1]), known, n=1)
        hint = f'did you mean "{close[0]}"?' if close else "known keys here: " + ", ".join(known)
        warnings.append(ConfigWarning(file, dotted(path), f"unknown key, ignored ({hint})"))

    def on_key(path: tuple, form: tuple) -> None:
        for i in range(1, len(form) + 1):
            prefix = _INACTIVE_PARTS.get(form[:i])
            if prefix is not None:
                inactive.setdefault(prefix, dotted(path[: _raw_len(path, i)]))
                return

    walk(raw, Config, on_key, on_unknown)
    for prefix, shown in inactive.items():
        warnings.append(ConfigWarning(
            file, shown, f"not yet active ({INACTIVE[prefix]}), so it has no effect",
        ))
    return _without(raw, unknown), warnings


def _raw_len(path: tuple, n: int) -> int:
    """How many parts of the raw ``path`` correspond to the first ``n`` parts of ``form``
    (array indices appear in the path, not in the form)."""
    seen = 0
    for i, part in enumerate(path):
        if not isinstance(part, int):
            seen += 1
        if seen == n:
            return i + 1
    return len(path)


def _without(raw: dict, drop: list[tuple]) -> dict:
    if not drop:
        return raw
    clean = copy.deepcopy(raw)
    for path in drop:
        node: Any = clean
        for part in path[:-1]:
            node = node[part]
        node.pop(path[-1], None)
    return clean
