"""Markdown-ish text to urwid markup: headings, lists, tables, inline code, fenced code blocks.

Not a Markdown parser: a line-by-line pass good enough for model answers, cheap enough to
re-run on every streamed delta of the block being written. Code blocks are highlighted with
Pygments when it is installed (it is not a dependency of nyzhi); otherwise drawn plain.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from typing import Any

from urwid.str_util import calc_width

Markup = list[Any]

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+(.*)$")
_INLINE_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?$")
HEADING_MARK = "▌"  # a heading keeps a visible marker: one bar per level, up to three
CELL_MAX = 40  # a table cell wider than this is cut with "…" so rows stay aligned


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
    table: list[str] | None = None  # the rows of the table being read
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
        if table is not None:
            if stripped.startswith("|"):  # a row still streaming may lack its last pipe
                table.append(stripped)
                continue
            out.extend(_table(table, "\n"))
            table = None
        elif _is_table_row(stripped) and i + 1 < len(lines) and _TABLE_RULE.match(
                lines[i + 1].strip()):
            table = [stripped]
            continue
        m = _HEADING.match(line)
        if m:
            level = min(len(m.group(1)), 3)
            out.append(("bullet", HEADING_MARK * level + " "))
            out.append(("heading", _plain(m.group(2)) + nl))
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
    if table is not None:
        out.extend(_table(table, ""))
    return out or [("body", "")]


def _plain(text: str) -> str:
    """``text`` without the inline markers a terminal cannot show (bold, code ticks)."""
    return _INLINE_CODE.sub(r"\1", _BOLD.sub(r"\1", text))


def _is_table_row(stripped: str) -> bool:
    return stripped.startswith("|") and stripped.count("|") >= 2


def _cells(row: str) -> list[str]:
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)]
    return [_plain(c) if len(c) <= CELL_MAX else _plain(c)[: CELL_MAX - 1] + "…" for c in cells]


def _width(text: str) -> int:
    """Columns ``text`` takes on a terminal (a CJK character or an emoji takes two)."""
    return calc_width(text, 0, len(text))


def _pad(cell: str, width: int, align: str) -> str:
    gap = width - _width(cell)
    if align == ">":
        return " " * gap + cell
    if align == "^":
        return " " * (gap // 2) + cell + " " * (gap - gap // 2)
    return cell + " " * gap


def _table(rows: list[str], nl: str) -> Markup:
    """A pipe table as aligned columns between box-drawing rules, its header in bold.

    The rule line under the header (``|---|:--:|``) sets each column's alignment. Column
    widths are measured over the rows seen so far, so a table still streaming redraws
    aligned on every delta.
    """
    header = _cells(rows[0])
    rule = _cells(rows[1]) if len(rows) > 1 else []
    body = [_cells(r) for r in rows[2:]]
    ncols = max(len(header), *(len(r) for r in body)) if body else len(header)
    aligns = []
    for k in range(ncols):
        spec = rule[k] if k < len(rule) else ""
        aligns.append("^" if spec.startswith(":") and spec.endswith(":")
                      else ">" if spec.endswith(":") else "<")
    grid = [r + [""] * (ncols - len(r)) for r in [header, *body]]
    widths = [max(_width(r[k]) for r in grid) for k in range(ncols)]

    def line(left: str, mid: str, right: str) -> tuple[str, str]:
        return ("dim", left + mid.join("─" * (w + 2) for w in widths) + right + "\n")

    def row(cells: list[str], attr: str) -> Markup:
        out: Markup = [("dim", "│")]
        for cell, width, align in zip(cells, widths, aligns, strict=True):
            out += [(attr, f" {_pad(cell, width, align)} "), ("dim", "│")]
        out.append(("body", "\n"))
        return out

    out: Markup = [line("┌", "┬", "┐"), *row(grid[0], "heading"), line("├", "┼", "┤")]
    for cells in grid[1:]:
        out += row(cells, "body")
    out.append(("dim", "└" + "┴".join("─" * (w + 2) for w in widths) + "┘" + nl))
    return out


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
