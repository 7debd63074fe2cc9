"""Raw TOML dict -> typed Config, with errors that name the key path, expectation and value.

cattrs does the structuring. Its default hooks are lenient (``str(5)`` is accepted for a
string, any iterable for a tuple), which would hide typos in a config file, so scalars,
arrays and tables get strict hooks here. Failures are collected (cattrs detailed validation)
and translated into ``ConfigProblem``s by walking the exception group and its path notes.
"""

from __future__ import annotations

import difflib
import enum
import typing
from pathlib import Path
from typing import Any, Literal

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn

from nyzhi.config.durations import Duration, structure_duration
from nyzhi.config.errors import ConfigError, ConfigProblem
from nyzhi.config.modes import SandboxLevel, TrustMode
from nyzhi.config.schema import (
    Config,
    McpHttpServer,
    McpServer,
    McpStdioServer,
    ProviderEntry,
    ProviderSection,
)


class _Mismatch(TypeError):
    """A value of the wrong type or outside an enumeration."""

    def __init__(self, expected: str, value: Any):
        super().__init__(f"expected {expected}")
        self.expected = expected
        self.value = value


class _Group(ExceptionGroup):  # noqa: N818 - a container, like cattrs' own
    pass


def _at(exc: BaseException, key: str | int) -> BaseException:
    exc.add_note(IterableValidationNote(f"@ {key!r}", key, Any))
    return exc


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


def _expected_name(t: Any) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean (true/false)"}
    return names.get(t, getattr(t, "__name__", str(t)))


def _scalar(t: type):
    def hook(value: Any, _: Any) -> Any:
        ok = isinstance(value, t) and not (t is not bool and isinstance(value, bool))
        if t is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not ok:
            raise _Mismatch(_expected_name(t), value)
        return value

    return hook


def _duration(value: Any, _: Any) -> Duration:
    try:
        return structure_duration(value)
    except ValueError:
        raise _Mismatch('a duration: "90s", "10m", "1h30m" or a number of seconds', value) from None


def _is_literal(t: Any) -> bool:
    return typing.get_origin(t) is Literal


def _literal_factory(t: Any):
    allowed = typing.get_args(t)
    expected = "one of " + ", ".join(f'"{a}"' for a in allowed)

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, str) or value not in allowed:
            raise _Mismatch(expected, value)
        return value

    return hook


def _enum_factory(t: type[enum.Enum]):
    allowed = {m.value: m for m in t}
    expected = "one of " + ", ".join(f'"{a}"' for a in allowed)

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, str) or value not in allowed:
            raise _Mismatch(expected, value)
        return allowed[value]

    return hook


def _is_var_tuple(t: Any) -> bool:
    args = typing.get_args(t)
    return typing.get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis


def _is_str_dict(t: Any) -> bool:
    return typing.get_origin(t) is dict


def _make_factories(conv: cattrs.Converter):
    def tuple_factory(t: Any):
        inner = typing.get_args(t)[0]

        def hook(value: Any, _: Any) -> tuple:
            if not isinstance(value, list | tuple):
                raise _Mismatch("an array", value)
            out, errors = [], []
            for i, item in enumerate(value):
                try:
                    out.append(conv.structure(item, inner))
                except Exception as exc:  # collected, reported with its index
                    errors.append(_at(exc, i))
            if errors:
                raise _Group("array", errors)
            return tuple(out)

        return hook

    def dict_factory(t: Any):
        inner = typing.get_args(t)[1]

        def hook(value: Any, _: Any) -> dict:
            if not isinstance(value, dict):
                raise _Mismatch("a table", value)
            out, errors = {}, []
            for key, item in value.items():
                try:
                    out[key] = item if inner is Any else conv.structure(item, inner)
                except Exception as exc:
                    errors.append(_at(exc, key))
            if errors:
                raise _Group("table", errors)
            return out

        return hook

    def attrs_factory(cl: type):
        base = make_dict_structure_fn(
            cl, conv, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True
        )

        def hook(value: Any, _: Any) -> Any:
            if not isinstance(value, dict):
                raise _Mismatch("a table", value)
            return base(value, cl)

        return hook

    return tuple_factory, dict_factory, attrs_factory


def _provider_section(conv: cattrs.Converter):
    def hook(value: Any, _: Any) -> ProviderSection:
        if not isinstance(value, dict):
            raise _Mismatch("a table", value)
        errors: list[BaseException] = []
        default = None
        entries: dict[str, ProviderEntry] = {}
        for key, item in value.items():
            try:
                if key == "default":
                    default = conv.structure(item, str)
                else:
                    entries[key] = conv.structure(item, ProviderEntry)
            except Exception as exc:
                errors.append(_at(exc, key))
        if errors:
            raise _Group("provider", errors)
        return ProviderSection(default=default, entries=entries)

    return hook


def _mcp_server(conv: cattrs.Converter):
    def hook(value: Any, _: Any) -> McpServer:
        if isinstance(value, dict) and "command" in value:
            return conv.structure(value, McpStdioServer)
        if isinstance(value, dict) and "url" in value:
            return conv.structure(value, McpHttpServer)
        raise _Mismatch('a table with "command" (stdio server) or "url" (http server)', value)

    return hook


def make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for t in (str, int, float, bool):
        conv.register_structure_hook(t, _scalar(t))
    for mode in (TrustMode, SandboxLevel):
        # by class, so they win over the str hook above (they are StrEnums)
        conv.register_structure_hook(mode, _enum_factory(mode))
    conv.register_structure_hook(Any, lambda v, _: v)
    conv.register_structure_hook(Duration, _duration)
    tuple_factory, dict_factory, attrs_factory = _make_factories(conv)
    conv.register_structure_hook_factory(attrs.has, attrs_factory)
    conv.register_structure_hook_factory(_is_literal, _literal_factory)
    conv.register_structure_hook_factory(_is_var_tuple, tuple_factory)
    conv.register_structure_hook_factory(_is_str_dict, dict_factory)
    conv.register_structure_hook_func(lambda t: t is ProviderSection, _provider_section(conv))
    conv.register_structure_hook_func(lambda t: t == McpServer, _mcp_server(conv))
    return conv


_CONVERTER: cattrs.Converter | None = None


def converter() -> cattrs.Converter:
    global _CONVERTER
    if _CONVERTER is None:
        _CONVERTER = make_converter()
    return _CONVERTER


# ---- error translation -------------------------------------------------------------------


def _path_of(exc: BaseException, path: tuple) -> tuple:
    for note in getattr(exc, "__notes__", ()):
        if isinstance(note, AttributeValidationNote):
            return (*path, note.name)
        if isinstance(note, IterableValidationNote):
            return (*path, note.index)
    return path


def dotted(path: tuple) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = part if part.replace("_", "").replace("-", "").isalnum() else f'"{part}"'
            out += ("." if out else "") + text
    return out


def _lookup(raw: Any, path: tuple) -> Any:
    for part in path:
        try:
            raw = raw[part]
        except (KeyError, IndexError, TypeError):
            return None
    return raw


def _known_keys(cl: type) -> list[str]:
    return [f.name for f in attrs.fields(cl)] if attrs.has(cl) else []


def _problems(exc: BaseException, path: tuple, raw: dict, file: Path | None, out: list) -> None:
    if isinstance(exc, ForbiddenExtraKeysError):
        known = _known_keys(exc.cl)
        for extra in sorted(exc.extra_fields):
            close = difflib.get_close_matches(extra, known, n=1)
            hint = f'did you mean "{close[0]}"?' if close else ""
            expected = "one of the keys " + ", ".join(known) if known else "no such key"
            out.append(ConfigProblem(file, dotted((*path, extra)), expected, "an unknown key", hint))
        return
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            _problems(sub, _path_of(sub, path), raw, file, out)
        return
    if isinstance(exc, _Mismatch):
        out.append(ConfigProblem(file, dotted(path), exc.expected, describe(exc.value)))
    elif isinstance(exc, KeyError):
        out.append(ConfigProblem(file, dotted(path), "a value (this key is required)", "nothing"))
    else:
        found = _lookup(raw, path)
        out.append(ConfigProblem(file, dotted(path), str(exc) or type(exc).__name__, describe(found)))


def structure(raw: dict, file: Path | None = None, cls: type = Config) -> Any:
    """Build ``cls`` from a raw TOML dict; raise ConfigError listing every problem."""
    try:
        return converter().structure(raw, cls)
    except (ClassValidationError, _Group, _Mismatch, ForbiddenExtraKeysError) as exc:
        problems: list[ConfigProblem] = []
        _problems(exc, _path_of(exc, ()), raw, file, problems)
        raise ConfigError(problems) from None

