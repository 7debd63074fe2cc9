"""Temporary debug logging: instrument inserts it, remove_instrumentation takes it out exactly.

Every inserted statement is one whole line ending in the file's line ending, carrying a marker
comment with the call's id (``# nyz-instrument:1a2b3c4d``, ``// nyz-instrument:...``), put
*before* an existing line. Removing exactly the marked lines therefore gives back the file
byte for byte: CRLF files, tabs and a missing final newline included, since none of the
original bytes were touched. Both tools are ordinary file-writing tools (``_PlanningTool``):
approval with a diff, leases, the stale-write guard, ``/undo``.

A statement that would break the file's syntax (a print between an ``if`` body and its
``else``) is refused before anything is written: Python files are compiled, the others are
parsed with ast-grep and must not gain parse errors, and in the languages whose statements
live only in functions (Go, Rust, Java, C, C++) each marker must sit inside a function body.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nyzhi import records
from nyzhi.config.paths import display_path
from nyzhi.tools.base import ToolContext
from nyzhi.tools.builtin import _astgrep as sg
from nyzhi.tools.builtin.common import ArgError, opt_str
from nyzhi.tools.builtin.files_write import Step, _PlanningTool, read_existing
from nyzhi.tools.builtin.structural import PlannedTargets
from nyzhi.tools.paths import ToolPathError, resolve_arg

MARKER = "nyz-instrument"
_ID = re.compile(r"[0-9a-f]{8}")
# What remove_instrumentation takes out: a line whose content ends with the marker comment.
_MARKED_LINE = re.compile(rb"\s(?:#|//) " + MARKER.encode() + rb":([0-9a-f]{8})$")
MAX_POINTS = 50


def _s(text: str) -> str:
    """A double-quoted string literal valid in every language below (no control characters)."""
    return json.dumps(text, ensure_ascii=False)


def _py(label: str, values: list[str]) -> str:
    parts = [_s(label), *(f"{_s(v + '=')} + repr({v})" for v in values)]
    return f"print({', '.join(parts)}, file=__import__('sys').stderr, flush=True)"


def _pairs(label: str, values: list[str]) -> str:
    """``"label", "x=", x, ...``: arguments for print functions that take several."""
    return ", ".join([_s(label), *(_s(v + "=") + ", " + v for v in values)])


def _js(label: str, values: list[str]) -> str:
    return f"console.error({_pairs(label, values)});"


def _go(label: str, values: list[str]) -> str:
    return f"println({_pairs(label, values)})"


def _rust(label: str, values: list[str]) -> str:
    fmt = " ".join(["{}", *("{}{:?}" for _ in values)])
    return f"eprintln!({_s(fmt)}, {_pairs(label, values)});"


def _java(label: str, values: list[str]) -> str:
    parts = [_s(label), *(f"{_s(' ' + v + '=')} + ({v})" for v in values)]
    return f"System.err.println({' + '.join(parts)});"


def _ruby(label: str, values: list[str]) -> str:
    parts = [_s(label), *(f"{_s(v + '=')} + ({v}).inspect" for v in values)]
    return f"$stderr.puts([{', '.join(parts)}].join(' '))"


def _c(label: str, values: list[str]) -> str:
    if values:
        raise ArgError("'values' is not supported for C and C++ (the types are unknown); "
                       "instrument without values or print them yourself")
    return f'fprintf(stderr, "%s\\n", {_s(label)});'


def _sh(label: str, values: list[str]) -> str:
    if values:
        raise ArgError("'values' is not supported for shell scripts; instrument without values")
    return f"echo {_s(label)} >&2"


@records.frozen
class Style:
    comment: str
    render: Callable[[str, list[str]], str]
    # (node kind, how to get its name) of the function definitions, for ``functions``
    functions: tuple[str, ...] = ()


_JS_FUNCS = ("function_declaration", "generator_function_declaration", "method_definition",
             "variable_declarator")
STYLES: dict[str, Style] = {
    "python": Style("#", _py, ("function_definition",)),
    "javascript": Style("//", _js, _JS_FUNCS),
    "typescript": Style("//", _js, _JS_FUNCS),
    "tsx": Style("//", _js, _JS_FUNCS),
    "go": Style("//", _go, ("function_declaration", "method_declaration")),
    "rust": Style("//", _rust, ("function_item",)),
    "java": Style("//", _java, ("method_declaration", "constructor_declaration")),
    "c": Style("//", _c),
    "cpp": Style("//", _c),
    "ruby": Style("#", _ruby),
    "bash": Style("#", _sh),
}


def _style_for(ctx: ToolContext, path: Path) -> tuple[str, Style]:
    lang = sg.language_of(path)
    if lang not in STYLES:
        names = sorted({e for e, lg in sg.EXTENSIONS.items() if lg in STYLES})
        raise ArgError(f"{display_path(path, ctx.cwd)}: instrument supports source files ending in "
                       f"{', '.join(names)}")
    return lang, STYLES[lang]  # type: ignore[index]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _int_list(args: dict[str, Any], key: str) -> list[int]:
    value = args.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value
    ):
        raise ArgError(f"'{key}' must be an array of line numbers (1-based), e.g. [12, 40]")
    return value


def _str_list(args: dict[str, Any], key: str) -> list[str]:
    value = args.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ArgError(f"'{key}' must be an array of non-empty strings")
    for v in value:
        if "\n" in v or "\r" in v or MARKER in v:
            raise ArgError(f"'{key}': {v!r} must be one line without the {MARKER} marker")
    return [v.strip() for v in value]


def _function_bodies(text: str, lang: str, style: Style, name: str) -> list[tuple[int, int]]:
    """(definition line, line to insert before), 0-based, of every function called ``name``."""
    root = sg.parse(text, lang)
    found = []
    for kind in style.functions:
        for node in root.find_all(kind=kind):
            name_node = node.field("name")
            body = node.field("body")
            if kind == "variable_declarator":  # const f = () => { ... }
                value = node.field("value")
                body = value.field("body") if value is not None and value.kind() in (
                    "arrow_function", "function_expression", "function") else None
            if name_node is None or body is None or name_node.text() != name:
                continue
            first_line = node.range().start.line
            if lang == "python":
                stmts = [c for c in body.children() if c.is_named() and c.kind() != "comment"]
                if len(stmts) > 1 and [c.kind() for c in stmts[0].children()] == ["string"]:
                    stmts = stmts[1:]  # keep the docstring first
                at = stmts[0].range().start.line if stmts else -1
            else:
                if body.kind() not in ("statement_block", "block", "constructor_body"):
                    raise ArgError(f"function {name} (line {first_line + 1}) has no block body "
                                   "(an arrow function returning an expression); instrument a "
                                   "line instead")
                brace = body.range()
                at = brace.start.line + 1 if brace.end.line > brace.start.line else -1
            if at <= first_line:
                raise ArgError(f"function {name} (line {first_line + 1}) is written on one line; "
                               "instrument a line instead")
            found.append((first_line, at))
    return found


# Languages whose statements may only stand inside a function body, and the kinds of node a
# body is: their tree-sitter grammars accept a call at the top level, so parse errors alone
# would not catch a log statement put outside every function.
BODY_KINDS = {
    "go": ("block",), "rust": ("block",), "java": ("block", "constructor_body"),
    "c": ("compound_statement",), "cpp": ("compound_statement",),
}
COMMENT_KIND = {"rust": "line_comment", "java": "line_comment"}  # the others: "comment"


def _outside_bodies(text: str, lang: str, marker: str) -> list[int]:
    """1-based lines of the ``marker`` comments in ``text`` that are not inside a function
    body, for the languages of ``BODY_KINDS``."""
    kinds = BODY_KINDS.get(lang)
    if kinds is None:
        return []
    bad = []
    for node in sg.parse(text, lang).find_all(kind=COMMENT_KIND.get(lang, "comment")):
        if node.text().endswith(marker.strip()) and not any(
                a.kind() in kinds for a in node.ancestors()):
            bad.append(node.range().start.line + 1)
    return bad


def _syntax_errors(text: str, lang: str, label: str) -> str | None:
    """A description of the first syntax error in ``text``, or None (-1: parse errors count)."""
    if lang == "python":
        try:
            compile(text, label, "exec", dont_inherit=True)
        except SyntaxError as exc:
            return f"line {exc.lineno}: {exc.msg}"
        except ValueError:  # a NUL byte: not source code we can judge
            return None
        return None
    count = len(sg.parse(text, lang).find_all(kind="ERROR"))
    return f"{count} parse error(s)" if count else None


def _call_id(args: dict[str, Any], path: Path, before: bytes) -> str:
    """The given id, or one derived from the call and the file's content: the approval preview
    and the write compute the same id, and a second call on the changed file gets another."""
    given = opt_str(args, "id")
    if given is not None:
        if not _ID.fullmatch(given):
            raise ArgError(f"'id' must be 8 lowercase hex digits, got {given!r}")
        return given
    key = json.dumps([str(path), args.get("lines"), args.get("functions"), args.get("values")],
                     default=str)
    return hashlib.sha256(key.encode() + b"\0" + before).hexdigest()[:8]


class InstrumentTool(_PlanningTool):
    name = "instrument"
    deferred = True  # debugging aid: listed in one line until loaded
    description = (
        "Insert temporary debug logging, marked with an id, before lines or at function starts.\n"
        "Each log statement prints to stderr with the values you name. Use it to see which code "
        "runs and with what values, then run the code; "
        "remove_instrumentation with the id takes every marked line out again and leaves the "
        "file byte for byte as before. Python, JavaScript, TypeScript, Go, Rust, Java, C/C++, "
        "Ruby and shell. A statement that would break the syntax is refused."
    )
    parameters = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Source file to instrument."},
            "lines": {"type": "array", "items": {"type": "integer"}, "description": "1-based lines to log before (at that line's indentation)."},
            "functions": {"type": "array", "items": {"type": "string"}, "description": "Names of functions to log at the start of."},
            "values": {"type": "array", "items": {"type": "string"}, "description": "Expressions to print with each log line, e.g. ['x', 'len(items)']."},
            "id": {"type": "string", "description": "8 hex digits to reuse an earlier id (default: a new one)."},
        },
        "required": ["file_path"],
    }

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        path = resolve_arg(ctx, args.get("file_path"))
        lines_arg = _int_list(args, "lines")
        funcs = _str_list(args, "functions")
        values = _str_list(args, "values")
        if not lines_arg and not funcs:
            raise ArgError("give 'lines' (1-based line numbers) or 'functions' (names), or both")
        if len(lines_arg) + len(funcs) > MAX_POINTS:
            raise ArgError(f"at most {MAX_POINTS} points per call")
        lang, style = _style_for(ctx, path)
        shown = display_path(path, ctx.cwd)
        before = read_existing(ctx, path)
        if before is None:
            raise ArgError(f"{shown}: file not found; check the path with glob")
        ident = _call_id(args, path, before)
        text = sg.read_text(before)
        if text is None:
            raise ArgError(f"{shown} is binary, too large or not UTF-8; it cannot be instrumented")
        lines = text.splitlines(keepends=True)
        points: dict[int, str] = {}  # 0-based line to insert before -> label
        for n in lines_arg:
            if n > len(lines):
                raise ArgError(f"{shown} has {len(lines)} lines; line {n} does not exist")
            points.setdefault(n - 1, f"[nyz {ident}] {shown}:{n}")
        for name in funcs:
            if not style.functions:
                raise ArgError(f"'functions' is not supported for {lang}; give 'lines' instead")
            bodies = _function_bodies(text, lang, style, name)
            if not bodies:
                raise ArgError(f"{shown}: no function named {name!r}; check the name with grep")
            for def_line, at in bodies:
                points.setdefault(at, f"[nyz {ident}] {shown}:{def_line + 1} {name}()")
        marker = f"  {style.comment} {MARKER}:{ident}"
        out = list(lines)
        for at in sorted(points, reverse=True):
            target = lines[at]
            indent = _indent(target)
            if not target.strip():  # a blank line: indent like the code that follows
                nxt = next((ln for ln in lines[at:] if ln.strip()), "")
                indent = _indent(nxt)
            eol = target[len(target.rstrip("\r\n")):] or (
                "\r\n" if lines[0].endswith("\r\n") else "\n")
            out.insert(at, f"{indent}{style.render(points[at], values)}{marker}{eol}")
        after = "".join(out)
        outside = _outside_bodies(after, lang, marker)
        if outside:
            raise ArgError(f"{shown}: in {lang} a log statement must be inside a function body; "
                           f"the one(s) at line(s) {', '.join(map(str, outside))} of the "
                           "instrumented file would not be. Nothing was written.")
        if _syntax_errors(text, lang, shown) is None:
            broken = _syntax_errors(after, lang, shown)
            if broken:
                raise ArgError(f"{shown}: the log statements would break the syntax ({broken}); "
                               "pick lines that start a statement. Nothing was written.")
        return [Step(path=path, before=before, after=after.encode("utf-8"), count=len(points))]

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        ident = _call_id(args, steps[0].path, steps[0].before or b"")
        n = steps[0].count
        return (f"Instrumented {display_path(steps[0].path, ctx.cwd)} at {n} point{'s' if n != 1 else ''} "
                f"(id {ident}): log lines start with '[nyz {ident}]' on stderr. Remove them with "
                f"remove_instrumentation id {ident}.")


def strip_marked(data: bytes, ident: str | None) -> tuple[bytes, int]:
    """``data`` without the lines instrument inserted (those of ``ident``, or all), and how many
    were removed. Works on bytes, so everything else is kept exactly."""
    kept: list[bytes] = []
    removed = 0
    for line in data.splitlines(keepends=True):
        m = _MARKED_LINE.search(line.rstrip(b"\r\n"))
        if m is not None and (ident is None or m.group(1).decode() == ident):
            removed += 1
            continue
        kept.append(line)
    return b"".join(kept), removed


class RemoveInstrumentationTool(PlannedTargets, _PlanningTool):
    name = "remove_instrumentation"
    deferred = True
    description = (
        "Remove the logging instrument inserted, leaving the files byte for byte as before.\n"
        "It takes out every line marked with the id (or every marked line), in a file or in "
        "all files under a directory."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File or directory to clean (default: the working directory)."},
            "id": {"type": "string", "description": "The id instrument reported (default: every id)."},
        },
    }

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        ident = opt_str(args, "id")
        if ident is not None and not _ID.fullmatch(ident):
            raise ArgError(f"'id' must be the 8 hex digits instrument reported, got {ident!r}")
        root = resolve_arg(ctx, args.get("path") or ".", arg="path")
        shown_root = display_path(root, ctx.cwd)
        if not root.exists():
            raise ArgError(f"path {shown_root} does not exist")
        steps = []
        for raw in sg.walk(root, None):
            path = Path(raw)
            if root.is_dir() and sg.language_of(raw) not in STYLES:
                continue
            try:
                before = read_existing(ctx, path)
            except ToolPathError:
                if not root.is_dir():
                    raise
                continue  # a credential file in the tree: never read
            if before is None or MARKER.encode() not in before:
                continue
            after, removed = strip_marked(before, ident)
            if removed:
                steps.append(Step(path=path, before=before, after=after, count=removed))
        if not steps:
            which = f" with id {ident}" if ident else ""
            raise ArgError(f"no instrumentation{which} found in {shown_root}")
        return steps

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        n = sum(s.count for s in steps)
        names = ", ".join(display_path(s.path, ctx.cwd) for s in steps)
        return f"Removed {n} instrumentation line{'s' if n != 1 else ''} from {names}"


TOOLS = (InstrumentTool, RemoveInstrumentationTool)
