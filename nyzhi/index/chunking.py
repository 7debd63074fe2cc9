"""Cutting a file into chunks worth embedding.

Where a language's top-level declarations are cheap to find, a chunk is one declaration
(a function, a class, a Rust ``impl``, a Go ``func``) together with the comments and
decorators just above it: a search hit is then a whole unit the model can read. Python uses
``ast`` (exact, and a syntax error falls back to windows); JS/TS, Rust and Go use a regex on
lines that start a top-level declaration. A declaration longer than ``MAX_LINES`` is cut into
windows, and so is everything else (markdown, config, unknown languages): ``WINDOW`` lines
with ``OVERLAP`` lines shared between neighbours, so a passage cut at a boundary still appears
whole in one of them. The lines between declarations (imports, constants) form chunks of
their own, so nothing in a file is unsearchable.
"""

from __future__ import annotations

import ast
import re

from nyzhi import records

WINDOW = 40
OVERLAP = 10
MAX_LINES = 80  # a declaration longer than this is windowed
MIN_LINES = 1

_DECL = {
    "js": re.compile(
        r"^(?:export\s+(?:default\s+)?)?(?:async\s+)?(?:function\*?|class|interface|type|enum|"
        r"const|let|var|abstract\s+class|namespace|declare)\b"
    ),
    "rust": re.compile(
        r"^(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|const\s+|unsafe\s+|extern\s+\"C\"\s+)*"
        r"(?:fn|struct|enum|trait|impl|mod|type|const|static|macro_rules!|union)\b"
    ),
    "go": re.compile(r"^(?:func|type|var|const)\b"),
}
_LANG_BY_SUFFIX = {
    ".py": "python", ".pyi": "python",
    ".js": "js", ".jsx": "js", ".mjs": "js", ".cjs": "js", ".ts": "js", ".tsx": "js",
    ".rs": "rust", ".go": "go",
}


@records.frozen
class Chunk:
    """Lines ``start``..``end`` (1-based, inclusive) of a file; ``symbol`` names the
    declaration when the chunk is one ("" for windows and glue)."""

    start: int
    end: int
    text: str
    symbol: str = ""


def language(path: str) -> str:
    dot = path.rfind(".")
    return _LANG_BY_SUFFIX.get(path[dot:].lower(), "") if dot != -1 else ""


def chunk_file(path: str, text: str) -> list[Chunk]:
    """The chunks of one file's text (empty for a blank file)."""
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        return []
    lang = language(path)
    spans: list[tuple[int, int, str]] | None = None
    if lang == "python":
        spans = _python_spans(text)
    elif lang in _DECL:
        spans = _regex_spans(lines, _DECL[lang])
    if not spans:
        return windows(lines, 1, len(lines))
    return _cover(lines, spans)


def windows(lines: list[str], first: int, last: int, symbol: str = "") -> list[Chunk]:
    """Sliding windows over lines ``first``..``last`` (1-based, inclusive)."""
    out: list[Chunk] = []
    start = first
    while start <= last:
        end = min(start + WINDOW - 1, last)
        body = "\n".join(lines[start - 1 : end])
        if body.strip():
            out.append(Chunk(start, end, body, symbol))
        if end == last:
            break
        start = end - OVERLAP + 1
    return out


def _cover(lines: list[str], spans: list[tuple[int, int, str]]) -> list[Chunk]:
    """Declarations as chunks, the gaps between them windowed, long declarations windowed."""
    out: list[Chunk] = []
    cursor = 1
    for start, end, symbol in sorted(spans):
        if start < cursor:  # overlapping spans (nested regex hits): keep the first
            continue
        if start > cursor:
            out += windows(lines, cursor, start - 1)
        if end - start + 1 > MAX_LINES:
            out += windows(lines, start, end, symbol)
        else:
            out.append(Chunk(start, end, "\n".join(lines[start - 1 : end]), symbol))
        cursor = end + 1
    if cursor <= len(lines):
        out += windows(lines, cursor, len(lines))
    return out


def _leading_comments(lines: list[str], start: int) -> int:
    """Move ``start`` up over comment lines directly above a declaration."""
    while start > 1 and lines[start - 2].lstrip().startswith(("#", "//", "/*", "*", "///")):
        start -= 1
    return start


def _python_spans(text: str) -> list[tuple[int, int, str]] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.splitlines()
    spans = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            end = node.end_lineno or node.lineno
            spans.append((_leading_comments(lines, first), end, node.name))
    return spans


def _regex_spans(lines: list[str], rx: re.Pattern[str]) -> list[tuple[int, int, str]]:
    """A declaration runs from its first line to the line before the next one (less trailing
    blank lines)."""
    starts = [i + 1 for i, line in enumerate(lines) if rx.match(line)]
    spans = []
    for n, start in enumerate(starts):
        end = starts[n + 1] - 1 if n + 1 < len(starts) else len(lines)
        end = _leading_comments(lines, end + 1) - 1 if n + 1 < len(starts) else end
        while end > start and not lines[end - 1].strip():
            end -= 1
        name = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", lines[start - 1])
        symbol = next((w for w in name if w not in _KEYWORDS), "")
        spans.append((_leading_comments(lines, start), end, symbol))
    return spans


_KEYWORDS = frozenset(
    "export default async function class interface type enum const let var abstract namespace "
    "declare pub crate super self fn struct trait impl mod static unsafe extern macro_rules "
    "union func".split()
)
