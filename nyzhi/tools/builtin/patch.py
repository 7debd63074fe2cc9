"""apply_patch: apply a unified diff (one or many files, creations and deletions) atomically.

Models write patches with wrong line counts, drifted line numbers and stray blank lines, so the
parser ignores the hunk header counts (it reads lines until the next header) and the applier
uses the header's start line only as a hint: it looks for the hunk's exact context nearest to
it, then again ignoring trailing whitespace. Every hunk of every file must apply before
anything is written; the write itself goes through the undo transaction, which rolls back.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs

from nyzhi import records
from nyzhi.config.paths import display_path
from nyzhi.tools.base import ToolContext
from nyzhi.tools.builtin._diff import decode, encode
from nyzhi.tools.builtin.common import ArgError, req_str
from nyzhi.tools.builtin.files_write import Step, _PlanningTool, missing_parents, read_existing
from nyzhi.tools.paths import resolve_arg

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ArgError):
    """The patch is malformed or does not apply; nothing was written."""


@records.define
class Hunk:
    header: str
    old_start: int
    old: list[str] = attrs.field(factory=list)
    new: list[str] = attrs.field(factory=list)
    old_no_eol: bool = False
    new_no_eol: bool = False


@records.define
class FilePatch:
    old_path: str | None = None  # None: /dev/null (a new file)
    new_path: str | None = None  # None: /dev/null (a deletion)
    hunks: list[Hunk] = attrs.field(factory=list)
    git_new: bool = False
    git_deleted: bool = False


def _clean_path(raw: str) -> str | None:
    path = raw.split("\t")[0].strip()
    if path.startswith('"') and path.endswith('"'):
        path = path[1:-1]
    return None if path == "/dev/null" else path


def _strip_prefixes(fp: FilePatch) -> None:
    """Drop git's a/ and b/ prefixes when the patch uses that convention."""
    sides = [p for p in (fp.old_path, fp.new_path) if p is not None]
    old_ok = fp.old_path is None or fp.old_path.startswith("a/")
    new_ok = fp.new_path is None or fp.new_path.startswith("b/")
    if sides and old_ok and new_ok:
        fp.old_path = fp.old_path[2:] if fp.old_path else None
        fp.new_path = fp.new_path[2:] if fp.new_path else None


def _more_hunk(lines: list[str], i: int) -> bool:
    """Whether the blank line ``i`` sits inside a hunk (more hunk lines follow), so it is a
    context line that lost its leading space rather than a separator."""
    for nxt in lines[i + 1 :]:
        if nxt == "":
            continue
        if nxt.startswith(("--- ", "+++ ", "@@", "diff ")):
            return False
        return nxt[:1] in (" ", "-", "+", "\\")
    return False


def parse_patch(text: str) -> list[FilePatch]:
    """The file patches in ``text``; ``PatchError`` if there are none or a hunk has no file."""
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    files: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: Hunk | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.startswith("diff --git "):
            current, hunk = FilePatch(), None
            files.append(current)
            m = re.match(r"diff --git (\S+) (\S+)$", line)
            if m:
                current.old_path, current.new_path = m.group(1), m.group(2)
        elif line.startswith("--- ") and nxt.startswith("+++ "):
            if current is None or current.hunks or hunk is not None:
                current = FilePatch()
                files.append(current)
            hunk = None
            current.old_path, current.new_path = _clean_path(line[4:]), _clean_path(nxt[4:])
            i += 1
        elif line.startswith("new file mode") and current is not None:
            current.git_new = True
        elif line.startswith("deleted file mode") and current is not None:
            current.git_deleted = True
        elif line.startswith("@@"):
            hunk = _open_hunk(line, i, current)
        elif hunk is not None and (line[:1] in (" ", "-", "+") or (line == "" and _more_hunk(lines, i))):
            _add_line(hunk, line)
        elif hunk is not None and line.startswith("\\"):
            _no_eol(hunk, lines[i - 1][:1] if i else " ")
        else:
            hunk = None  # git extended headers, index lines, prose between files
        i += 1
    return _changes(files)


def _open_hunk(line: str, i: int, current: FilePatch | None) -> Hunk:
    """The hunk an ``@@`` header at line ``i`` begins, added to the current file's."""
    m = _HUNK_RE.match(line)
    if m is None:
        raise PatchError(
            f"line {i + 1}: malformed hunk header {line!r}; write it as '@@ -12,3 +12,4 @@'"
        )
    if current is None:
        raise PatchError(
            f"line {i + 1}: hunk before any file header; put '--- a/PATH' and '+++ b/PATH' "
            "lines before the first '@@' of each file"
        )
    hunk = Hunk(header=line, old_start=int(m.group(1)))
    current.hunks.append(hunk)
    return hunk


def _add_line(hunk: Hunk, line: str) -> None:
    """A hunk's context, removed or added line, to the old side, the new side or both."""
    if line == "":
        line = " "  # a blank context line whose leading space was lost
    if line[0] in (" ", "-"):
        hunk.old.append(line[1:])
    if line[0] in (" ", "+"):
        hunk.new.append(line[1:])


def _no_eol(hunk: Hunk, prev: str) -> None:
    """``\\ No newline at end of file``: the side(s) of the line before it end without one."""
    if prev in (" ", "-"):
        hunk.old_no_eol = True
    if prev in (" ", "+"):
        hunk.new_no_eol = True


def _changes(files: list[FilePatch]) -> list[FilePatch]:
    """The parsed files that change something, with git's prefixes dropped and a created or
    deleted file's missing side made None; ``PatchError`` if none is left."""
    for fp in files:
        _strip_prefixes(fp)
        if fp.git_new:
            fp.old_path = None
        if fp.git_deleted:
            fp.new_path = None
    files = [f for f in files if f.hunks or f.git_new or f.git_deleted or f.old_path != f.new_path]
    if not files:
        raise PatchError(
            "no file changes found: expected a unified diff in which each file starts with "
            "'--- a/PATH' and '+++ b/PATH' lines followed by '@@ -N,M +N,M @@' hunks"
        )
    return files


def _find(lines: list[str], needle: list[str], hint: int, lo: int) -> int | None:
    """Index where ``needle`` occurs in ``lines`` at or after ``lo``, nearest to ``hint``."""
    if not needle:
        return max(lo, min(hint, len(lines)))
    for norm in (lambda s: s, lambda s: s.rstrip()):
        target = [norm(s) for s in needle]
        candidates = range(lo, len(lines) - len(needle) + 1)
        best = None
        for start in sorted(candidates, key=lambda s: (abs(s - hint), s)):
            if [norm(s) for s in lines[start : start + len(needle)]] == target:
                best = start
                break
        if best is not None:
            return best
    return None


def apply_hunks(text: str, hunks: list[Hunk], label: str) -> str:
    """``text`` with ``hunks`` applied in order, or ``PatchError`` naming the failing hunk."""
    lines = text.split("\n")
    eol = True
    if lines and lines[-1] == "":
        lines.pop()
    elif text:
        eol = False
    lo = 0
    for n, h in enumerate(hunks, start=1):
        hint = max(0, h.old_start - 1) if h.old else h.old_start
        at = _find(lines, h.old, hint, lo)
        if at is None:
            raise PatchError(
                f"{label}: hunk {n} ({h.header}) does not apply: its context/removed lines were not "
                f"found (looked from line {lo + 1}). Re-read the file and regenerate the patch."
            )
        lines[at : at + len(h.old)] = h.new
        lo = at + len(h.new)
        if lo == len(lines):
            if h.new_no_eol:
                eol = False
            elif h.old_no_eol:
                eol = True
    if not lines:
        return ""
    return "\n".join(lines) + ("\n" if eol else "")


class ApplyPatchTool(_PlanningTool):
    name = "apply_patch"
    description = (
        "Apply a unified diff to one or more files as one change (if any hunk fails, no file "
        "is touched): edits, new files, deletions and renames. Prefer it to edit for changes "
        "spread over many places or files. Each file starts with '--- a/PATH' and '+++ b/PATH' "
        "('--- /dev/null' creates, '+++ /dev/null' deletes); each hunk with '@@ -OLD,N +NEW,M "
        "@@', then lines starting with ' ' (context), '-' (removed) or '+' (added). Example:\n"
        "--- a/app.py\n+++ b/app.py\n@@ -3,2 +3,2 @@\n def main():\n-    run(1)\n+    run(2)\n"
        "Line numbers and counts may be off, but context and removed lines must match the file; "
        "give about three context lines around each change."
    )
    parameters = {
        "type": "object",
        "properties": {"patch": {"type": "string", "description": "The unified diff text, every file in one patch."}},
        "required": ["patch"],
    }

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        try:
            files = parse_patch(args.get("patch") or "")
        except PatchError:
            return []
        out: list[str] = []
        for fp in files:
            for p in (fp.old_path, fp.new_path):
                if p and p not in out:
                    out.append(p)
        return out

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        files = parse_patch(req_str(args, "patch"))
        steps: list[Step] = []
        seen: dict[Path, Step] = {}
        for fp in files:
            old = resolve_arg(ctx, fp.old_path, arg="patch path") if fp.old_path else None
            new = resolve_arg(ctx, fp.new_path, arg="patch path") if fp.new_path else None
            label = display_path(new or old, ctx.cwd)  # type: ignore[arg-type]
            if old is None:
                assert new is not None
                if new in seen or read_existing(ctx, new) is not None:
                    raise PatchError(
                        f"{label}: the patch creates this file but it already exists; patch it "
                        "with '--- a/PATH' instead of '--- /dev/null'"
                    )
                text = apply_hunks("", fp.hunks, label)
                steps += [s for s in missing_parents(new) if s.path not in seen]
                seen[new] = Step(path=new, before=None, after=encode(text))
                steps.append(seen[new])
                continue
            if old in seen:
                step = seen[old]
                if step.after is None:
                    raise PatchError(f"{label}: patched after being deleted in the same patch")
                before_text = decode(step.after)
            else:
                before = read_existing(ctx, old)
                if before is None:
                    raise PatchError(
                        f"{display_path(old, ctx.cwd)}: file not found (the patch modifies it); check the "
                        "path, or use '--- /dev/null' to create a new file"
                    )
                step = Step(path=old, before=before, after=before)
                seen[old] = step
                steps.append(step)
                before_text = decode(before)
            text = apply_hunks(before_text, fp.hunks, label)
            if new is None:
                if text.strip() and fp.hunks:
                    raise PatchError(f"{label}: deletion patch does not remove the whole file")
                step.after = None
            elif new != old:
                if new in seen or read_existing(ctx, new) is not None:
                    raise PatchError(f"{display_path(new, ctx.cwd)}: rename target already exists")
                step.after = None
                steps += [s for s in missing_parents(new) if s.path not in seen]
                seen[new] = Step(path=new, before=None, after=encode(text))
                steps.append(seen[new])
            else:
                step.after = encode(text)
        return steps

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        parts = []
        for s in steps:
            if s.kind != "file":
                continue
            verb = "created" if s.before is None else "deleted" if s.after is None else "modified"
            parts.append(f"{verb} {display_path(s.path, ctx.cwd)}")
        return "Applied patch: " + ", ".join(parts)


TOOLS = (ApplyPatchTool,)
