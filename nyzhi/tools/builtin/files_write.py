"""Changing files: write, edit, multi_edit, delete_file, move_file, copy_file, create_dir.

Each tool first *plans* (reads what it needs, computes every file's new bytes, validates) and
only then applies the plan through ``nyzhi.tools.undo.apply``: one refusal or failed match
means nothing was written, and the changes are recorded for ``/undo``. ``preview`` runs
the same planning and shows the diff without writing, for approval requests.

Planning, writing (each file and its directory are fsynced) and diffing run in a worker thread:
with many agents, one slow disk must not stall the event loop every agent and the console share.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from nyzhi import records
from nyzhi.config.paths import display_path
from nyzhi.tools.base import FileChange, Permission, ToolContext, ToolResult
from nyzhi.tools.builtin._diff import (
    PREVIEW_DIFF_LINES,
    RESULT_DIFF_LINES,
    decode,
    encode,
    unified,
)
from nyzhi.tools.builtin.common import ArgError, BuiltinTool, opt_bool, req_str
from nyzhi.tools.ledger import GUARDED_TOOLS, StaleWrite
from nyzhi.tools.offload import run_blocking
from nyzhi.tools.paths import (
    ToolPathError,
    check_read,
    file_mode,
    read_bytes_nofollow,
    resolve_arg,
)
from nyzhi.tools.undo import TRANSACTION_LOCK, Planned, apply, record


@records.define
class Step:
    """One planned change with what the file held before (for diffs)."""

    path: Path  # absolute, as the user named it
    before: bytes | None
    after: bytes | None
    kind: str = "file"
    mode: int | None = None
    count: int = 1  # replacements made (edit)


def read_existing(ctx: ToolContext, path: Path) -> bytes | None:
    """Current bytes of a regular file, None if absent; errors for directories/specials."""
    real = check_read(ctx, path)
    if not os.path.lexists(real):
        return None
    if real.is_dir():
        raise ArgError(f"{display_path(path, ctx.cwd)} is a directory, not a file")
    if not real.is_file():
        raise ArgError(f"{display_path(path, ctx.cwd)} is not a regular file")
    return read_bytes_nofollow(real)


def missing_parents(path: Path) -> list[Step]:
    """Directory steps for the ancestors that do not exist yet, outermost first, so undo also
    removes directories a write created."""
    steps = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        steps.append(Step(path=parent, before=None, after=b"", kind="dir"))
        parent = parent.parent
    return list(reversed(steps))


def diff_steps(ctx: ToolContext, steps: list[Step], max_lines: int) -> str:
    parts = [
        unified(display_path(s.path, ctx.cwd), s.before, s.after, max_lines=max_lines)
        for s in steps
        if s.kind == "file"
    ]
    return "\n".join(p for p in parts if p)


def check_unchanged(ctx: ToolContext, steps: list[Step]) -> None:
    """The stale-write guard (nyzhi.tools.ledger): every existing file a step changes must be
    as this agent last saw it. ``ArgError`` (a tool error, nothing written) otherwise, naming
    every such file: a batch of many files is fixed with one round of reads."""
    writers = getattr(ctx.leases, "writers", None)
    problems: list[str] = []
    for step in steps:
        if step.kind != "file" or step.before is None:
            continue  # new files are exempt
        real = Path(os.path.realpath(step.path))
        try:
            ctx.seen.check(real, step.before, display_path(step.path, ctx.cwd),
                           writers.get(real) if writers is not None else None, ctx.agent_path)
        except StaleWrite as exc:
            problems.append(str(exc))
    if len(problems) == 1:
        raise ArgError(problems[0])
    if problems:
        raise ArgError(f"{len(problems)} files cannot be changed:\n"
                       + "\n".join(f"- {p}" for p in problems))


def record_seen(ctx: ToolContext, steps: list[Step]) -> dict[str, str | None]:
    """After a successful write: this agent has seen what it wrote, and it is the tree's
    last writer of those files. Returns the ``seen`` metadata (path -> sha256, None: gone)."""
    if ctx.seen is None:
        return {}
    writers = getattr(ctx.leases, "writers", None)
    seen: dict[str, str | None] = {}
    for step in steps:
        if step.kind != "file":
            continue
        real = Path(os.path.realpath(step.path))
        if step.after is None:
            ctx.seen.forget(real)
            sha = None
        else:
            sha = ctx.seen.saw(real, step.after)
        seen[str(real)] = sha
        if writers is not None:
            writers.wrote(real, ctx.agent_path, sha)
    return seen


def _real_paths(paths: Any) -> list[Path]:
    return [Path(os.path.realpath(p)) for p in paths]


# The tools after whose writes the language servers' new errors are reported ([lsp]
# diagnostics_after_edit).
DIAGNOSED_TOOLS = frozenset({"write", "edit", "multi_edit", "apply_patch", "lsp_rename"})
# The tools after which ``[agent] format_on_edit = "auto"`` formats what they wrote.
FORMATTED_TOOLS = frozenset({"write", "edit", "multi_edit", "apply_patch", "batch_apply"})


async def _lsp_before(tool: Any, args: dict[str, Any], ctx: ToolContext) -> Any:
    """What the language servers report before the edit (``ctx.lsp.before_edit``), or None."""
    if ctx.lsp is None or tool.name not in DIAGNOSED_TOOLS:
        return None
    from nyzhi.tools.gates import target_paths

    try:
        paths = args["_texts"].keys() if "_texts" in args else target_paths(tool, args, ctx)
        return await ctx.lsp.before_edit(list(paths))  # real paths already
    except Exception:  # bad arguments fail in planning, with their own message
        return None


async def _lsp_after(watch: Any, changes: list[FileChange], result: ToolResult) -> None:
    """New errors in the files just written, appended to the result the model reads."""
    written = _real_paths(c.path for c in changes if c.kind == "file" and c.after is not None)
    if not written or result.is_error:
        return
    note = await watch.after(written)
    if note:
        result.output = f"{result.output}\n\n{note}"
        result.metadata["lsp_new_errors"] = True


def count_lines(data: bytes) -> int:
    return len(decode(data).splitlines())


class _PlanningTool(BuiltinTool):
    permission = Permission.NEEDS_APPROVAL
    writes_files = True

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        raise NotImplementedError

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        raise NotImplementedError

    def report(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> ToolResult:
        """The result the model reads: the summary line and the diff of what changed."""
        text = self.summary(ctx, steps, args)
        diff = diff_steps(ctx, steps, RESULT_DIFF_LINES)
        return ToolResult(
            output=f"{text}\n{diff}" if diff else text,
            metadata={"paths": [str(s.path) for s in steps if s.kind == "file"]},
        )

    def transact(self, args: dict[str, Any], ctx: ToolContext) -> tuple[ToolResult, list[FileChange]]:
        """Plan, write and report one call. Blocking: runs in a worker thread.

        The stale-write check runs here, after planning read each file's current bytes and
        before anything is written, under the call's write leases and the transaction lock."""
        with TRANSACTION_LOCK:
            steps = self.plan(args, ctx)
            if ctx.seen is not None and self.name in GUARDED_TOOLS:
                check_unchanged(ctx, steps)
            planned = [Planned(path=s.path, after=s.after, kind=s.kind, mode=s.mode) for s in steps]
            changes = apply(ctx, self.name, planned)
            seen = record_seen(ctx, steps)
        result = self.report(ctx, steps, args)
        if seen:
            result.metadata["seen"] = seen
        return result, changes

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        watch = await _lsp_before(self, args, ctx)
        # Not abandoned on cancel: a write that started finishes, and is recorded (below, before
        # any checkpoint could deliver the cancellation) so /undo knows about it.
        result, changes = await run_blocking(self.transact, args, ctx)
        if ctx.format_on_edit == "auto" and self.name in FORMATTED_TOOLS:
            from nyzhi.tools.formatting import format_changes

            # before the change is recorded: its ``after`` becomes the formatted bytes
            note = await format_changes(ctx, changes)
            if note:
                result = attrs.evolve(result, output=f"{result.output}\n[{note}]")
        record(ctx.changes, changes)
        if watch is not None:
            await _lsp_after(watch, changes, result)
        return result

    def _preview(self, args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            return diff_steps(ctx, self.plan(args, ctx), PREVIEW_DIFF_LINES)
        except (ArgError, ToolPathError, OSError, ValueError) as exc:
            return f"(no preview: {exc})"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return await run_blocking(self._preview, args, ctx)


class WriteTool(_PlanningTool):
    name = "write"
    description = (
        "Create a file, or replace a file's whole content, creating missing parent directories. "
        "To change part of an existing file use edit or multi_edit: they send only the changed "
        "text and cannot drop the rest by accident. Read a file before overwriting it. The "
        "change can be undone with /undo."
    )
    parameters = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "File to write."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["file_path", "content"],
    }

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        path = resolve_arg(ctx, args.get("file_path"))
        content = req_str(args, "content", allow_empty=True)
        before = read_existing(ctx, path)
        return missing_parents(path) + [Step(path=path, before=before, after=encode(content))]

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        step = steps[-1]
        verb = "Created" if step.before is None else "Wrote"
        return f"{verb} {display_path(step.path, ctx.cwd)} ({count_lines(step.after or b'')} lines)"


def replace_once(text: str, old: str, new: str, *, replace_all: bool, where: str) -> tuple[str, int]:
    """``text`` with ``old`` replaced; ``old`` must occur exactly once unless ``replace_all``.
    Files with CRLF line endings also match an ``old`` written with plain newlines."""
    if not old:
        raise ArgError(
            f"{where}: old_string must not be empty; give the exact text to replace (use write "
            "to create a file)"
        )
    if old == new:
        raise ArgError(
            f"{where}: old_string and new_string are identical, so nothing would change; put "
            "the new text in new_string"
        )
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise ArgError(
            f"{where}: old_string not found. It must match the file exactly, including "
            "whitespace and indentation: read the file again and copy the text without the "
            "line-number prefix."
        )
    if count > 1 and not replace_all:
        raise ArgError(
            f"{where}: old_string matched {count} times; it must match exactly once. Add "
            "surrounding lines to make it unique, or set replace_all to true to change all "
            f"{count}."
        )
    return text.replace(old, new), count


class EditTool(_PlanningTool):
    name = "edit"
    description = (
        "Replace one exact piece of text in a file. old_string must match the file character "
        "for character, indentation included, and occur exactly once unless replace_all is "
        "true; include a few surrounding lines to make it unique. Copy it from read output "
        "without the line-number prefix. For several changes at once use multi_edit; to create "
        "a file, write."
    )
    parameters = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "File to change."},
            "old_string": {"type": "string", "description": "The exact text to replace, as it appears in the file."},
            "new_string": {"type": "string", "description": "The text to put in its place (empty to delete it)."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of exactly one (default false)."},
        },
        "required": ["file_path", "old_string", "new_string"],
    }

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        path = resolve_arg(ctx, args.get("file_path"))
        old = req_str(args, "old_string", allow_empty=True)
        new = req_str(args, "new_string", allow_empty=True)
        replace_all = opt_bool(args, "replace_all", False)
        before = read_existing(ctx, path)
        shown = display_path(path, ctx.cwd)
        if before is None:
            raise ArgError(f"{shown}: file not found; check the path with glob, or use write to create it")
        text, count = replace_once(decode(before), old, new, replace_all=replace_all, where=shown)
        return [Step(path=path, before=before, after=encode(text), count=count)]

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        n = steps[0].count
        return f"Edited {display_path(steps[0].path, ctx.cwd)} ({n} replacement{'s' if n != 1 else ''})"


class MultiEditTool(_PlanningTool):
    name = "multi_edit"
    description = (
        "Make several exact replacements, in one or more files, as one change: if any of them "
        "does not match exactly once, no file is touched. A file's replacements apply in order, "
        "each to the result of the previous one. Shape: {\"edits\": [{\"file\": \"src/a.py\", "
        "\"replacements\": [{\"old\": \"x = 1\", \"new\": \"x = 2\"}]}]}. For one change, edit "
        "is simpler."
    )
    parameters = {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "description": "The files to change, each with its replacements.",
                "items": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string", "description": "File to change."},
                        "replacements": {
                            "type": "array",
                            "description": "Replacements for this file, applied in order.",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "old": {"type": "string", "description": "Exact text to replace; must occur once."},
                                    "new": {"type": "string", "description": "Replacement text."},
                                },
                                "required": ["old", "new"],
                            },
                        },
                    },
                    "required": ["file", "replacements"],
                },
            }
        },
        "required": ["edits"],
    }

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        edits = args.get("edits")
        if not isinstance(edits, list):
            return []
        return [e["file"] for e in edits if isinstance(e, dict) and isinstance(e.get("file"), str)]

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        edits = args.get("edits")
        if not isinstance(edits, list) or not edits:
            raise ArgError(
                "'edits' must be a non-empty array like "
                '[{"file": "a.py", "replacements": [{"old": "x", "new": "y"}]}]'
            )
        steps: dict[Path, Step] = {}
        texts: dict[Path, str] = {}
        for i, edit in enumerate(edits, start=1):
            if not isinstance(edit, dict) or not isinstance(edit.get("replacements"), list):
                raise ArgError(
                    f"edits[{i}] must be an object with 'file' and a 'replacements' array of "
                    "{old, new}"
                )
            path = resolve_arg(ctx, edit.get("file"), arg=f"edits[{i}].file")
            if path not in steps:
                before = read_existing(ctx, path)
                if before is None:
                    raise ArgError(
                        f"edits[{i}]: {display_path(path, ctx.cwd)}: file not found; check the path with "
                        "glob (multi_edit only changes existing files)"
                    )
                steps[path] = Step(path=path, before=before, after=before)
                texts[path] = decode(before)
            for j, rep in enumerate(edit["replacements"], start=1):
                if not isinstance(rep, dict) or not isinstance(rep.get("old"), str) or not isinstance(rep.get("new"), str):
                    raise ArgError(f"edits[{i}].replacements[{j}] must be an object with string 'old' and 'new'")
                where = f"edits[{i}] ({display_path(path, ctx.cwd)}) replacement {j}"
                texts[path], _ = replace_once(texts[path], rep["old"], rep["new"], replace_all=False, where=where)
        for path, step in steps.items():
            step.after = encode(texts[path])
        return list(steps.values())

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        names = ", ".join(display_path(s.path, ctx.cwd) for s in steps)
        return f"Edited {len(steps)} file{'s' if len(steps) != 1 else ''}: {names}"


def _regular_source(ctx: ToolContext, raw: Any, arg: str) -> tuple[Path, bytes]:
    path = resolve_arg(ctx, raw, arg=arg)
    shown = display_path(path, ctx.cwd)
    if os.path.islink(path):
        raise ArgError(f"{shown} is a symlink; this tool only handles regular files")
    if not os.path.lexists(path):
        raise ArgError(f"{shown}: no such file")
    if os.path.isdir(path):
        raise ArgError(f"{shown} is a directory; this tool only handles files (use bash for directories)")
    data = read_existing(ctx, path)
    assert data is not None
    return path, data


def _free_destination(ctx: ToolContext, raw: Any) -> Path:
    path = resolve_arg(ctx, raw, arg="destination")
    if os.path.lexists(path):
        raise ArgError(f"destination {display_path(path, ctx.cwd)} already exists; delete it first or pick another name")
    return path


class DeleteFileTool(_PlanningTool):
    name = "delete_file"
    description = (
        "Delete one file or an empty directory; /undo restores it. A directory that still has "
        "entries is refused: delete its files first."
    )
    parameters = {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "File or empty directory to delete."}},
        "required": ["path"],
    }

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        path = resolve_arg(ctx, args.get("path"), arg="path")
        shown = display_path(path, ctx.cwd)
        if os.path.isdir(path) and not os.path.islink(path):
            with os.scandir(path) as entries:
                not_empty = any(entries)
            if not_empty:
                raise ArgError(f"{shown} is a directory that is not empty; delete_file removes files and empty directories only")
            return [Step(path=path, before=b"", after=None, kind="dir")]
        _, data = _regular_source(ctx, args.get("path"), "path")
        return [Step(path=path, before=data, after=None, mode=file_mode(path))]

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        kind = "directory" if steps[0].kind == "dir" else "file"
        return f"Deleted {kind} {display_path(steps[0].path, ctx.cwd)}"

    def report(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> ToolResult:
        return ToolResult(output=self.summary(ctx, steps, args), metadata={"paths": [str(steps[0].path)]})


class MoveFileTool(_PlanningTool):
    name = "move_file"
    deferred = True  # seldom needed: listed in one line until tool_search loads it
    description = (
        "Move or rename one file, creating the destination's missing parent directories. It "
        "refuses an existing destination, and handles regular files only (not directories or "
        "symlinks)."
    )
    parameters = {
        "type": "object",
        "properties": {
            "source": {"type": "string", "description": "File to move."},
            "destination": {"type": "string", "description": "New path; must not exist yet."},
        },
        "required": ["source", "destination"],
    }

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        src, data = _regular_source(ctx, args.get("source"), "source")
        dst = _free_destination(ctx, args.get("destination"))
        mode = file_mode(src)
        # Destination first: a failure leaves the source untouched.
        return missing_parents(dst) + [
            Step(path=dst, before=None, after=data, mode=mode),
            Step(path=src, before=data, after=None, mode=mode),
        ]

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        return f"Moved {display_path(steps[-1].path, ctx.cwd)} -> {display_path(steps[-2].path, ctx.cwd)}"

    def report(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> ToolResult:
        return ToolResult(output=self.summary(ctx, steps, args))


class CopyFileTool(_PlanningTool):
    name = "copy_file"
    deferred = True  # seldom needed: listed in one line until tool_search loads it
    description = (
        "Copy one file to a new path, keeping its permissions and creating missing parent "
        "directories. It refuses an existing destination, and handles regular files only."
    )
    parameters = {
        "type": "object",
        "properties": {
            "source": {"type": "string", "description": "File to copy."},
            "destination": {"type": "string", "description": "New path; must not exist yet."},
        },
        "required": ["source", "destination"],
    }

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        src, data = _regular_source(ctx, args.get("source"), "source")
        dst = _free_destination(ctx, args.get("destination"))
        return missing_parents(dst) + [Step(path=dst, before=None, after=data, mode=file_mode(src))]

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        return f"Copied {display_path(resolve_arg(ctx, args.get('source'), arg='source'), ctx.cwd)} -> {display_path(steps[-1].path, ctx.cwd)}"

    def report(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> ToolResult:
        return ToolResult(output=self.summary(ctx, steps, args))


class CreateDirTool(_PlanningTool):
    name = "create_dir"
    deferred = True  # write creates missing parents; this is for empty directories
    description = (
        "Create a directory and any missing parents, like mkdir -p; an existing directory is "
        "fine. write, move_file and copy_file create parents themselves, so this is only needed "
        "for an empty directory."
    )
    parameters = {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Directory to create."}},
        "required": ["path"],
    }

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        path = resolve_arg(ctx, args.get("path"), arg="path")
        if os.path.lexists(path) and not os.path.isdir(path):
            raise ArgError(f"{display_path(path, ctx.cwd)} already exists and is not a directory")
        if os.path.isdir(path):
            return []
        return missing_parents(path) + [Step(path=path, before=None, after=b"", kind="dir")]

    def report(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> ToolResult:
        shown = display_path(resolve_arg(ctx, args.get("path"), arg="path"), ctx.cwd)
        if not steps:
            return ToolResult(output=f"Directory {shown} already exists")
        return ToolResult(output=f"Created directory {shown}")




class NotebookEditTool(_PlanningTool):
    name = "notebook_edit"
    description = (
        "Replace, insert or delete one cell of a Jupyter notebook (.ipynb) by the id read "
        "shows. An insert goes after cell_id (first without it). The notebook stays valid; a "
        "replaced code cell loses its outputs. Undo with /undo."
    )
    deferred = True  # few projects have notebooks: tool_search loads it
    parameters = {
        "type": "object",
        "properties": {
            "notebook_path": {"type": "string", "description": "The .ipynb file."},
            "cell_id": {"type": "string", "description": "The cell to change, or to insert after."},
            "new_source": {"type": "string", "description": "The cell's new source (ignored for delete)."},
            "cell_type": {"type": "string", "enum": ["code", "markdown", "raw"],
                          "description": "Needed to insert; with replace, changes the cell's type."},
            "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"],
                          "description": "Default replace."},
        },
        "required": ["notebook_path"],
    }

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        raw = args.get("notebook_path")
        return [raw] if isinstance(raw, str) and raw else []

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        from nyzhi.tools import notebook

        path = resolve_arg(ctx, args.get("notebook_path"), arg="notebook_path")
        shown = display_path(path, ctx.cwd)
        if not notebook.is_notebook_path(path):
            raise ArgError(f"{shown} is not a .ipynb notebook; use edit for other files")
        mode = args.get("edit_mode") or "replace"
        before = read_existing(ctx, path)
        if before is None:
            raise ArgError(f"{shown}: notebook not found")
        kind = args.get("cell_type")
        try:
            after, _said = notebook.edit(
                before, shown, mode=str(mode),
                cell=str(args["cell_id"]) if args.get("cell_id") else None,
                source="" if mode == "delete" else req_str(args, "new_source", allow_empty=True),
                kind=str(kind) if kind else None)
        except notebook.NotebookError as exc:
            raise ArgError(str(exc)) from None
        return [Step(path=path, before=before, after=after)]

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        from nyzhi.tools import notebook

        step, shown = steps[0], display_path(steps[0].path, ctx.cwd)
        mode = args.get("edit_mode") or "replace"
        if mode == "insert":
            new = notebook.new_ids(step.before or b"", step.after or b"")
            return f"Inserted cell {', '.join(new)} in {shown}"
        return f"{'Deleted' if mode == 'delete' else 'Replaced'} cell {args.get('cell_id')} of {shown}"


TOOLS = (
    WriteTool, EditTool, MultiEditTool, DeleteFileTool, MoveFileTool, CopyFileTool, CreateDirTool,
    NotebookEditTool,
)
