"""Going back to a checkpoint: the code, the conversation, or both.

One path for the console, the line chat, the web console and ``nyz rewind``:

* ``plan_code`` works out, for every path changed since the point, what it held then, and
  which of those files someone else changed since nyz last wrote them (``OutsideChanges``
  unless forced: a restore never silently discards work nyz did not do);
* ``restore_code`` first opens a "restore" point, so the files it overwrites are kept as they
  are (a restore never loses the current state: ``/checkpoint restore`` of that point undoes
  it), then writes through ``nyzhi.tools.undo.apply``, all or nothing, inside the sandbox;
* ``conversation_at`` rebuilds the main thread as it was at the point from the session log
  (``SessionStore.load(upto=...)``); the caller makes it the thread, and the later prompts
  are dropped from the list.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nyzhi import records
from nyzhi.config.paths import display_path
from nyzhi.core.runtime.checkpoints.recorder import Recorder
from nyzhi.core.runtime.checkpoints.store import (
    DIR,
    NOT_TRACKED,
    Blobs,
    CheckpointError,
    History,
    Point,
    fingerprint,
)

MODES = ("code", "conversation", "both")
_MISSING = "missing"


class OutsideChanges(CheckpointError):
    """Files changed outside nyz since it last wrote them; restoring would overwrite them."""

    def __init__(self, paths: list[str], force_hint: str) -> None:
        self.paths = paths
        super().__init__(
            "not restored: changed outside nyz since nyz last wrote them: "
            + ", ".join(paths) + f"; {force_hint} overwrites them")


@records.define
class CodePlan:
    planned: list[Any]  # nyzhi.tools.undo.Planned, in the order to apply them
    outside: list[str]  # paths changed outside nyz since nyz last wrote them
    kept: list[str]  # directories left in place: something else is in them now


def select(history: History, target: str) -> Point:
    """Point ``target``: a prompt number (1 = the first prompt still in the conversation)
    or a checkpoint's name."""
    prompts = history.prompts()
    if target.isdigit():
        n = int(target)
        if not 1 <= n <= len(prompts):
            raise CheckpointError(f"no prompt {n}: this session has "
                                  f"{len(prompts)} prompt(s) to rewind to")
        return prompts[n - 1]
    point = history.named(target)
    if point is None:
        names = sorted({p.label for p in history.points if p.kind in ("named", "restore")})
        raise CheckpointError(f"no checkpoint named {target!r} (checkpoints: "
                              f"{', '.join(names) or 'none'})")
    return point


def _current(path: Path, kind: str) -> tuple[bytes | None, str | None]:
    from nyzhi.tools.undo import snapshot

    try:
        data = snapshot(path, kind)
    except OSError:
        return None, "other"  # a directory or symlink where a file was: never nyz's
    return data, fingerprint(kind, data)


def plan_code(history: History, blobs: Blobs, seq: int, root: Path) -> CodePlan:
    """What restoring point ``seq`` writes in the workspace ``root`` (blocking: reads every
    file and blob). A journal naming a path outside ``root`` is refused whatever the sandbox
    allows: nothing outside the workspace was ever recorded."""
    from nyzhi.tools.undo import Planned

    mkdirs: list[Any] = []
    files: list[Any] = []
    rmdirs: list[Path] = []
    outside: list[str] = []
    top = os.path.realpath(root) + os.sep
    for name, before in history.targets(seq).items():
        if not name.startswith(top):
            raise CheckpointError(f"the checkpoint names {name}, outside the workspace "
                                  f"{root}: not restoring anything")
        path = Path(name)
        want: bytes | None
        if before.blob is None:
            want = None
        elif before.kind == "dir":
            want = b""
        else:
            want = blobs.get(before.blob)
        _now, seen = _current(path, before.kind)
        wanted = fingerprint(before.kind, want)
        if seen == wanted:
            continue
        if seen != history.afters.get(name, _MISSING):
            outside.append(name)
        if before.kind == "dir" and want is None:
            rmdirs.append(path)
        elif before.kind == "dir":
            mkdirs.append(Planned(path=path, after=b"", kind="dir"))
        else:
            files.append(Planned(path=path, after=want, mode=before.mode))
    # Directories made since: removed deepest first, and only when nothing else is in them.
    gone = {p.path for p in files if p.after is None}
    removed: list[Any] = []
    kept: list[str] = []
    for path in sorted(rmdirs, key=lambda p: len(p.parts), reverse=True):
        try:
            left = [path / entry for entry in os.listdir(path)]
        except OSError:
            left = []
        if all(entry in gone for entry in left):
            removed.append(Planned(path=path, after=None, kind="dir"))
            gone.add(path)
        else:
            kept.append(str(path))
            if str(path) in outside:
                outside.remove(str(path))
    mkdirs.sort(key=lambda p: len(p.path.parts))
    return CodePlan([*mkdirs, *files, *removed], outside, kept)


def restore_code(recorder: Recorder, ctx: Any, point: Point, *, force: bool,
                 force_hint: str) -> tuple[list[Any], list[str]]:
    """Put the workspace's files back as they were at ``point`` (blocking: a worker thread).

    Returns the changes made (for the change log, so ``/undo`` can revert the restore) and
    one line per path. ``OutsideChanges`` (nothing written) unless ``force``."""
    from functools import partial

    from nyzhi.tools.paths import check_restore
    from nyzhi.tools.undo import TRANSACTION_LOCK, apply

    # Recorded paths are real ones: shown relative to the workspace's real path.
    shown = partial(display_path, root=ctx.workspace_root, real_root=True)
    with TRANSACTION_LOCK:  # no agent writes between the plan and the writes
        history = recorder.journal.load()
        plan = plan_code(history, recorder.journal.store.blobs, point.seq,
                         Path(ctx.workspace_root))
        for planned in plan.planned:  # a symlink or protected path: refused first, forced or not
            check_restore(ctx.sandbox, planned.path, allow_protected=force,
                          force_hint=force_hint)
        if plan.outside and not force:
            raise OutsideChanges([shown(p) for p in plan.outside], force_hint)
        lines = [f"kept {shown(p)}/ (other files are in it now)" for p in plan.kept]
        if not plan.planned:
            return [], [*lines, "the files are already as they were then"]
        seq = recorder.begin("restore", f"undo-restore-{recorder.seq + 1}")
        # A restore asks the one protected-path check and follows no symlink
        # (``nyzhi.tools.paths.check_restore``): refused before anything is written.
        changes = apply(ctx, "rewind", plan.planned, restore=True, force=force,
                        force_hint=force_hint)
    recorder.sync()
    for change in changes:
        doing = "removed" if change.after is None else "restored"
        lines.append(f"{doing} {shown(change.path)}"
                     + ("/" if change.kind == "dir" else ""))
    lines.append(f"the files as they were before this restore are kept as checkpoint "
                 f"undo-restore-{seq}")
    return changes, lines


def conversation_at(session_id: str, point: Point) -> list[Any]:
    """The main thread as it was at ``point`` (blocking: reads the session log)."""
    from nyzhi.core.runtime.sessions import SessionStore

    if point.log is None:
        raise CheckpointError("this session's conversation was not saved (--ephemeral, or "
                              "its log could not be written): only its code can be rewound")
    return SessionStore().load(session_id, upto=point.log).messages


def dropped_by(history: History, point: Point) -> list[int]:
    """The prompts a rewind of the conversation to ``point`` takes out of it."""
    return [p.seq for p in history.prompts() if p.seq >= point.seq]


def listing(history: History, how: str) -> list[str]:
    """The prompts to rewind to and the named checkpoints, with what is not tracked."""
    prompts = history.prompts()
    if not prompts and not any(p.kind in ("named", "restore") for p in history.points):
        return ["no checkpoints yet: every prompt makes one", f"note: {NOT_TRACKED}"]
    lines = [f"prompts ({how}):"] if prompts else ["prompts: (none in the conversation now)"]
    for n, point in enumerate(prompts, 1):
        text = " ".join(point.label.split())
        text = text if len(text) <= 48 else text[:47] + "…"
        changed = history.changed_after(point.seq)
        lines.append(f"  {n:>3}. {text:<48}  {changed} file(s) changed"
                     if changed else f"  {n:>3}. {text}")
    named = [p for p in history.points if p.kind in ("named", "restore")]
    if named:
        lines.append("named checkpoints (/checkpoint restore NAME):")
        lines += [f"  {p.label}" + ("  (the state before a restore)" if p.kind == "restore"
                                    else "") for p in named]
    lines.append(f"note: {NOT_TRACKED}")
    return lines


def parse_mode(words: list[str]) -> tuple[str, bool]:
    """``[code|conversation|both] [force]`` in any order: (mode, force); ``ValueError``."""
    mode, force = "both", False
    for word in words:
        if word in MODES:
            mode = word
        elif word in ("force", "--force"):
            force = True
        else:
            raise ValueError(f"unknown word {word!r}: expected code, conversation, both "
                             "or force")
    return mode, force


__all__ = [
    "DIR", "MODES", "CodePlan", "OutsideChanges", "conversation_at", "dropped_by", "listing",
    "parse_mode", "plan_code", "restore_code", "select",
]
