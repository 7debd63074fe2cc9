"""Merging the raw TOML of the three layers (global < project < local), with provenance.

Merging happens on the raw dicts, before structuring, so "this layer set the key" is known
even when the value equals the built-in default: a key present in a later layer always wins,
which is how a project or local file sets a value back to its default. The rules (also in
docs/config.md):

- tables merge key by key, recursively ("maps extend");
- ``agent.hooks`` and ``agent.commands`` concatenate, earlier layers first;
- ``agent.trust.deny_tools``, ``deny_paths``, ``deny_commands``, ``agent.sandbox.hide`` and
  ``index.exclude`` are
  unions (order kept, duplicates dropped): a later layer can add to them, never remove;
- ``[[nodes]]`` merge by ``name``: a later entry with the same name replaces the earlier one;
- entries of ``mcp.servers`` and ``agent.agents.roles`` are replaced whole, not merged field
  by field (a stdio server overridden by an http one must not keep its ``command``);
- everything else (scalars, other arrays, type changes) is replaced by the later layer.
"""

from __future__ import annotations

import copy
from typing import Any

Path_ = tuple[str | int, ...]

CONCAT = {("agent", "hooks"), ("agent", "commands")}
UNION = {
    ("agent", "trust", "deny_tools"),
    ("agent", "trust", "deny_paths"),
    ("agent", "trust", "deny_commands"),
    ("agent", "sandbox", "hide"),
    ("index", "exclude"),
}
BY_NAME = {("nodes",)}
REPLACE_WHOLE = {("mcp", "servers", "*"), ("agent", "agents", "roles", "*")}


def _matches(path: Path_, patterns: set[tuple[str, ...]]) -> bool:
    for pat in patterns:
        if len(pat) == len(path) and all(a == "*" or a == b for a, b in zip(pat, path, strict=True)):
            return True
    return False


def _record_leaves(value: Any, path: Path_, label: str, sources: dict[Path_, str]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _record_leaves(item, (*path, key), label, sources)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i in range(len(value)):
            sources[(*path, i)] = label
    else:
        sources[path] = label


def _clear(path: Path_, sources: dict[Path_, str]) -> None:
    for key in [k for k in sources if k[: len(path)] == path]:
        del sources[key]


def _join(old: str | None, new: str) -> str:
    if not old:
        return new
    return old if new in old.split("+") else f"{old}+{new}"


def _merge_by_name(old: list, new: list, path: Path_, label: str, sources: dict[Path_, str]):
    merged: list = []
    labels: list[str] = []
    for i, item in enumerate(old):
        merged.append(item)
        labels.append(sources.get((*path, i), label))
    for item in new:
        name = item.get("name") if isinstance(item, dict) else None
        for i, existing in enumerate(merged):
            if name is not None and isinstance(existing, dict) and existing.get("name") == name:
                merged[i], labels[i] = copy.deepcopy(item), label
                break
        else:
            merged.append(copy.deepcopy(item))
            labels.append(label)
    _clear(path, sources)
    for i, lab in enumerate(labels):
        sources[(*path, i)] = lab
    return merged


def merge_into(base: dict, over: dict, label: str, sources: dict[Path_, str], path: Path_ = ()):
    """Merge ``over`` (one layer's raw TOML) into ``base`` in place, updating ``sources``."""
    for key, value in over.items():
        p = (*path, key)
        if key not in base:
            base[key] = copy.deepcopy(value)
            _clear(p, sources)
            _record_leaves(value, p, label, sources)
            continue
        old = base[key]
        both_lists = isinstance(old, list) and isinstance(value, list)
        if both_lists and p in CONCAT:
            base[key] = old + copy.deepcopy(value)
            for i in range(len(value)):
                sources[(*p, len(old) + i)] = label
        elif both_lists and p in UNION:
            base[key] = old + [v for v in value if v not in old]
            sources[p] = _join(sources.get(p), label)
        elif both_lists and p in BY_NAME:
            base[key] = _merge_by_name(old, value, p, label, sources)
        elif isinstance(old, dict) and isinstance(value, dict) and not _matches(p, REPLACE_WHOLE):
            merge_into(old, value, label, sources, p)
        else:
            base[key] = copy.deepcopy(value)
            _clear(p, sources)
            _record_leaves(value, p, label, sources)


def merge_layers(layers: list[tuple[str, dict]]) -> tuple[dict, dict[Path_, str]]:
    """Merge ``[(label, raw), ...]`` in order; return the merged dict and each leaf's label."""
    merged: dict = {}
    sources: dict[Path_, str] = {}
    for label, raw in layers:
        merge_into(merged, raw, label, sources)
    return merged, sources
