"""Front matter of Markdown definition files (agent roles; later commands and skills).

A file may start with a block between two ``---`` lines; the rest is the body. The block is the
small subset of YAML these files use in practice (Claude Code's ``.claude/agents/*.md`` among
them), parsed here rather than with a YAML library because that subset is all we accept:

- ``key: value`` with plain, ``"double-quoted"`` (backslash escapes) or ``'single-quoted'``
  values; ``true``/``false``, integers and numbers become Python values;
- ``key: [a, b]`` inline lists and block lists (``- a`` on the following lines);
- ``key: |`` / ``key: >`` block scalars (the indented lines that follow);
- ``# comments`` and blank lines.

Anything else (nested mappings, anchors, a key twice) is a ``FrontMatterError`` naming the file
and line, never a silent guess.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:(?:\s+(.*))?$")


class FrontMatterError(ValueError):
    """A malformed front matter block; the message names the file and line."""


def split_front_matter(text: str, source: Path | str = "<text>") -> tuple[dict[str, Any], str]:
    """``(fields, body)``. A file without a leading ``---`` line has no fields."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text.strip()
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            fields = parse_block(lines[1:end], source, first_line=2)
            return fields, "\n".join(lines[end + 1:]).strip()
    raise FrontMatterError(f"{source}: line 1: front matter opened with '---' is never closed")


def parse_block(lines: list[str], source: Path | str, first_line: int = 1) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    i = 0

    def fail(at: int, what: str) -> FrontMatterError:
        return FrontMatterError(f"{source}: line {first_line + at}: {what}")

    while i < len(lines):
        raw = lines[i]
        if not raw.strip() or raw.lstrip().startswith("#"):
            i += 1
            continue
        if raw[0].isspace():
            raise fail(i, f"unexpected indentation: {raw.strip()!r} (nested values are not supported)")
        match = _KEY.match(raw.rstrip())
        if not match:
            raise fail(i, f"expected 'key: value', found {raw.strip()!r}")
        key, value = match.group(1), (match.group(2) or "").strip()
        if key in fields:
            raise fail(i, f"key {key!r} appears twice")
        i += 1
        if value in ("|", ">", "|-", ">-", "|+", ">+"):
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i][0].isspace()):
                block.append(lines[i])
                i += 1
            fields[key] = _block_scalar(block, folded=value.startswith(">"))
        elif value == "" or value.startswith("#"):
            items: list[Any] = []
            while i < len(lines) and re.match(r"^\s*-(\s|$)", lines[i]):
                items.append(_scalar(lines[i].strip()[1:].strip(), lambda w, at=i: fail(at, w)))
                i += 1
            fields[key] = items if items else None
        else:
            fields[key] = _value(value, lambda what, at=i - 1: fail(at, what))
    return fields


def _block_scalar(block: list[str], *, folded: bool) -> str:
    indents = [len(b) - len(b.lstrip()) for b in block if b.strip()]
    cut = min(indents) if indents else 0
    text_lines = [b[cut:] if b.strip() else "" for b in block]
    while text_lines and not text_lines[-1]:
        text_lines.pop()
    if not folded:
        return "\n".join(text_lines)
    paragraphs, current = [], []
    for line in text_lines:
        if line:
            current.append(line.strip())
        else:
            paragraphs.append(" ".join(current))
            current = []
    paragraphs.append(" ".join(current))
    return "\n".join(p for p in paragraphs)


def _value(text: str, fail: Any) -> Any:
    if text.startswith("["):
        if not text.rstrip().endswith("]"):
            raise fail(f"unclosed list: {text!r}")
        inner = text.strip()[1:-1].strip()
        return [_scalar(part.strip(), fail) for part in _split_commas(inner)] if inner else []
    if text.startswith("{"):
        raise fail("inline mappings are not supported")
    return _scalar(text, fail)


def _split_commas(text: str) -> list[str]:
    """Split at commas outside quotes."""
    parts, current, quote = [], [], ""
    for ch in text:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            current.append(ch)
        elif ch == ",":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _scalar(text: str, fail: Any) -> Any:
    if text.startswith('"'):
        end = _closing_double_quote(text)
        if end < 0:
            raise fail(f"unclosed double quote: {text!r}")
        try:
            value = json.loads(text[: end + 1])
        except ValueError as exc:
            raise fail(f"bad escape in {text[: end + 1]!r}: {exc}") from None
        _only_comment_after(text[end + 1:], fail)
        return value
    if text.startswith("'"):
        match = re.match(r"'((?:[^']|'')*)'", text)
        if not match:
            raise fail(f"unclosed single quote: {text!r}")
        _only_comment_after(text[match.end():], fail)
        return match.group(1).replace("''", "'")
    text = re.split(r"\s+#", text, maxsplit=1)[0].strip()
    lowered = text.lower()
    if lowered in ("true", "yes"):
        return True
    if lowered in ("false", "no"):
        return False
    if lowered in ("null", "~", ""):
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d*", text):
        return float(text)
    return text


def _closing_double_quote(text: str) -> int:
    escaped = False
    for i, ch in enumerate(text[1:], start=1):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            return i
    return -1


def _only_comment_after(rest: str, fail: Any) -> None:
    rest = rest.strip()
    if rest and not rest.startswith("#"):
        raise fail(f"unexpected text after a quoted value: {rest!r}")
