"""Raw TOML dict -> typed Config, with errors that name the key path, expectation and value.

A small structurer over the attrs classes of the schema: each type gets a plan (a function)
worked out once from its type hints, and every value is checked strictly: no ``str(5)`` for a
string, no table for an array, no key the class lacks. Every problem in a file is collected
(path, what was expected, what was found) rather than stopping at the first.

It replaced cattrs, whose converter generates and compiles code for each class at first use:
importing it and structuring the first config cost ~25 ms of every start-up, more than the
rest of loading the configuration.
"""

from __future__ import annotations

import enum
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
    McpHttpServer,
    McpServer,
    McpStdioServer,
    ProviderEntry,
    ProviderSection,
)
from nyzhi.config.thinking import EXPECTED as THINKING_EXPECTED
from nyzhi.config.thinking import ThinkingLevel, structure_thinking

# A plan structures one value at a key path: it returns the typed value, or _FAILED after
# adding what is wrong to ``out`` as (path, expected, found, hint).
_Problems = list[tuple[tuple, str, str, str]]
_Plan = Callable[[Any, tuple, _Problems], Any]
_FAILED: Any = object()


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


def _scalar(t: type) -> _Plan:
    expected = _expected_name(t)

    def plan(value: Any, path: tuple, out: _Problems) -> Any:
        if isinstance(value, bool) and t is not bool:
            return _mismatch(out, path, expected, value)
        if t is float and isinstance(value, int):
            return float(value)
        if not isinstance(value, t):
            return _mismatch(out, path, expected, value)
        return value

    return plan


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

    return plan


def _array(item: Any) -> _Plan:
    def plan(value: Any, path: tuple, out: _Problems) -> Any:
        if not isinstance(value, list | tuple):
            return _mismatch(out, path, "an array", value)
        each = _plan(item)
        items = [each(v, (*path, i), out) for i, v in enumerate(value)]
        return _FAILED if any(v is _FAILED for v in items) else tuple(items)

    return plan


def _table(item: Any) -> _Plan:
    def plan(value: Any, path: tuple, out: _Problems) -> Any:
        if not isinstance(value, dict):
            return _mismatch(out, path, "a table", value)
        if item is Any:
            return dict(value)
        each = _plan(item)
        items = {k: each(v, (*path, k), out) for k, v in value.items()}
        return _FAILED if any(v is _FAILED for v in items.values()) else items

    return plan


def _attrs_class(cl: type) -> _Plan:
    """Every field by its name; a missing required one, or a key the class lacks, is an error
    (unknown keys listed last, sorted, each with a close match when there is one)."""
    hints = typing.get_type_hints(cl)
    fields = [(f.name, f.alias, hints[f.name], f.default is attrs.NOTHING) for f in attrs.fields(cl)]
    known = [name for name, *_ in fields]
    known_set = frozenset(known)
    expected_key = "one of the keys " + ", ".join(known) if known else "no such key"

    def plan(value: Any, path: tuple, out: _Problems) -> Any:
        if not isinstance(value, dict):
            return _mismatch(out, path, "a table", value)
        before = len(out)
        kwargs = {}
        for name, alias, t, required in fields:
            if name in value:
                kwargs[alias] = _plan(t)(value[name], (*path, name), out)
            elif required:
                out.append(((*path, name), "a value (this key is required)", "nothing", ""))
        for extra in sorted(set(value) - known_set):
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

    return plan


def _provider_section(value: Any, path: tuple, out: _Problems) -> Any:
    """``[provider]``: ``default`` is a string, every other key a provider's table."""
    if not isinstance(value, dict):
        return _mismatch(out, path, "a table", value)
    default = None
    entries: dict[str, ProviderEntry] = {}
    failed = False
    for key, item in value.items():
        if key == "default":
            default = _plan(str)(item, (*path, key), out)
            failed = failed or default is _FAILED
        else:
            entries[key] = _plan(ProviderEntry)(item, (*path, key), out)
            failed = failed or entries[key] is _FAILED
    return _FAILED if failed else ProviderSection(default=default, entries=entries)


def _mcp_server(value: Any, path: tuple, out: _Problems) -> Any:
    """A server table is stdio (it has ``command``) or http (it has ``url``)."""
    if isinstance(value, dict) and "command" in value:
        return _plan(McpStdioServer)(value, path, out)
    if isinstance(value, dict) and "url" in value:
        return _plan(McpHttpServer)(value, path, out)
    return _mismatch(out, path, 'a table with "command" (stdio server) or "url" (http server)', value)


_PLANS: dict[Any, _Plan] = {
    str: _scalar(str), int: _scalar(int), float: _scalar(float), bool: _scalar(bool),
    Any: _any, Duration: _duration, ThinkingLevel: _thinking,
    ProviderSection: _provider_section, McpServer: _mcp_server,
}


def _make_plan(t: Any) -> _Plan:
    origin, args = typing.get_origin(t), typing.get_args(t)
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return _choices({m.value: m for m in t})
    if origin is Literal:
        return _choices({a: a for a in args})
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
    """Build ``cls`` from a raw TOML dict; raise ConfigError listing every problem."""
    out: _Problems = []
    value = _plan(cls)(raw, (), out)
    if out:
        raise ConfigError([ConfigProblem(file, dotted(p), exp, found, hint) for p, exp, found, hint in out])
    return value
