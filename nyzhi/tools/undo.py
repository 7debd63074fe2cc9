"""Recording file changes as one transaction, and reverting them for ``/undo``.

A tool call that touches several files (multi_edit, apply_patch, move_file) goes through
``apply``: every target is re-checked by the sandbox first (one refusal writes nothing), then
the files are written in order and, if any write fails, the ones already written are put back.
``record`` then puts the changes in ``ctx.changes`` under one batch id so ``undo_last`` reverts
the whole call at once. The change log's ``watcher`` (the checkpoints, ``nyzhi.core.runtime.checkpoints``)
is told of each write before it is made and after, and of each revert.

Threads: the disk part (``apply``) is thread-safe and records nothing, so the tools run their
plan and write in a worker thread (``nyzhi.tools.offload``) and ``record`` the result on the trio
thread. ``TRANSACTION_LOCK`` keeps one plan-and-write at a time in the process, as running
them on the trio thread did: two agents editing one file must not both read the old bytes and
let the second rename silently drop the first edit.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import attrs

from nyzhi import records
from nyzhi.oserror import StorageError, describe_os_error
from nyzhi.tools.base import ChangeLog, FileChange, ToolContext
from nyzhi.tools.paths import (
    check_restore,
    check_write,
    file_mode,
    mkdir_nofollow,
    read_bytes_nofollow,
    rmdir_nofollow,
    unlink_nofollow,
    write_nofollow,
)

TRANSACTION_LOCK = threading.Lock()
"""Held by a file-changing tool from its first read to its last write (see the module doc)."""


class UndoConflict(Exception):
    """The file changed since the tool wrote it; reverting would lose those later edits."""


@records.define
class Planned:
    """One intended change: ``after`` None deletes; ``kind`` "dir" creates/removes a directory."""

    path: Path
    after: bytes | None
    kind: str = "file"
    mode: int | None = None  # permission bits for a new file (a copy keeps its source's)


def snapshot(path: Path, kind: str) -> bytes | None:
    """What is at ``path`` now: a file's bytes, b"" for a directory (``kind`` "dir"), None for
    nothing. ``IsADirectoryError`` when it is not what ``kind`` says."""
    if kind == "dir":
        return b"" if path.is_dir() and not path.is_symlink() else None
    if not os.path.lexists(path):
        return None
    if path.is_symlink() or not path.is_file():
        raise IsADirectoryError(f"{path} is not a regular file")
    return read_bytes_nofollow(path)


def put(path: Path, after: bytes | None, kind: str, mode: int | None = None) -> None:
    """Make ``path`` hold ``after`` (None: remove it), atomically and refusing symlinks."""
    if kind == "dir":
        if after is None:
            rmdir_nofollow(path)
        else:
            mkdir_nofollow(path)
    elif after is None:
        unlink_nofollow(path)
    else:
        write_nofollow(path, after, mode=mode)


def _doing(path: Path, after: bytes | None, kind: str) -> str:
    if kind == "dir":
        return "create the directory" if after is not None else "remove the directory"
    return "write" if after is not None else "delete"


def apply(ctx: ToolContext, tool: str, planned: list[Planned], *, restore: bool = False,
          force: bool = False, force_hint: str = "") -> list[FileChange]:
    """Apply ``planned`` all-or-nothing and return the changes, without recording them.

    ``restore`` (a rewind): the paths are what a journal recorded, checked by
    ``check_restore`` instead of resolved (a symlink in them is refused, protected
    configuration is refused unless ``force``), before anything is written.

    Blocking disk I/O (fsync of each file and its directory): call it from a worker thread.
    Raises ``ToolPathError`` (sandbox refusal, nothing written) or ``OSError`` (after rolling
    back what was written; a ``StorageError`` naming the file and why, such as ``no space
    left on device``, and any file that could not be put back)."""
    # The sandbox re-check runs here, right before the writes, in the same thread.
    if restore:
        resolved = [(check_restore(ctx.sandbox, p.path, allow_protected=force,
                                   force_hint=force_hint), p) for p in planned]
    else:
        resolved = [(check_write(ctx, p.path), p) for p in planned]
    changes = []
    for path, p in resolved:
        changes.append(
            FileChange(
                path=path, before=snapshot(path, p.kind), after=p.after, tool=tool,
                kind=p.kind, mode=file_mode(path) if p.kind == "file" else None,
                policy=ctx.sandbox,
            )
        )
    watcher = ctx.changes.watcher
    if watcher is not None:  # the checkpoint holds the old bytes before the first is replaced
        watcher.before_write(changes)
    done: list[FileChange] = []
    change: FileChange | None = None
    try:
        for change, (_, plan) in zip(changes, resolved, strict=True):
            if change.kind == "dir" and (change.before is None) == (change.after is None):
                continue  # mkdir of an existing dir: nothing to do
            put(change.path, change.after, change.kind, plan.mode)
            done.append(change)
    except BaseException as exc:
        not_restored = []
        for undone in reversed(done):
            try:
                put(undone.path, undone.before, undone.kind, undone.mode)
            except OSError as again:  # say so: that file now holds the new bytes
                not_restored.append(
                    describe_os_error(again, "put back", undone.path, "it holds the new content")
                )
        if isinstance(exc, OSError) and change is not None:
            message = describe_os_error(
                exc, _doing(change.path, change.after, change.kind), change.path,
                "nothing was changed" if not done else "",
            )
            if done and not not_restored:
                message += "; the files written before it were put back"
            raise StorageError("; ".join([message, *not_restored]), exc) from exc
        raise
    if watcher is not None:
        watcher.after_write(changes)
    return changes


def record(log: ChangeLog, changes: list[FileChange]) -> None:
    """Record one tool call's ``changes`` as one batch (a no-op for none). Trio thread only."""
    if not changes:
        return
    batch = log.new_batch()
    for change in changes:
        change.batch = batch
        log.record(change)


def revert(change: FileChange, *, force: bool = False) -> str:
    """Put one change back (restore ``before``, or remove what the tool created).

    Unless ``force``, refuses with ``UndoConflict`` when the file no longer holds what the tool
    wrote, so an undo never silently discards edits made afterwards (by the user or a command).
    Like every restore it asks ``check_restore`` first (``ToolPathError``: a symlink in the
    path now, outside the roots, or protected configuration, which ``force`` does not lift).
    """
    path = check_restore(change.policy, Path(change.path))
    try:
        current = snapshot(path, change.kind)
    except OSError:
        current = b"\0not a regular file"  # never equals what a tool wrote
    if not force and current != change.after:
        raise UndoConflict(
            f"{path} changed after {change.tool} wrote it; not reverting (use force to override)"
        )
    try:
        put(path, change.before, change.kind, change.mode)
    except OSError as exc:  # a full or read-only disk: the file and the record stay as they were
        raise StorageError.wrap(
            exc, "put back", path, "the change stays recorded; undo again once that is fixed"
        ) from exc
    if change.before is None:
        return f"removed {path}"
    if change.after is None:
        return f"restored {path}"
    return f"reverted {path}"


def undo_last(changes: ChangeLog, *, force: bool = False) -> list[str]:
    """Revert the most recent tool call's changes (its whole batch), newest first, and drop them
    from the log. Returns one line per reverted path; [] when there is nothing to undo.

    Writes and fsyncs like a tool: an async caller runs it with ``nyzhi.tools.offload.run_blocking``."""
    if not changes.changes:
        return []
    batch = changes.changes[-1].batch
    group = []
    while changes.changes and changes.changes[-1].batch == batch:
        group.append(changes.changes.pop())
    messages = []
    for i, change in enumerate(group):
        try:
            messages.append(revert(change, force=force))
        except BaseException:
            # Keep the log truthful: the ones not reverted stay recorded.
            changes.changes.extend(reversed(group[i:]))
            raise
        if changes.watcher is not None:  # the file now holds what it held before the change
            changes.watcher.after_write([attrs.evolve(change, after=change.before)])
    return messages


def undo_all(changes: ChangeLog, *, force: bool = False, since: int = 0) -> list[str]:
    """Revert every recorded change of a batch ``since`` or later (0: all of them; a turn's
    start ``ChangeLog.next_batch``: that turn's), newest batch first. Stops at the first
    conflict (``UndoConflict``), the batches already reverted staying reverted."""
    messages: list[str] = []
    while changes.changes and changes.changes[-1].batch >= since:
        messages.extend(undo_last(changes, force=force))
    return messages
