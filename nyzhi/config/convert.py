"""Raw TOML dict -> typed Config, with errors that name the key path, expectation and value.

A small structurer over the attrs classes of the schema: each type gets a plan (a function)
worked out once from its type hints, and every value is checked strictly: no ``str(5)`` for a
string, no table for an array, no key the class lacks. Every problem in a file is collected
(path, what was expected, what was found) rather than stopping at the first.

It is also the one walk of a raw layer down the schema: ``walk`` structures a layer and, in
the same pass, reports each key the schema lacks (a typo: the loader warns and drops it) and
each known key that is set (``keys.check_layer`` looks those up in ``INACTIVE``). Each plan
carries the shape of its type (``plan.shape``), which ``keys.schema_keys`` reads to list the
schema's keys for the docs test, so the schema's types are worked out here only.

Numbers are counts, sizes, seconds or ratios, so every integer and float must be finite,
non-negative and at most ``MAX_NUMBER`` (2**53: beyond it a count is meaningless and a float
conversion loses or overflows). A field may narrow that with ``metadata={"min": ..., "max":
...}`` (``agent.max_steps`` is at least 1). ``nan``, ``inf``, ``-5`` and ``10**30`` are errors
naming their file and key.

It replaced cattrs, whose converter generates and compiles code for each class at first use:
importing it and structuring the first config cost ~25 ms of every start-up, more than the
rest of loading the configuration.
"""

from __future__ import annotations

import enum
import math
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import attrs

from nyzhi.config.durations import Duration, structure_duration
from nyzhi.config.errors import ConfigError, ConfigProblem
from nyzhi.config.schema import (
    Config,
    LspConfig,
    LspServerConfig,
    McpHttpServer,
    McpServer,
    McpStdioServer,
    ProviderEntry,
    ProviderSection,
)
from nyzhi.config.thinking import EXPECTED as THINKING_EXPECTED
from nyzhi.config.thinking import ThinkingLevel, structure_thinking


class Free(str):
    """A key that is a free name (a provider, a server, a role), not a field: in the regular
    form of a path (``provider.NAME.model``) it is written ``NAME``."""

    __slots__ = ()


class _Problems(list):
    """What a pass found: the problems (this list, as (path, expected, found, hint)) and, when
    asked for, unknown keys kept aside instead of being problems, and the known keys set."""

    def __init__(self, unknown: list | None = None, keys: list | None = None) -> None:
        super().__init__()
        self.unknown = unknown  # None: an unknown key is a problem
        self.keys = keys  # None: known keys are not recorded


# A plan structures one value at a key path: it returns the typed value, or _FAILED after
# adding what is wrong to ``out`` as (path, expected, found, hint). ``plan.shape`` says what the
# type is to a schema walk: None for a leaf, ("table", {field: type}), ("map", item type),
# ("array", item type), ("provider", entry type), ("server", (stdio class, http class)),
# ("sections", ({setting: type}, entry type)) for ``[lsp]``.
_Plan = Callable[[Any, tuple, _Problems], Any]
_FAILED: Any = object()
MAX_NUMBER = 2**53


def _shaped(plan: _Plan, shape: tuple | None) -> _Plan:
    plan.shape = shape  # type: ignore[attr-defined]
    return plan


def describe(value: Any) -> str:
    """How a found value is shown in an error: its TOML type and (short) value."""
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"float {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f'string "{shown}"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return f"{type(value).__name__} {value!r}"


def _mismatch(out: _Problems, path: tuple, expected: str, value: Any) -> Any:
    out.append((path, expected, describe(value), ""))
    return _FAILED


def _expected_name(t: Any) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean (true/false)"}
    return names.get(t, getattr(t, "__name__", str(t)))


def _scalar(t: type, low: float = 0, high: float = MAX_NUMBER) -> _Plan:
    """A plain value of type ``t``; an int or float also in [low, high] and finite."""
    expected = _expected_name(t)
    numeric = t in (int, float)

    def plan(value: Any, path: tuple, out: _Problems) -> Any:
        if isinstance(value, bool) and t is not bool:
            return _mismatch(out, path, expected, value)
        if t is float and isinstance(value, int):
            value = float(value) if abs(value) <= MAX_NUMBER else value
        elif not isinstance(value, t):
            return _mismatch(out, path, expected, value)
        if numeric and not _in_range(value, low, high):
            return _mismatch(out, path, _range_text(t, low, high), value)
        return value

    return plan


def _in_range(value: Any, low: float, high: float) -> bool:
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return low <= value <= high


def _range_text(t: Any, low: float, high: float) -> str:
    kind = "an integer" if t is int else "a finite number"
    return f"{kind} from {low:g} to {'2^53' if high == MAX_NUMBER else f'{high:g}'}"


def _bounded(t: Any, low: float, high: float) -> _Plan:
    """The plan of an int or float field (perhaps optional) narrowed to [low, high]."""
    args = typing.get_args(t)
    scalar = t if t in (int, float) else next(a for a in args if a in (int, float))
    plan = _scalar(scalar, low, high)
    return _optional(plan) if type(None) in args else plan


def _duration(value: Any, path: tuple, out: _Problems) -> Any:
    try:
        return structure_duration(value)
    except ValueError:
        return _mismatch(out, path, 'a duration: "90s", "10m", "1h30m" or a number of seconds', value)


def _thinking(value: Any, path: tuple, out: _Problems) -> Any:
    try:
        return structure_thinking(value)
    except ValueError:
        return _mismatch(out, path, THINKING_EXPECTED, value)


def _any(value: Any, path: tuple, out: _Problems) -> Any:
    return value


def _choices(allowed: dict[str, Any]) -> _Plan:
    """A Literal of strings or a StrEnum: the value must be one of ``allowed`` (by its text)."""
    expected = "one of " + ", ".join(f'"{a}"' for a in allowed)

    def plan(value: Any, path: tuple, out: _Problems) -> Any:
        if not isinstance(value, str) or value not in allowed:
            return _mismatch(out, path, expected, value)
        return allowed[value]

    return plan


def _optional(inner: _Plan) -> _Plan:
    def plan(value: Any, path: tuple, out: _Problems) -> Any:
        return None if value is None else inner(value, path, out)

    return _shaped(plan, inner.shape)  # type: ignore[attr-defined]


def _array(item: Any) -> _Plan:
    def plan(value: Any, path: tuple, out: _Problems) -> Any:
        if not isinstance(value, list | tuple):
            return _mismatch(out, path, "an array", value)
        each = _plan(item)
        items = [each(v, (*path, i), out) for i, v in enumerate(value)]
        return _FAILED if any(v is _FAILED for v in items) else tuple(items)

    return _shaped(plan, ("array", item))


def _table(item: Any) -> _Plan:
    def plan(value: Any, path: tuple, out: _Problems) -> Any:
        if not isinstance(value, dict):
            return _mismatch(out, path, "a table", value)
        if item is Any:
            return dict(value)
        each = _plan(item)
        keys = out.keys
        items = {}
        for k, v in value.items():
            here = (*path, Free(k))
            if keys is not None:
                keys.append(here)
            items[k] = each(v, here, out)
        return _FAILED if any(v is _FAILED for v in items.values()) else items

    return _shaped(plan, ("map", item))


def _attrs_class(cl: type) -> _Plan:
    """Every field by its name; a missing required one, or a key the class lacks, is an error
    (unknown keys listed last, sorted, each with a close match when there is one), unless the
    pass keeps unknown keys aside (``out.unknown``)."""
    hints = typing.get_type_hints(cl)
    fields = [(f.name, f.alias, hints[f.name], f.default is attrs.NOTHING) for f in attrs.fields(cl)]
    # per-field narrower ranges ({"min": ..., "max": ...} in a field's metadata)
    bounded = {f.name: _bounded(hints[f.name], f.metadata.get("min", 0),
                                f.metadata.get("max", MAX_NUMBER))
               for f in attrs.fields(cl) if "min" in f.metadata or "max" in f.metadata}
    known = [name for name, *_ in fields]
    known_set = frozenset(known)
    expected_key = "one of the keys " + ", ".join(known) if known else "no such key"

    def plan(value: Any, path: tuple, out: _Problems) -> Any:
        if not isinstance(value, dict):
            return _mismatch(out, path, "a table", value)
        before = len(out)
        keys = out.keys
        kwargs = {}
        for name, alias, t, required in fields:
            if name in value:
                if keys is not None:
                    keys.append((*path, name))
                kwargs[alias] = bounded.get(name, _plan(t))(value[name], (*path, name), out)
            elif required:
                out.append(((*path, name), "a value (this key is required)", "nothing", ""))
        if len(value) > len(kwargs):
            for extra in sorted(set(value) - known_set) if out.unknown is None else (
                    k for k in value if k not in known_set):
                if out.unknown is not None:
                    out.unknown.append(((*path, extra), known))
                    continue
                import difflib  # only for a config with a typo

                close = difflib.get_close_matches(extra, known, n=1)
                hint = f'did you mean "{close[0]}"?' if close else ""
                out.append(((*path, extra), expected_key, "an unknown key", hint))
        if len(out) > before:
            return _FAILED
        try:
            return cl(**kwargs)
        except Exception as exc:  # a class that checks its values: said at its own key
            return _mismatch(out, path, str(exc) or type(exc).__name__, value)

    return _shaped(plan, ("table", {name: t for name, _alias, t, _req in fields}))


def _provider_section(value: Any, path: tuple, out: _Problems) -> Any:
    """``[provider]``: ``default`` is a string, every other key a provider's table."""
    if not isinstance(value, dict):
        return _mismatch(out, path, "a table", value)
    default = None
    entries: dict[str, ProviderEntry] = {}
    failed = False
    keys = out.keys
    for key, item in value.items():
        here = (*path, key if key == "default" else Free(key))
        if keys is not None:
            keys.append(here)
        if key == "default":
            default = _plan(str)(item, here, out)
            failed = failed or default is _FAILED
        else:
            entries[key] = _plan(ProviderEntry)(item, here, out)
            failed = failed or entries[key] is _FAILED
    return _FAILED if failed else ProviderSection(default=default, entries=entries)


_shaped(_provider_section, ("provider", ProviderEntry))


def _mcp_server(value: Any, path: tuple, out: _Problems) -> Any:
    """A server table is stdio (it has ``command``) or http (it has ``url``)."""
    if isinstance(value, dict) and "command" in value:
        return _plan(McpStdioServer)(value, path, out)
    if isinstance(value, dict) and "url" in value:
        return _plan(McpHttpServer)(value, path, out)
    return _mismatch(out, path, 'a table with "command" (stdio server) or "url" (http server)', value)


_shaped(_mcp_server, ("server", (McpStdioServer, McpHttpServer)))


def _lsp_section(value: Any, path: tuple, out: _Problems) -> Any:
    """``[lsp]``: its settings, and every key holding a table is a server (``[lsp.NAME]``)."""
    if not isinstance(value, dict):
        return _mismatch(out, path, "a table", value)
    settings = {k: v for k, v in value.items() if not isinstance(v, dict)}
    servers: dict[str, Any] = {}
    failed = False
    for key, item in value.items():
        if isinstance(item, dict):
            here = (*path, Free(key))
            if out.keys is not None:
                out.keys.append(here)
            servers[key] = _plan(LspServerConfig)(item, here, out)
            failed = failed or servers[key] is _FAILED
    section = _LSP_SETTINGS(settings, path, out)
    if failed or section is _FAILED:
        return _FAILED
    return attrs.evolve(section, servers=servers)


# The settings are LspConfig's own fields (``servers`` is never a scalar, so a scalar
# ``servers = 1`` is reported there as not a table).
_LSP_SETTINGS = _attrs_class(LspConfig)
_shaped(_lsp_section, ("sections", (_LSP_SETTINGS.shape[1], LspServerConfig)))  # type: ignore[attr-defined]


_PLANS: dict[Any, _Plan] = {
    str: _scalar(str), int: _scalar(int), float: _scalar(float), bool: _scalar(bool),
    Any: _any, Duration: _duration, ThinkingLevel: _thinking,
    ProviderSection: _provider_section, McpServer: _mcp_server, LspConfig: _lsp_section,
}
for _leaf in _PLANS.values():
    if not hasattr(_leaf, "shape"):
        _shaped(_leaf, None)


def _make_plan(t: Any) -> _Plan:
    origin, args = typing.get_origin(t), typing.get_args(t)
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return _shaped(_choices({m.value: m for m in t}), None)
    if origin is Literal:
        return _shaped(_choices({a: a for a in args}), None)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        rest = tuple(a for a in args if a is not type(None))
        return _optional(_plan(rest[0] if len(rest) == 1 else typing.Union[rest]))  # noqa: UP007
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _array(args[0])
    if origin is dict:
        return _table(args[1])
    if attrs.has(t):
        return _attrs_class(t)
    raise TypeError(f"no config structuring for {t!r}")


def _plan(t: Any) -> _Plan:
    """The plan for ``t``, worked out at its first use."""
    plan = _PLANS.get(t)
    if plan is None:
        plan = _PLANS[t] = _make_plan(t)
    return plan


# ---- paths -------------------------------------------------------------------------------


def dotted(path: tuple) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = part if part.replace("_", "").replace("-", "").isalnum() else f'"{part}"'
            out += ("." if out else "") + text
    return out


def structure(raw: dict, file: Path | None = None, cls: type = Config) -> Any:
    """Build ``cls`` from a raw TOML dict; raise ConfigError listing every problem (a key the
    schema lacks is one)."""
    out = _Problems()
    value = _plan(cls)(raw, (), out)
    if out:
        raise _error(out, file)
    return value


def _error(out: _Problems, file: Path | None) -> ConfigError:
    return ConfigError([ConfigProblem(file, dotted(p), exp, found, hint) for p, exp, found, hint in out])


@attrs.frozen
class Walked:
    """One pass over a layer: the value (None when there were problems), the problems as a
    ConfigError (or None), each unknown key as (path, the keys known there), and each known
    key set, as its path (free names are ``Free``)."""

    value: Any
    error: ConfigError | None
    unknown: list[tuple[tuple, list[str]]]
    keys: list[tuple]


def walk(raw: dict, file: Path | None = None, cls: type = Config) -> Walked:
    """Structure ``raw`` (one layer) as ``cls`` in one pass that also reports the keys the
    schema lacks (left out of the value, not problems) and the known keys that are set."""
    out = _Problems(unknown=[], keys=[])
    value = _plan(cls)(raw, (), out)
    return Walked(None if out else value, _error(out, file) if out else None, out.unknown or [],
                  out.keys or [])


def shape(t: Any) -> tuple | None:
    """What ``t`` is to a schema walk (see ``_Plan``)."""
    return _plan(t).shape  # type: ignore[attr-defined]
