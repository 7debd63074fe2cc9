"""Front matter: the YAML block between ``---`` lines at the top of a Markdown definition file.

The one parser for every such file nyz reads: roles (``.nyzhi/agents``, ``.claude/agents``),
skills, custom commands and plans. The block is YAML, and files written for Claude Code use
more of it than ``key: value`` (folded ``description: >`` and literal ``|`` scalars, block and
inline lists), so it is read by PyYAML's safe loader, imported on the first file that has
front matter: a workspace without such files does not pay for the import.

Two departures from plain YAML, both for the files people actually write:

- ``yes``/``no``/``on``/``off`` stay strings (YAML 1.2's rule); only ``true``/``false`` are
  booleans, so ``description: No`` is not ``False``;
- a key given twice is an error, where YAML would keep the last value silently.

And one retry: a block that is not valid YAML only because a one-line value holds ``: `` or
`` #`` (``description: Use it when: the build fails``, common in agent files in the wild) is
read again with those values quoted. Anything else that is not YAML is a ``FrontMatterError``
naming the file and line; callers report it in one line and skip the file.

On top of the YAML sits our validation (``check_fields``): each kind of file declares its keys
(``Key``); an unknown key is a warning naming the file, a value of the wrong type an error
naming the key, what it should be and what was found. Every string that can reach a prompt is
capped there: a name longer than its cap is an error (a cut name would match nothing), a text
is cut.
"""

from __future__ import annotations

import functools
import re
import reprlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nyzhi import records
from nyzhi.textcut import cut

NAME_CAP = 64  # characters in a skill or role name (Claude Code's limit for skill names)
TEXT_CAP = 1024  # characters of a description that reaches a prompt (Claude Code's limit)
LIST_ITEM_CAP = 128  # characters in one tool or server name of a list

# Kinds of value a key may hold (``Key.kind``).
TEXT = "text"  # a string; cut to the cap
NAME = "name"  # a one-line string; longer than the cap is an error
NAMES = "names"  # a comma-separated string or a list of strings; a tuple of stripped names
COUNT = "count"  # a whole number (not a boolean)
FLAG = "flag"  # true or false
ANY = "any"  # read and not checked (keys we accept but do not use, such as Claude's ``color``)

_WHAT = {
    TEXT: "a string", NAME: "a name", NAMES: "a list of names (or a comma list)",
    COUNT: "a whole number", FLAG: "true or false",
}
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict = 2, 4, 4


def _show(value: Any) -> str:
    """A short repr for an error message: a value built of YAML aliases can be huge."""
    return cut(_REPR.repr(value), 80, one_line=False, rstrip=True)


class FrontMatterError(ValueError):
    """Front matter that cannot be used; the message is one line naming the file."""


@records.frozen
class Key:
    """One key a kind of file may set: its kind (``TEXT``, ``NAME``, …), for strings the cap
    in characters (0: the kind's default), and what errors call the expected value ("" : the
    kind's own words)."""

    kind: str
    cap: int = 0
    what: str = ""


def split_front_matter(text: str, source: Path | str = "<text>") -> tuple[dict[str, Any], str]:
    """``(fields, body)``: the YAML mapping between the leading ``---`` lines and the rest,
    stripped. Text without a leading ``---`` line has no fields. ``FrontMatterError`` for a
    block that is never closed, is not YAML, or is not a mapping."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text.lstrip("\ufeff").strip()
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            return _parse(lines[1:end], source), "\n".join(lines[end + 1:]).strip()
    raise FrontMatterError(f"{source}: line 1: front matter opened with '---' is never closed")


def _parse(lines: list[str], source: Path | str) -> dict[str, Any]:
    if not any(line.strip() for line in lines):
        return {}
    import yaml

    try:
        data = _load("\n".join(lines))
    except yaml.YAMLError as exc:
        retry = _quote_plain_values(lines)
        if retry == lines:
            raise FrontMatterError(_describe(exc, source)) from None
        try:
            data = _load("\n".join(retry))
        except yaml.YAMLError:
            raise FrontMatterError(_describe(exc, source)) from None  # the first error is the real one
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontMatterError(
            f"{source}: front matter must be 'key: value' lines, found {type(data).__name__}")
    return {str(key): value for key, value in data.items()}


def _load(text: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_loader())  # noqa: S506 (a SafeLoader subclass)
    except RecursionError:
        raise yaml.YAMLError("values are nested too deeply") from None


@functools.cache
def _loader() -> type:
    """PyYAML's safe loader (the C one where built) with the two rules of the module
    docstring: YAML 1.2 booleans, and no key twice."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class FrontMatterLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _value in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    twice = key in seen
                    seen.add(key)
                except TypeError:
                    continue  # an unhashable key: the base class names that error
                if twice:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} appears twice", key_node.start_mark)
            return super().construct_mapping(node, deep=deep)

    resolvers = {
        first: [(tag, rx) for tag, rx in entries if tag != "tag:yaml.org,2002:bool"]
        for first, entries in base.yaml_implicit_resolvers.items()
    }
    FrontMatterLoader.yaml_implicit_resolvers = resolvers
    FrontMatterLoader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )
    return FrontMatterLoader


def _describe(exc: Exception, source: Path | str) -> str:
    """One line: the file, the line in the file (the block starts on line 2), the problem."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if problem:
        what = f"{problem} {context}" if context else problem
    else:
        what = " ".join(str(exc).split()) or type(exc).__name__
    where = f" line {mark.line + 2}:" if mark is not None else ""
    return f"{source}:{where} front matter is not valid YAML: {what}"


_PLAIN = re.compile(r"^([A-Za-z_][\w.-]*)\s*:\s+(\S.*?)\s*$")


def _quote_plain_values(lines: list[str]) -> list[str]:
    """``lines`` with each top-level one-line plain value that YAML would misread (it holds
    ``: `` or `` #``) written as a single-quoted scalar."""
    out = []
    for line in lines:
        match = _PLAIN.match(line)
        value = match.group(2) if match else ""
        if match and value[0] not in "'\"[{|>&*!%@`#" and (": " in value or " #" in value):
            line = f"{match.group(1)}: '{value.replace(chr(39), chr(39) * 2)}'"
        out.append(line)
    return out


# ---- our validation on top ----------------------------------------------------------------------


def check_fields(
    fields: Mapping[str, Any], keys: Mapping[str, Key], source: Path | str,
) -> tuple[dict[str, Any], list[str]]:
    """``(values, warnings)``: the known keys' values checked and converted (``NAMES`` to a
    tuple, strings capped; a key set to null is left out), and a warning per unknown key.
    ``FrontMatterError`` naming the file and key for a value of the wrong type or a name over
    its cap."""
    values: dict[str, Any] = {}
    warnings = []
    unknown = [key for key in fields if key not in keys]
    if unknown:
        known = ", ".join(sorted(keys))
        warnings = [f"{source}: unknown key {_show(key)} ignored (known: {known})"
                    for key in unknown]
    for key, spec in keys.items():
        value = fields.get(key)
        if value is not None:
            values[key] = _check(value, spec, key, source)
    return values, warnings


def _check(value: Any, spec: Key, key: str, source: Path | str) -> Any:
    def wrong(what: str = "") -> FrontMatterError:
        found = what or f"found {_show(value)}"
        return FrontMatterError(
            f"{source}: {key}: expected {spec.what or _WHAT[spec.kind]}, {found}")

    kind = spec.kind
    if kind == ANY:
        return value
    if kind == FLAG:
        if not isinstance(value, bool):
            raise wrong()
        return value
    if kind == COUNT:
        if not isinstance(value, int) or isinstance(value, bool):
            raise wrong()
        return value
    if kind == TEXT:
        if not isinstance(value, str):
            raise wrong()
        return cut(value.strip(), spec.cap or TEXT_CAP, one_line=False, rstrip=True)
    if kind == NAME:
        if not isinstance(value, str):
            raise wrong()
        return check_name(value, f"{source}: {key}", spec.cap or NAME_CAP)
    if kind == NAMES:
        if isinstance(value, str):
            items = value.split(",")
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            items = value
        else:
            raise wrong()
        cap = spec.cap or LIST_ITEM_CAP
        names = tuple(dict.fromkeys(v.strip() for v in items if v.strip()))
        for name in names:
            if len(name) > cap or not name.isprintable():
                raise wrong(f"found {_show(name)} (names are one line of at most {cap} "
                            "characters)")
        return names
    raise ValueError(f"unknown kind of front matter key: {kind!r}")


def check_name(name: str, where: str, cap: int = NAME_CAP) -> str:
    """``name`` stripped, if it is one printable line of at most ``cap`` characters;
    ``FrontMatterError`` naming ``where`` otherwise."""
    name = name.strip()
    if not name or len(name) > cap or not name.isprintable():
        raise FrontMatterError(
            f"{where}: expected a name of one line and at most {cap} characters, found "
            f"{_show(name)} ({len(name)} characters)")
    return name


def first_prose_line(body: str, limit: int = 120) -> str:
    """The first non-empty line that is not a heading, cut to ``limit`` characters; a leading
    ``# heading`` is used only when there is nothing else."""
    heading = ""
    for line in body.splitlines():
        text = line.strip()
        if not text:
            continue
        if text.startswith("#"):
            heading = heading or text.lstrip("#").strip()
            continue
        return cut(text, limit, one_line=False, rstrip=True)
    return cut(heading, limit, one_line=False, rstrip=True)
