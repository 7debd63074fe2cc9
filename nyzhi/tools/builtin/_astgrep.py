"""Structural matching with ast-grep (``ast-grep-py``), shared by ast_search, batch_apply and
instrument, and the file walk those tools share with grep.

``ast_grep_py`` is a native extension with a parser per language: it is imported on the first
structural call, never when the tool registry is built (``nyz run`` must not pay for it).

Two things the bindings do not do for us:

- an unknown language makes them panic (a Rust backtrace on stderr), so the language is
  checked against ``LANGUAGES`` first;
- ``SgNode.replace`` inserts its text literally, so a rewrite template's ``$NAME`` and
  ``$$$NAME`` are filled in here, and the edits are spliced into the text here too (outermost
  match wins where matches nest). Offsets are character indices, so the splice works on the
  decoded text and every byte outside the matches is kept.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nyzhi import records
from nyzhi.tools.builtin.common import ArgError

# File extension -> ast-grep's name for the language (the ones its wheel ships parsers for).
EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".kts": "kotlin",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp",
    ".hh": "cpp", ".hxx": "cpp", ".cs": "csharp", ".rb": "ruby", ".php": "php",
    ".swift": "swift", ".scala": "scala", ".lua": "lua", ".ex": "elixir", ".exs": "elixir",
    ".hs": "haskell", ".sh": "bash", ".bash": "bash", ".css": "css", ".html": "html",
    ".htm": "html", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".nix": "nix",
    ".sol": "solidity", ".tf": "hcl", ".hcl": "hcl",
}
LANGUAGES = frozenset(EXTENSIONS.values())
ALIASES = {"py": "python", "ts": "typescript", "js": "javascript", "jsx": "javascript",
           "rs": "rust", "golang": "go", "c++": "cpp", "cs": "csharp", "c#": "csharp",
           "rb": "ruby", "sh": "bash", "shell": "bash", "yml": "yaml", "kt": "kotlin"}

SKIP_DIRS = frozenset({"node_modules", "target"})  # grep's list (nyzhi.tools.builtin.search)
MAX_FILE_BYTES = 4 * 1024 * 1024  # larger files are generated or data, not code to rewrite
_METAVAR = re.compile(r"\$\$\$([A-Z_][A-Z0-9_]*)|\$([A-Z_][A-Z0-9_]*)")


def ast_grep() -> Any:
    """The ``ast_grep_py`` module, imported on first use; a clear error when it is missing."""
    try:
        import ast_grep_py
    except ImportError:
        raise ArgError(
            "structural search needs the ast-grep-py package, which is not installed; "
            "install it with `pip install ast-grep-py`, or use grep"
        ) from None
    return ast_grep_py


def language_arg(raw: str | None) -> str | None:
    """The ``language`` argument as ast-grep names it (None: infer from each file's name)."""
    if raw is None:
        return None
    name = raw.strip().lower()
    name = ALIASES.get(name, name)
    if name not in LANGUAGES:
        raise ArgError(
            f"'language': {raw!r} is not a language ast-grep supports; use one of "
            f"{', '.join(sorted(LANGUAGES))} (or leave it out to go by file extension)"
        )
    return name


def language_of(path: str | Path) -> str | None:
    return EXTENSIONS.get(os.path.splitext(str(path))[1].lower())


@records.frozen
class Match:
    """One structural match: 0-based line, character offsets in the decoded text."""

    line: int
    start: int
    end: int
    text: str


def parse(text: str, language: str) -> Any:
    """The root node of ``text`` parsed as ``language`` (already checked against LANGUAGES)."""
    return ast_grep().SgRoot(text, language).root()


def _why(exc: BaseException) -> str:
    """The innermost cause of an ast-grep error, without the Rust backtrace under it (the
    bindings spell metavariables with µ internally)."""
    lines = str(exc).split("Stack backtrace:")[0].strip().splitlines()
    causes = [m.group(1) for m in (re.match(r"\s*\d+: (.*)", ln) for ln in lines) if m]
    text = causes[-1] if causes else (lines[0] if lines else type(exc).__name__)
    return text.replace("µ", "$")


def find(text: str, language: str, pattern: str) -> list[tuple[Match, Any]]:
    """Every match of ``pattern`` in ``text``, outermost first where matches nest, in order."""
    try:
        nodes = parse(text, language).find_all(pattern=pattern)
    except (RuntimeError, ValueError) as exc:
        raise ArgError(f"'pattern' {pattern!r} is not valid {language}: {_why(exc)}") from None
    except BaseException as exc:  # a Rust panic surfaces as pyo3's PanicException
        if type(exc).__name__ != "PanicException":
            raise
        raise ArgError(f"ast-grep failed on 'pattern' {pattern!r} ({language}): {_why(exc)}; "
                       "simplify the pattern or use grep") from None
    found: list[tuple[Match, Any]] = []
    last_end = -1
    for node in sorted(nodes, key=lambda n: (n.range().start.index, -n.range().end.index)):
        rng = node.range()
        if rng.start.index < last_end:
            continue  # inside a match already taken
        found.append((Match(rng.start.line, rng.start.index, rng.end.index, node.text()), node))
        last_end = rng.end.index
    return found


def _line_indent(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    line = text[start:offset]
    return line[: len(line) - len(line.lstrip(" \t"))]


def fill_template(template: str, node: Any, text: str, start: int) -> str:
    """``template`` with the match's metavariables filled in. New lines in the template itself
    take the matched line's indentation and the file's line ending."""
    indent = _line_indent(text, start)
    eol = "\r\n" if "\r\n" in text else "\n"
    out: list[str] = []
    pos = 0
    for m in _METAVAR.finditer(template):
        out.append(template[pos:m.start()].replace("\n", eol + indent))
        pos = m.end()
        if m.group(1):
            nodes = node.get_multiple_matches(m.group(1))
            if nodes:
                out.append(text[nodes[0].range().start.index:nodes[-1].range().end.index])
            continue
        bound = node.get_match(m.group(2))
        if bound is None:
            raise ArgError(
                f"'rewrite' uses ${m.group(2)}, which the pattern does not bind; name only "
                "metavariables that appear in the pattern"
            )
        out.append(bound.text())
    out.append(template[pos:].replace("\n", eol + indent))
    return "".join(out)


def rewrite(text: str, language: str, pattern: str, template: str) -> tuple[str, int]:
    """``text`` with every (outermost) match of ``pattern`` replaced by ``template``, and the
    number of replacements."""
    found = find(text, language, pattern)
    if not found:
        return text, 0
    parts: list[str] = []
    pos = 0
    for match, node in found:
        parts.append(text[pos:match.start])
        parts.append(fill_template(template, node, text, match.start))
        pos = match.end
    parts.append(text[pos:])
    return "".join(parts), len(found)


def walk(root: Path, include: str | None) -> Iterator[str]:
    """Absolute paths of the files under ``root`` that grep would search (``.gitignore``
    honoured; hidden entries, ``.git``, ``node_modules`` and ``target`` skipped), filtered by
    ``include`` (rg ``--glob`` semantics, relative to ``root``). Blocking."""
    from nyzhi.tools.ignore import compile_include, walk_files

    if root.is_file():
        yield str(root)
        return
    inc = compile_include(include) if include else None
    for path in walk_files(root, skip_dirs=SKIP_DIRS):
        if inc is None or inc.match(os.path.relpath(path, root)):
            yield path


def read_text(data: bytes) -> str | None:
    """The file's text for the parser, or None for binary, huge or non-UTF-8 files (the parser
    takes only valid UTF-8)."""
    if len(data) > MAX_FILE_BYTES or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
