"""JSON from someone else (a model's stream, its tool arguments), parsed within bounds.

``json.loads`` recurses once per nesting level and raises ``RecursionError`` (not
``ValueError``) past the interpreter's limit, and a value a little under that limit still ends
every recursive function after it (saving the session, cattrs, the wire encoders). It also
turns a ``\\udXXX`` escape with no partner into a lone surrogate, which no UTF-8 writer
accepts: the session log's next save failed with ``UnicodeEncodeError``.

``loads`` is ``json.loads`` with both bounds, and every error a ``ValueError`` the callers
already handle:

* nesting deeper than ``MAX_DEPTH`` arrays/objects: ``JsonTooDeep``;
* a lone surrogate in a string: replaced by U+FFFD (``surrogates="replace"``, for text shown
  or kept), or ``LoneSurrogate`` (``"refuse"``, for tool arguments: a tool must not act on a
  path or command that is not the text the model meant).

Both checks cost a C-speed count or search of the text when there is nothing to find, which is
every ordinary record: the stream decoders call this once per record.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

MAX_DEPTH = 64
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonTooDeep(ValueError):
    """Nesting deeper than the bound."""


class LoneSurrogate(ValueError):
    """A ``\\udXXX`` escape with no partner: not Unicode text."""


def depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (brackets inside strings do
    not count). Meant for text that failed the quick count in ``loads``."""
    bare = _STRING.sub('""', text)
    level = deepest = 0
    for match in _BRACKET.finditer(bare):
        if match.group() in "[{":
            level += 1
            deepest = max(deepest, level)
        else:
            level -= 1
    return deepest


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH,
          surrogates: Literal["replace", "refuse"] = "replace") -> Any:
    """``json.loads(text)`` within the bounds above; ``ValueError`` for anything else wrong."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    if text.count("[") + text.count("{") > max_depth and depth(text) > max_depth:
        raise JsonTooDeep(f"nested deeper than {max_depth} levels")
    try:
        value = json.loads(text)
    except RecursionError:  # not reachable past the check; kept so no caller ever sees it
        raise JsonTooDeep(f"nested deeper than {max_depth} levels") from None
    if _ESCAPED_SURROGATE.search(text):
        value = _mend(value, surrogates)
    return value


def scrub(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _mend(value: Any, surrogates: str) -> Any:
    """``value`` with its lone surrogates replaced (or ``LoneSurrogate`` raised)."""
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value
        if surrogates == "refuse":
            bad = _SURROGATE.search(value).group()  # type: ignore[union-attr]
            raise LoneSurrogate(f"a string holds a lone surrogate (\\u{ord(bad):04x}), "
                                "which is not Unicode text")
        return scrub(value)
    if isinstance(value, list):
        return [_mend(v, surrogates) for v in value]
    if isinstance(value, dict):
        return {_mend(k, surrogates): _mend(v, surrogates) for k, v in value.items()}
    return value
