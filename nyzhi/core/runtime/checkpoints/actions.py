"""What the checkpoint commands do, on a running session (``/rewind``, ``/undo all``,
``/checkpoint``, ``/retry``: every front end, through ``nyzhi.core.runtime.commands``) or on a saved
one (``nyz rewind``). Each returns the lines to show; a checkpoint that cannot be used raises
``CheckpointError`` with the one line that says why."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import trio

from nyzhi.core.runtime.checkpoints import rewind as rw
from nyzhi.core.runtime.checkpoints.recorder import Recorder
from nyzhi.core.runtime.checkpoints.store import CheckpointError, CheckpointStore

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _recorder(rt: Any) -> Recorder:
    if rt.checkpoints is None:
        raise CheckpointError("checkpoints are not recorded in this session")
    return rt.checkpoints


async def _history(rt: Any) -> Any:
    return await trio.to_thread.run_sync(_recorder(rt).journal.load)


async def listing(rt: Any, how: str) -> list[str]:
    return rw.listing(await _history(rt), how)


async def rewind(rt: Any, target: str, mode: str, *, force: bool, force_hint: str) -> list[str]:
    """Rewind the running session to ``target`` (a prompt number or a checkpoint's name):
    its code, its conversation, or both. The code goes first: when it is refused (files
    changed outside nyz), nothing changes."""
    from nyzhi.tools.offload import run_blocking
    from nyzhi.tools.undo import record

    recorder = _recorder(rt)
    history = await _history(rt)
    point = rw.select(history, target)
    context = rt.main_agent.tooling.context
    lines: list[str] = []
    messages = None
    if mode in ("conversation", "both"):  # read before anything is written: it may fail
        messages = await trio.to_thread.run_sync(rw.conversation_at, rt.session_id, point)
    if mode in ("code", "both"):
        changes, lines = await run_blocking(
            lambda: rw.restore_code(recorder, context, point, force=force,
                                    force_hint=force_hint))
        record(context.changes, changes)  # /undo reverts the restore
    if messages is not None:
        await rt.main_agent.loop.restore_thread(messages)
        recorder.drop(rw.dropped_by(history, point))
        lines.append(f"conversation: back to {len(messages)} message(s), as before "
                     f"{_what(point)}")
    return lines


def _what(point: Any) -> str:
    if point.kind == "prompt":
        text = " ".join(point.label.split())
        return f"the prompt {text[:40]!r}" + ("…" if len(text) > 40 else "")
    return f"checkpoint {point.label}"


async def save(rt: Any, name: str) -> str:
    if not _NAME.fullmatch(name):
        raise CheckpointError("a checkpoint name is letters, digits, '.', '_' or '-' "
                              f"(at most 64), not {name!r}")
    if name.startswith("undo-restore-") or (await _history(rt)).named(name) is not None:
        raise CheckpointError(f"a checkpoint named {name!r} exists: choose another name")
    recorder = _recorder(rt)
    await trio.to_thread.run_sync(recorder.begin, "named", name)
    await trio.to_thread.run_sync(recorder.sync)
    return (f"checkpoint {name} saved: /checkpoint restore {name} brings back the files nyz "
            "changes from now on, and the conversation")


async def undo_turn(rt: Any) -> str:
    """Revert every change the agents made since the current prompt, newest first."""
    from nyzhi.tools.offload import run_blocking
    from nyzhi.tools.paths import ToolPathError
    from nyzhi.tools.undo import UndoConflict, undo_all

    changes = rt.main_agent.tooling.context.changes
    since = _recorder(rt).turn_batch
    try:
        lines = await run_blocking(lambda: undo_all(changes, since=since))
    except (OSError, UndoConflict, ToolPathError) as exc:  # what was reverted stays reverted; say where it stopped
        return f"stopped: {exc}"
    return "\n".join(lines) if lines else "nothing to undo in this turn"


async def retry_prompt(rt: Any, *, force: bool) -> tuple[list[str], str]:
    """Rewind code and conversation to before the last prompt: (the lines, that prompt)."""
    recorder = _recorder(rt)
    prompts = (await _history(rt)).prompts()
    if not prompts:
        raise CheckpointError("no prompt to retry yet")
    last = prompts[-1]
    text = recorder.prompts.get(last.seq, last.label)
    lines = await rewind(rt, str(len(prompts)), "both", force=force,
                         force_hint="/retry force")
    return lines, text


def rewind_saved(query: str, target: str | None, mode: str, *, force: bool,
                 store: CheckpointStore | None = None) -> list[str]:
    """``nyz rewind``: list a saved session's prompts, or rewind it (blocking). The session
    must not be running: its conversation is rewound by a thread record in its log."""
    from nyzhi.config.modes import SandboxLevel
    from nyzhi.core.runtime.sessions import SessionStore
    from nyzhi.tools.base import ChangeLog, ToolContext
    from nyzhi.tools.sandbox import SandboxPolicy

    sessions = SessionStore()
    meta = sessions.resolve(query)
    store = store if store is not None else CheckpointStore()
    journal = store.journal(meta.id)
    history = journal.load()
    if target is None:
        return [f"session {meta.id[:8]} {meta.title or '(untitled)'}",
                *rw.listing(history, "nyz rewind SESSION --to N [--code|--conversation|--both]"
                            " restores the state just before prompt N")]
    point = rw.select(history, target)
    root = Path(meta.workspace_root or meta.cwd)
    lines: list[str] = []
    messages = rw.conversation_at(meta.id, point) if mode != "code" else None
    if mode in ("code", "both"):
        changes = ChangeLog()
        recorder = Recorder(journal, root, changes)
        # Writes stay inside the session's workspace, refusing symlinks, as the tools' do.
        context = ToolContext(workspace_root=root, cwd=root, changes=changes,
                              sandbox=SandboxPolicy(level=SandboxLevel.WORKSPACE_WRITE, workspace_root=root,
                                                    allow_temp=False))
        try:
            _changes, lines = rw.restore_code(recorder, context, point, force=force,
                                              force_hint="--force")
        finally:
            recorder.close()
    if messages is not None:
        writer = sessions.open(meta.id)
        try:
            writer.replace_thread(messages)
        finally:
            writer.close()
        journal.append({"k": "drop", "seqs": rw.dropped_by(history, point)})
        journal.sync()
        journal.close()
        lines.append(f"conversation: back to {len(messages)} message(s), as before "
                     f"{_what(point)}; nyz --session {meta.id[:8]} continues from there")
    return lines
