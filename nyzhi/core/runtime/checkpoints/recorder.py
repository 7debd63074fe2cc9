"""Recording checkpoints as a session runs: every user prompt is a point, and every file the
agents change is kept as it was before the first change after the latest point.

The ``Recorder`` is the watcher of the runtime's one change log (``ToolContext.changes``,
shared by every agent of the tree, subagents included), so it hears of each write from
``nyzhi.tools.undo.apply`` in the writing thread: ``before_write`` stores the old bytes before
the first of them is replaced, ``after_write`` what nyz left there. It is also a bus
listener: the main agent's ``turn_start`` opens a prompt point (with the session log's size,
for the conversation) and its ``turn_complete`` makes the turn's checkpoints durable.

Only paths inside the workspace are kept; bash side effects never pass through the change log.
A checkpoint that cannot be written (a full disk) never stops the agent: the first failure is
kept in ``fault`` and reported once, as the session log's are.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import trio

from nyzhi.core import events as ev
from nyzhi.core.runtime.checkpoints.store import DIR, CheckpointStore, Journal, fingerprint


class Recorder:
    def __init__(self, journal: Journal, workspace_root: Path, changes: Any, *,
                 writer: Any = None, redactor: Any = None, discard: bool = False) -> None:
        self.journal = journal
        # An unsaved (--ephemeral) session's checkpoints serve only while it runs: its
        # journal goes on ``close`` (its blobs with the next prune).
        self.discard = discard
        self.root = os.path.realpath(workspace_root)
        self.changes = changes  # nyzhi.tools.base.ChangeLog
        self.writer = writer  # the session's SessionWriter (None: ephemeral)
        self.redactor = redactor
        self._lock = threading.Lock()
        self.seq = journal.load().last_seq  # a resumed session goes on numbering
        self._touched: set[str] = set()
        self.turn_batch = changes.next_batch  # the current turn's first batch (/undo all)
        self.prompts: dict[int, str] = {}  # the prompts typed in this process, by point
        self.fault: OSError | None = None
        self._reported = False
        changes.watcher = self

    @classmethod
    def attach(cls, session_id: str, workspace_root: Path, changes: Any, *, writer: Any = None,
               redactor: Any = None, discard: bool = False,
               store: CheckpointStore | None = None) -> Recorder:
        store = store if store is not None else CheckpointStore()
        return cls(store.journal(session_id), workspace_root, changes, writer=writer,
                   redactor=redactor, discard=discard)

    def inside(self, path: str) -> bool:
        return path.startswith(self.root + os.sep)

    # ---- points --------------------------------------------------------------------------

    def begin(self, kind: str, label: str = "") -> int:
        """Open a point: changes from now on are kept as they were here. Returns its seq."""
        if self.redactor is not None:
            label = self.redactor.redact(label)
        writer = self.writer
        log = writer.size if writer is not None and writer.fault is None else None
        with self._lock:
            self.seq += 1
            self._touched.clear()
            self._write({"k": "point", "seq": self.seq, "kind": kind, "label": label,
                         "log": log, "ts": round(time.time(), 3)})
            return self.seq

    def drop(self, seqs: list[int]) -> None:
        """These prompts left the conversation (it was rewound before them)."""
        if seqs:
            with self._lock:
                self._write({"k": "drop", "seqs": seqs})

    # ---- the change log's watcher (any thread) -------------------------------------------

    def before_write(self, changes: list[Any]) -> None:
        with self._lock:
            if self.seq == 0:  # a change before any prompt (a /spawn'd agent's)
                self.seq = 1
                self._write({"k": "point", "seq": 1, "kind": "start",
                             "label": "before the first prompt", "log": None,
                             "ts": round(time.time(), 3)})
            for change in changes:
                path = str(change.path)
                if path in self._touched or not self.inside(path):
                    continue
                try:
                    if change.before is None:
                        blob = None
                    elif change.kind == "dir":
                        blob = DIR
                    else:
                        blob = self.journal.put_blob(change.before)
                except OSError as exc:
                    self._failed(exc)
                    continue
                if self._write({"k": "before", "seq": self.seq, "path": path, "blob": blob,
                                "type": change.kind, "mode": change.mode}):
                    self._touched.add(path)

    def after_write(self, changes: list[Any]) -> None:
        with self._lock:
            for change in changes:
                path = str(change.path)
                if self.inside(path):
                    self._write({"k": "after", "path": path,
                                 "blob": fingerprint(change.kind, change.after)})

    def _write(self, record: dict[str, Any]) -> bool:
        if self.fault is not None:
            return False
        try:
            self.journal.append(record)
        except OSError as exc:
            self._failed(exc)
            return False
        return True

    def _failed(self, exc: OSError) -> None:
        if self.fault is None:
            self.fault = exc

    # ---- the bus listener ----------------------------------------------------------------

    async def on_event(self, event: ev.Event) -> None:
        if getattr(event, "agent", None) != ev.MAIN_AGENT:
            return
        if isinstance(event, ev.TurnStart):
            seq = self.begin("prompt", event.prompt)
            self.prompts[seq] = event.prompt
            self.turn_batch = self.changes.next_batch
        elif isinstance(event, ev.TurnComplete):
            await trio.to_thread.run_sync(self.sync)
            if self.fault is not None and not self._reported:
                self._reported = True
                raise self.fault  # the bus reports it once; the agent goes on

    def sync(self) -> None:
        try:
            self.journal.sync()
        except OSError as exc:
            self._failed(exc)

    def close(self) -> None:
        if self.discard:
            self.journal.close()
            with contextlib.suppress(OSError):
                self.journal.path.unlink()
            return
        self.sync()
        self.journal.close()
