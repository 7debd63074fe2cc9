"""Markdown-ish text to urwid markup: headings, lists, inline code, fenced code blocks.

Not a Markdown parser: a line-by-line pass good enough for model answers, cheap enough to
re-run on every streamed delta of the block being written. Code blocks are highlighted with
Pygments when it is installed (it is not a dependency of nyzhi); otherwise drawn plain.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from typing import Any

Markup = list[Any]

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+(.*)$")
_INLINE_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")


def inline(text: str, base: str = "body") -> Markup:
    """``text`` with `inline code` picked out (and ``**bold**`` markers dropped)."""
    out: Markup = []
    pos = 0
    for m in _INLINE_CODE.finditer(text):
        if m.start() > pos:
            out.append((base, _BOLD.sub(r"\1", text[pos:m.start()])))
        out.append(("code", m.group(1)))
        pos = m.end()
    if pos < len(text):
        out.append((base, _BOLD.sub(r"\1", text[pos:])))
    return out


def render(text: str) -> Markup:
    """The whole markup of one answer (a list usable as ``urwid.Text`` content)."""
    out: Markup = []
    lines = text.split("\n")
    fence: str | None = None
    code: list[str] = []
    for i, line in enumerate(lines):
        nl = "\n" if i < len(lines) - 1 else ""
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith("```"):
                out.extend(highlight("\n".join(code), fence))
                out.append(("code", nl))
                fence, code = None, []
            else:
                code.append(line)
            continue
        if stripped.startswith("```"):
            fence = stripped[3:].strip()
            continue
        m = _HEADING.match(line)
        if m:
            out.append(("heading", m.group(2) + nl))
            continue
        m = _BULLET.match(line)
        if m:
            marker = "•" if m.group(2) in "-*+" else m.group(2)
            out.append(("bullet", f"{m.group(1)}{marker} "))
            out.extend(inline(m.group(3) + nl))
            continue
        out.extend(inline(line + nl))
    if fence is not None:  # still streaming inside a block
        out.extend(highlight("\n".join(code), fence))
    return out or [("body", "")]


@functools.cache
def _pygments_available() -> bool:
    return importlib.util.find_spec("pygments") is not None


def _attr_for(token_type: Any) -> str:
    name = str(token_type)
    if "Comment" in name:
        return "code_comment"
    if "String" in name:
        return "code_str"
    if "Keyword" in name or "Name.Builtin" in name:
        return "code_kw"
    return "code"


def highlight(code: str, language: str) -> Markup:
    """``code`` as markup, coloured by Pygments' lexer for ``language`` when both exist."""
    if not code:
        return []
    if language and _pygments_available():
        from pygments.lexers import get_lexer_by_name
        from pygments.util import ClassNotFound

        try:
            lexer = get_lexer_by_name(language)
        except ClassNotFound:
            lexer = None
        if lexer is not None:
            out: Markup = []
            for token_type, value in lexer.get_tokens(code):
                out.append((_attr_for(token_type), value))
            if out and out[-1][1].endswith("\n"):  # the lexer adds a final newline
                out[-1] = (out[-1][0], out[-1][1][:-1])
            return [m for m in out if m[1]]
    return [("code", code)]
