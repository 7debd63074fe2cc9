"""Structural search and batch edits: ast_search and batch_apply.

``ast_search`` finds code by shape with ast-grep patterns (``print($A)``, ``def $F($$$):``) and,
given a rewrite, previews it as a diff. It never writes: a rewrite is applied by
``batch_apply``, a file-writing tool on the same path as ``edit`` and ``multi_edit``
(``_PlanningTool``: gates and approval with a diff, write leases, the stale-write guard, one
all-or-none transaction, one ``/undo`` entry).

``batch_apply`` makes one edit (exact text, or an ast-grep rewrite) in every file under a
directory matching a glob. The files it will change are only known by reading them, so it
gives the gates that list (``expand_targets``: sandbox, deny rules, protected paths, leases
and the approval summary see every file) as well as a diff preview.

Both walk files as grep does (``.gitignore`` honoured; hidden entries, ``node_modules`` and
``target`` skipped; credential files never read) and run their scans in worker threads.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import trio

from nyzhi.config.paths import display_path
from nyzhi.tools.base import ToolContext, ToolResult
from nyzhi.tools.builtin import _astgrep as sg
from nyzhi.tools.builtin._diff import PREVIEW_DIFF_LINES, decode, encode, unified
from nyzhi.tools.builtin.common import ArgError, BuiltinTool, opt_bool, opt_str, req_str
from nyzhi.tools.builtin.files_write import Step, _PlanningTool, read_existing, replace_once
from nyzhi.tools.builtin.search import _root
from nyzhi.tools.offload import run_blocking
from nyzhi.tools.paths import ToolPathError, check_read, read_bytes_nofollow

MAX_MATCHES = 500  # like grep
MAX_MATCH_LINE = 200
MAX_BATCH_FILES = 500


def _optional_text(args: dict[str, Any], key: str) -> str | None:
    """A string argument where "" is meaningful (a rewrite that deletes), None when absent."""
    value = args.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ArgError(f"'{key}' must be a string, got {type(value).__name__}")


def _file_language(path: str, language: str | None, explicit: bool) -> str | None:
    """The language to parse ``path`` as: the given one for files named explicitly (a glob or
    a single file), otherwise the one its extension says, kept only if it is the given one."""
    inferred = sg.language_of(path)
    if language is None:
        return inferred
    if explicit or inferred == language:
        return language
    return None


def _languages_hint(language: str | None) -> str:
    if language:
        exts = sorted(e for e, lang in sg.EXTENSIONS.items() if lang == language)
        return f"{language} files ({', '.join(exts)})"
    return "files with a known source extension"


def _readable(ctx: ToolContext, path: Path) -> bytes | None:
    """A walked file's bytes; None for a file the read tools may not read (a credential file
    the sandbox hides): a batch leaves those alone, as grep leaves them unsearched."""
    try:
        return read_existing(ctx, path)
    except ToolPathError:
        return None


# --- ast_search -------------------------------------------------------------------------------


class AstSearchTool(BuiltinTool):
    name = "ast_search"
    deferred = True  # grep covers most searches: listed in one line until loaded
    description = (
        "Find code by its syntax-tree shape with an ast-grep pattern, and preview a rewrite.\n"
        "Use it when the shape matters and text does not: every call of a function with two "
        "arguments, a decorator, a try without except, whatever the spacing or line breaks. "
        "For plain text or names use grep; for definitions and references use the lsp_ tools "
        "when you have them. A pattern is code with metavariables: $X matches one node, $$$ARGS "
        "any number, e.g. 'print($A)', 'def $F($$$P):', 'console.log($$$)'. Matches print as "
        "path:line: code. With rewrite it also shows the diff the rewrite would make (using the "
        "pattern's metavariables, e.g. 'logger.info($A)') and writes nothing: apply it with "
        "batch_apply and the same pattern, rewrite, language, path and glob. Respects "
        ".gitignore, skips hidden files, node_modules and target, stops at 500 matches."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "ast-grep pattern: code in the target language with $NAME / $$$NAME metavariables."},
            "language": {"type": "string", "description": "python, typescript, tsx, javascript, go, rust, java, c, cpp, ... (default: from each file's extension)."},
            "path": {"type": "string", "description": "File or directory to search (default: the working directory)."},
            "glob": {"type": "string", "description": "Only files matching this glob, e.g. '*.py' or 'src/**/*.ts'."},
            "rewrite": {"type": "string", "description": "Replacement template for a preview diff; may use the pattern's metavariables."},
        },
        "required": ["pattern"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await trio.to_thread.run_sync(self._search, args, ctx, abandon_on_cancel=True)

    def _search(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = req_str(args, "pattern")
        language = sg.language_arg(opt_str(args, "language"))
        glob = opt_str(args, "glob")
        template = _optional_text(args, "rewrite")
        root, shown_root = _root(ctx, args.get("path"))
        explicit = bool(glob) or root.is_file()
        found = _Matches()
        for path in sg.walk(root, glob):
            lang = _file_language(path, language, explicit)
            if lang is None:
                continue
            found.search(ctx, Path(path), lang, pattern, template)
            if found.truncated:
                break
        if not found.lines:
            where = f" in {shown_root}" + (f" (files matching {glob})" if glob else "")
            if not found.searched:
                text = f"No {_languages_hint(language)}{where} to search"
            else:
                text = (f"No structural matches for `{pattern}`{where} "
                        f"({found.searched} files searched)")
            return ToolResult(output="\n".join([text, *found.notes()]), metadata=found.meta())
        return found.result(template is not None)


class _Matches:
    """What an ast_search found so far: the match lines, the rewrite preview's diffs, and
    the files it could not search (credential files withheld, unreadable ones skipped)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.diffs: list[str] = []
        self.withheld: list[str] = []
        self.searched = self.skipped = self.changed = 0
        self.truncated = False

    def search(self, ctx: ToolContext, path: Path, lang: str, pattern: str,
               template: str | None) -> None:
        """Search one file, and preview the rewrite of what matched in it."""
        shown = display_path(path, ctx.cwd)
        try:
            real = check_read(ctx, path)
        except ToolPathError:
            self.withheld.append(shown)
            return
        try:
            data = read_bytes_nofollow(real)
        except OSError:
            self.skipped += 1
            return
        text = sg.read_text(data)
        if text is None:
            self.skipped += 1
            return
        self.searched += 1
        found = sg.find(text, lang, pattern)
        for match, _ in found:
            if len(self.lines) >= MAX_MATCHES:
                self.truncated = True
                break
            first, *more = match.text.splitlines() or [""]
            code = first.strip() + (" …" if more else "")
            if len(code) > MAX_MATCH_LINE:
                code = code[:MAX_MATCH_LINE] + "…"
            self.lines.append(f"{shown}:{match.line + 1}: {code}")
        if template is not None and found:
            after, _ = sg.rewrite(text, lang, pattern, template)
            if after != text:
                self.changed += 1
                self.diffs.append(unified(shown, data, encode(after)))

    def meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"matches": len(self.lines), "files": self.searched,
                                "truncated": self.truncated}
        if self.withheld:
            meta["withheld"] = self.withheld
        return meta

    def notes(self) -> list[str]:
        """What was not searched, and why (so an empty answer is not taken for "none")."""
        notes = []
        if self.withheld:
            notes.append(f"[{len(self.withheld)} credential file(s) not searched: "
                         f"{', '.join(self.withheld)}; [agent.trust] allow_paths allows them]")
        if self.skipped:
            notes.append(f"[{self.skipped} file(s) skipped: binary, over "
                         f"{sg.MAX_FILE_BYTES // (1024 * 1024)} MB or not UTF-8]")
        return notes

    def result(self, previewed: bool) -> ToolResult:
        """The matches, then (when a rewrite was given) its preview diff, cut to a size."""
        meta = self.meta()
        out = list(self.lines)
        if self.truncated:
            out.append(f"... (stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob)")
        if previewed:
            changed = self.changed
            meta["files_changed"] = changed
            diff = "\n".join(self.diffs).splitlines()
            if len(diff) > PREVIEW_DIFF_LINES:
                diff = diff[:PREVIEW_DIFF_LINES] + [
                    f"... ({len(diff) - PREVIEW_DIFF_LINES} more diff lines)"]
            out += ["", f"Rewrite preview ({changed} file{'s' if changed != 1 else ''}; "
                    "nothing written; apply it with batch_apply):", *diff]
        return ToolResult(output="\n".join(out + self.notes()), metadata=meta)


# --- batch_apply ------------------------------------------------------------------------------


class PlannedTargets:
    """For a planning tool whose files are found by reading the tree (a glob, a directory):
    the gates and the write leases get the files the plan would change."""

    async def expand_targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Path]:
        """The real paths this call would change. A call that cannot be planned touches
        nothing (it fails the same way when it runs)."""

        def paths() -> list[Path]:
            try:
                steps = self.plan(args, ctx)  # type: ignore[attr-defined]
            except (ArgError, ToolPathError, OSError, ValueError):
                return []
            return [Path(os.path.realpath(s.path)) for s in steps if s.kind == "file"]

        return await run_blocking(paths)


class _BatchEdit:
    """What batch_apply does to each file: exact text replaced (``old`` by ``new``) or an
    ast-grep ``pattern`` rewritten by ``template``; the arguments checked on the way in."""

    def __init__(self, args: dict[str, Any]) -> None:
        self.old = _optional_text(args, "old_string")
        self.pattern = opt_str(args, "pattern")
        self.new = self.template = ""
        self.language: str | None = None
        if (self.old is None) == (self.pattern is None):
            raise ArgError(
                "give either old_string and new_string (exact text) or pattern and rewrite "
                "(an ast-grep rewrite), not both or neither"
            )
        if self.old is not None:
            new = _optional_text(args, "new_string")
            if new is None:
                raise ArgError("'new_string' is required with old_string (\"\" deletes the text)")
            if not self.old or self.old == new:
                raise ArgError("old_string must be non-empty and differ from new_string")
            self.new = new
        else:
            template = _optional_text(args, "rewrite")
            if template is None:
                raise ArgError("'rewrite' is required with pattern (\"\" deletes the matches)")
            self.template = template
            self.language = sg.language_arg(opt_str(args, "language"))

    def what(self) -> str:
        return f"`{self.pattern}`" if self.pattern is not None else repr(self.old)

    def step(self, ctx: ToolContext, raw: str, untouched: list[str]) -> Step | None:
        """The change to one walked file; None when it has none: a credential file (never
        read), a file of another language, or one the edit does not touch (in
        ``untouched``: binary, or without the text or a match)."""
        path = Path(raw)
        shown = display_path(path, ctx.cwd)
        if self.old is not None:
            before = _readable(ctx, path)
            if before is None:
                return None  # a credential file: never read
            try:
                if b"\0" in before[:8192]:
                    raise ArgError("binary")
                text, count = replace_once(decode(before), self.old, self.new, replace_all=True,
                                           where=shown)
            except ArgError:
                untouched.append(shown)  # binary, or does not contain the text
                return None
            return Step(path=path, before=before, after=encode(text), count=count)
        assert self.pattern is not None
        lang = _file_language(raw, self.language, True)
        if lang is None:
            return None
        before = _readable(ctx, path)
        if before is None:
            return None
        source = sg.read_text(before)
        text, count = (source, 0) if source is None else sg.rewrite(
            source, lang, self.pattern, self.template)
        if source is None or count == 0 or text == source:
            untouched.append(shown)
            return None
        return Step(path=path, before=before, after=text.encode("utf-8"), count=count)


class BatchApplyTool(PlannedTargets, _PlanningTool):
    name = "batch_apply"
    deferred = True  # a rare, large change: listed in one line until loaded
    description = (
        "Make the same edit in every file matching a glob, as one change: one approval, all "
        "files or none, one /undo.\n"
        "Give either old_string and new_string (exact text; every occurrence in each file is "
        "replaced) or an ast-grep pattern and rewrite (as previewed with ast_search). Files the "
        "edit does not touch are left alone (require_all makes them an error); if any file "
        "cannot be changed (not read since it last changed, refused by the sandbox, a write "
        "error) nothing is written. Read the files first, as for edit. For a few different "
        "edits use multi_edit."
    )
    parameters = {
        "type": "object",
        "properties": {
            "glob": {"type": "string", "description": "Files to change, e.g. '*.py' (at any depth) or 'src/**/*.ts'."},
            "path": {"type": "string", "description": "Directory the glob is relative to (default: the working directory)."},
            "old_string": {"type": "string", "description": "Exact text to replace in every matching file."},
            "new_string": {"type": "string", "description": "Text to put in its place (with old_string)."},
            "pattern": {"type": "string", "description": "ast-grep pattern to rewrite instead of exact text."},
            "rewrite": {"type": "string", "description": "Replacement template for pattern; may use its metavariables."},
            "language": {"type": "string", "description": "Language of pattern (default: from each file's extension)."},
            "require_all": {"type": "boolean", "description": "Fail, writing nothing, if any matching file does not contain the edit (default false: such files are left alone)."},
        },
        "required": ["glob"],
    }

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        return []  # the files come from the glob: see expand_targets

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        glob = req_str(args, "glob")
        edit = _BatchEdit(args)
        root, shown_root = _root(ctx, args.get("path"))
        if not root.is_dir():
            raise ArgError(f"path {shown_root} is not a directory; batch_apply changes the files "
                           "under a directory (use edit for one file)")
        require_all = opt_bool(args, "require_all", False)
        steps: list[Step] = []
        untouched: list[str] = []  # matched by the glob, not changed by the edit
        for raw in sg.walk(root, glob):
            step = edit.step(ctx, raw, untouched)
            if step is None:
                continue
            steps.append(step)
            if len(steps) > MAX_BATCH_FILES:
                raise ArgError(f"the edit would change more than {MAX_BATCH_FILES} files; "
                               "narrow the glob or path")
        what = edit.what()
        if not steps:
            raise ArgError(f"no file under {shown_root} matching {glob} contains {what}; "
                           "nothing was changed")
        if require_all and untouched:
            names = ", ".join(untouched[:10]) + (f" and {len(untouched) - 10} more"
                                                 if len(untouched) > 10 else "")
            raise ArgError(f"require_all: {len(untouched)} file(s) matching {glob} do not "
                           f"contain {what}: {names}. Nothing was written.")
        return steps

    def _preview(self, args: dict[str, Any], ctx: ToolContext) -> str:
        """The approval's diff, cut as a whole (each file's diff is cut on its own already):
        a batch over hundreds of files must not send the front end megabytes."""
        lines = super()._preview(args, ctx).splitlines()
        limit = 2 * PREVIEW_DIFF_LINES
        if len(lines) > limit:
            lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
        return "\n".join(lines)

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        n = sum(s.count for s in steps)
        names = ", ".join(display_path(s.path, ctx.cwd) for s in steps)
        return (f"Changed {len(steps)} file{'s' if len(steps) != 1 else ''} "
                f"({n} replacement{'s' if n != 1 else ''}): {names}")


TOOLS = (AstSearchTool, BatchApplyTool)
