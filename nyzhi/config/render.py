"""Rendering a (part of a) Config as TOML, optionally annotated with where each value
came from. Used by ``nyz config show`` and ``nyz config get``. Secrets are masked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import tomlkit

from nyzhi.config.convert import dotted
from nyzhi.config.schema import ProviderSection
from nyzhi.config.secrets import is_secret_key, mask_secret

SourceFn = Callable[[tuple], str | None]  # path -> comment text, or None for no comment


def format_value(value: Any, path: tuple = ()) -> str:
    """One TOML value (secrets masked)."""
    if is_secret_key(path) and isinstance(value, str):
        value = mask_secret(value)
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, dict):
        table = tomlkit.inline_table()
        table.update({k: mask_secret(v) if is_secret_key((k,)) and isinstance(v, str) else v
                      for k, v in value.items()})
        return table.as_string()
    return tomlkit.item(value).as_string()


def _key(name: str) -> str:
    return dotted((name,))


def _is_plain_dict(v: Any) -> bool:
    return isinstance(v, dict) and not any(attrs.has(type(x)) for x in v.values())


def _children(obj: Any, path: tuple):
    """Yield (kind, path, value) for each field: kind is leaf | table | plain | aot."""
    if isinstance(obj, ProviderSection):
        yield "leaf", (*path, "default"), obj.default
        for name, entry in obj.entries.items():
            yield "table", (*path, name), entry
        return
    if isinstance(obj, dict):
        for name, item in obj.items():
            yield "table", (*path, name), item
        return
    for field in attrs.fields(type(obj)):
        value = getattr(obj, field.name)
        p = (*path, field.name)
        if attrs.has(type(value)):
            yield "table", p, value
        elif isinstance(value, dict) and value and not _is_plain_dict(value):
            for name, item in value.items():
                yield "table", (*p, name), item
        elif isinstance(value, dict) and value:
            yield "plain", p, value
        elif isinstance(value, tuple) and value and attrs.has(type(value[0])):
            yield "aot", p, value
        else:
            yield "leaf", p, value


def _line(text: str, comment: str | None) -> str:
    return f"{text}  # {comment}" if comment else text


def render(obj: Any, path: tuple = (), source: SourceFn | None = None) -> str:
    """TOML text for ``obj`` (an attrs config node) placed at ``path``."""
    out: list[str] = []
    _render(obj, path, source, out, header=False)
    return "\n".join(out).strip("\n") + "\n"


def _render(obj: Any, path: tuple, source: SourceFn | None, out: list[str], header: bool) -> None:
    src = source or (lambda p: None)
    leaves, nested = [], []
    for kind, p, value in _children(obj, path):
        (leaves if kind == "leaf" else nested).append((kind, p, value))
    if header and (leaves or not nested):
        out.append("")
        out.append(f"[{dotted(path)}]")
    for _, p, value in leaves:
        name = _key(p[-1])
        if value is None:
            comment = src(p)
            out.append(_line(f"# {name} = (unset)", None if comment == "default" else comment))
        else:
            out.append(_line(f"{name} = {format_value(value, p)}", src(p)))
    for kind, p, value in nested:
        if kind == "table":
            _render(value, p, source, out, header=True)
        elif kind == "plain":
            out.append("")
            out.append(f"[{dotted(p)}]")
            for k, v in value.items():
                out.append(_line(f"{_key(k)} = {format_value(v, (*p, k))}", src((*p, k))))
        else:  # array of tables: the item's source labels its header, not its fields
            for i, item in enumerate(value):
                out.append("")
                out.append(_line(f"[[{dotted(p)}]]", src((*p, i))))
                for kind2, p2, v2 in _children(item, p):
                    if kind2 == "leaf" and v2 is not None:
                        out.append(f"{_key(p2[-1])} = {format_value(v2, p2)}")
                    elif kind2 != "leaf":
                        out.append(f"# {_key(p2[-1])}: nested tables not shown")
