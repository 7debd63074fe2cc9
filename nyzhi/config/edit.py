"""``nyz config get`` / ``set``: dotted keys, TOML-literal values, comment-preserving edits.

``set`` edits the target layer's file with tomlkit (comments, order and layout are kept),
validates the edited layer against the schema *before* writing, and writes atomically; an
invalid key or value leaves the file byte-for-byte unchanged.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import attrs
import tomlkit
from tomlkit.items import AoT, Table

from nyzhi.config.errors import ConfigError, ConfigProblem
from nyzhi.config.fsutil import atomic_write
from nyzhi.config.loader import validate_layer
from nyzhi.config.schema import ProviderSection


def parse_key(key: str) -> tuple[str, ...]:
    """``agent.trust.mode`` -> ("agent", "trust", "mode"); quoted parts work as in TOML."""
    try:
        doc = tomllib.loads(f"{key} = 0")
    except tomllib.TOMLDecodeError:
        raise ConfigError(ConfigProblem(None, key, "a dotted key like agent.trust.mode",
                                        "an invalid key")) from None
    parts: list[str] = []
    node: Any = doc
    while isinstance(node, dict):
        (name, node), = node.items()
        parts.append(name)
    return tuple(parts)


def parse_value(text: str) -> Any:
    """A TOML literal when ``text`` is one (number, boolean, array, quoted string, inline
    table), else the text itself as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def lookup(config: Any, parts: tuple[str, ...]) -> Any:
    """The node of a Config at ``parts``; ConfigError naming the known keys if absent."""
    node = config
    for i, part in enumerate(parts):
        here = ".".join(parts[: i + 1])
        if isinstance(node, ProviderSection):
            if part == "default":
                node = node.default
            elif part in node.entries:
                node = node.entries[part]
            else:
                known = ", ".join(["default", *node.entries]) or "default"
                raise ConfigError(ConfigProblem(None, here, f"one of {known}", "no such provider"))
        elif attrs.has(type(node)):
            names = [f.name for f in attrs.fields(type(node))]
            if part not in names:
                raise ConfigError(ConfigProblem(None, here, "one of the keys " + ", ".join(names),
                                                "an unknown key"))
            node = getattr(node, part)
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise ConfigError(ConfigProblem(None, here, "an existing key", "nothing set there"))
    return node


def _load_doc(path: Path) -> tomlkit.TOMLDocument:
    from nyzhi.config.textfile import read_config_text

    text = read_config_text(path, "toml")
    if text is None:
        return tomlkit.document()
    try:
        return tomlkit.parse(text)
    except Exception as exc:  # tomlkit's ParseError and friends
        raise ConfigError(ConfigProblem(path, "", "valid TOML", f"a syntax error: {exc}")) from None


def _assign(doc: tomlkit.TOMLDocument, parts: tuple[str, ...], value: Any, path: Path) -> None:
    node: Any = doc
    for i, part in enumerate(parts[:-1]):
        here = ".".join(parts[: i + 1])
        child = node.get(part) if hasattr(node, "get") else None
        if child is None:
            child = tomlkit.table(is_super_table=True)
            node[part] = child
            child = node[part]
        elif isinstance(child, AoT | list):
            raise ConfigError(ConfigProblem(path, here, "a table", "an array (edit the file to change array entries)"))
        elif not isinstance(child, Table | dict):
            raise ConfigError(ConfigProblem(path, here, "a table", "a value"))
        node = child
    node[parts[-1]] = value


def set_value(path: Path, key: str, value_text: str, *, new_file_mode: int = 0o644) -> Any:
    """Set ``key`` to ``value_text`` in the TOML file at ``path`` (created if missing).

    Returns the parsed value. Raises ConfigError, leaving the file untouched, if the key is
    unknown or the value has the wrong type for the schema, and ``StorageError`` (the file
    untouched too) when the disk is full or read-only.
    """
    parts = parse_key(key)
    value = parse_value(value_text)
    doc = _load_doc(path)
    _assign(doc, parts, value, path)
    validate_layer(doc.unwrap(), path)
    mode = None if path.exists() else new_file_mode
    atomic_write(path, tomlkit.dumps(doc).encode("utf-8"), mode=mode, what="the config file")
    return value


def set_table(path: Path, parts: tuple[str, ...], table: dict[str, Any],
              *, new_file_mode: int = 0o644) -> bool:
    """Write ``table`` at ``parts`` (replacing what was there) in the TOML file at ``path``,
    keeping the rest of the file as it was. Validated before the atomic write; returns
    whether an earlier value was replaced."""
    doc = _load_doc(path)
    node: Any = doc
    for part in parts[:-1]:
        node = node.get(part) if hasattr(node, "get") else None
        if node is None:
            break
    replaced = node is not None and hasattr(node, "get") and node.get(parts[-1]) is not None
    new = tomlkit.table()
    for key, value in table.items():
        new[key] = tomlkit.inline_table() if isinstance(value, dict) else value
        if isinstance(value, dict):
            new[key].update(value)
    if replaced:
        node[parts[-1]] = new
    else:
        _assign(doc, parts, new, path)
    validate_layer(doc.unwrap(), path)
    mode = None if path.exists() else new_file_mode
    atomic_write(path, tomlkit.dumps(doc).encode("utf-8"), mode=mode)
    return replaced


def remove_key(path: Path, parts: tuple[str, ...]) -> bool:
    """Remove ``parts`` from the TOML file at ``path`` (atomically); False if absent."""
    if not path.exists():
        return False
    doc = _load_doc(path)
    node: Any = doc
    for part in parts[:-1]:
        node = node.get(part) if hasattr(node, "get") else None
        if node is None:
            return False
    if not hasattr(node, "get") or node.get(parts[-1]) is None:
        return False
    del node[parts[-1]]
    validate_layer(doc.unwrap(), path)
    atomic_write(path, tomlkit.dumps(doc).encode("utf-8"))
    return True
