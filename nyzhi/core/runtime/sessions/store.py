"""Session storage: an append-only JSONL log per session plus a metadata cache.

Durability guarantee
--------------------
* **Process death (kill -9, crash, OOM) at any moment loses nothing that was appended.** Every
  record is one ``os.write`` of a complete line on an ``O_APPEND`` descriptor before the
  ``append_*`` call returns, so it is in the kernel page cache even if nyz dies right after.
  A record being written at the instant of the kill may be cut short; it can only be the last
  line, the loader skips it (``Session.skipped_lines``) and the next writer trims it before
  appending, so a resumed session's log stays well formed.
* **A tool call never loses its result slot.** A kill between recording an assistant's tool
  call and its result leaves the call unanswered, which every provider rejects. ``load``
  answers each such call with ``pairing.INTERRUPTED_TEXT`` (in memory); ``open`` (resume)
  appends one crash-safe line per call recording that result, so replay shows it.
* **OS crash / power loss** loses at most the records after the last *boundary*: the log is
  fsynced after the header, after every thread message, thread snapshot and title, after
  ``session_start`` and ``turn_complete`` events, and on ``close``. Other events (tool_start,
  tool_done, usage, retry, ...) are flushed but not fsynced, to keep per-step overhead low.
  ``sync="always"`` fsyncs every record, ``sync="never"`` none (tests, benchmarks).
* **Deltas are not persisted** (text_delta, thinking_delta, tool_output_delta): the same text
  arrives consolidated in the assistant message, ``tool_done`` and ``turn_complete``. Pass
  ``persist_deltas=True`` to keep them (for a character-exact replay).
* **Subagent threads share the log.** A subagent's messages, thread snapshots and interrupted
  marks carry its path (``"agent": "/agents/main/explorer-1"``); an ``agent`` record (its role
  and model) is written when it is created. ``load`` folds them into ``Session.agents``, each
  thread repaired like the main one, so a resumed session can reopen them (``resume_agent``).
* **Images are stored once**, by content hash, in ``<id>.images/`` beside the log (written
  whole and renamed, before the record that refers to them); records carry only the hash.
* ``<id>.meta.json`` is only a cache for listing. It is replaced atomically (temp file, fsync,
  rename, directory fsync) at creation, on titles, after each ``turn_complete`` and on close,
  and records the log size it describes; a missing, corrupt or stale (size differs) meta
  file is rebuilt from the log when read. ``load`` always rebuilds from the log.
* **A full or read-only disk never stops the agent.** Creating a session there raises a
  ``StorageError`` naming the directory and the fix. Mid-session, the first failed write is
  kept in ``SessionWriter.fault`` (what, where, why, the fix) and the writer stops appending:
  a half-written line is cut off again, so the log holds every record before the fault and
  stays loadable. The runtime reports the fault once; the turn goes on unsaved.

The API is synchronous: appends are one small write (plus an fsync at boundaries), cheaper
than a trip to a worker thread. Files are created 0600 in a 0700 directory because
conversations can contain secrets.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any, Literal

import attrs

from nyzhi import convert, records
from nyzhi.config.fsutil import atomic_write, rename_durably
from nyzhi.config.secrets import Redactor
from nyzhi.core import events as ev
from nyzhi.core.runtime.sessions.files import (
    atomic_write_json,
    encode_record,
    fsync_dir,
    read_log,
    repair_log,
    trim_partial_tail,
    write_all,
)
from nyzhi.core.runtime.sessions.pairing import (
    INTERRUPTED_TEXT,
    interrupted_result,
    pair_tool_results,
)
from nyzhi.core.runtime.sessions.records import (
    FORMAT_VERSION,
    AmbiguousSession,
    ImageLoader,
    SessionError,
    SessionMeta,
    SessionNotFound,
    auto_title,
    iso_from_ts,
    message_to_json,
)
from nyzhi.core.runtime.sessions.records import message_from_json as _message_from_json
from nyzhi.oserror import StorageError, describe_os_error
from nyzhi.provider.types import ImagePart, Message, ToolCall

# "boundary": fsync after messages and turn/session events; "turn": only after turn and
# session events (a kill -9 still loses nothing written; a power cut loses at most the turn in
# progress); "always": every record; "never": leave it to the OS.
SyncMode = Literal["boundary", "turn", "always", "never"]
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_BOUNDARY_EVENTS = frozenset({"session_start", "turn_complete"})
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def storage_fix(exc: OSError) -> str:
    """What to do when the sessions directory cannot be written."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free some space, point XDG_DATA_HOME at another disk, or run with --ephemeral"
    return "point XDG_DATA_HOME at a writable directory, or run with --ephemeral"


def default_sessions_dir() -> Path:
    """``$XDG_DATA_HOME/nyzhi/sessions`` (default ``~/.local/share/nyzhi/sessions``), read now."""
    from nyzhi.config.paths import sessions_dir

    return sessions_dir()


@records.define
class AgentThread:
    """A subagent's journaled thread: its ``agent`` record (role, model) and messages (paired
    like ``Session.messages``; ``interrupted`` as there)."""

    info: dict[str, Any] = attrs.field(factory=dict)
    messages: list[Message] = attrs.field(factory=list)
    interrupted: list[ToolCall] = attrs.field(factory=list)


@records.define
class Session:
    """A loaded session.

    ``messages`` is the thread a resumed agent continues from (after the last compaction
    snapshot); ``history`` is every message ever appended, in order, for export and display.
    ``messages`` has every tool call paired with a result (``pairing``); ``interrupted``
    lists the calls whose result the log lacked, answered in memory until
    ``SessionStore.open`` records them. ``history`` holds only what was recorded.
    ``state`` is the state record saved with the last compaction snapshot (see
    ``nyzhi.core.loop.state_record``), and ``snapshot_events`` how many of ``events`` came
    before that snapshot.
    """

    meta: SessionMeta
    messages: list[Message]
    events: list[ev.AnyEvent]
    history: list[Message]
    skipped_lines: int = 0
    event_times: list[float] = attrs.field(factory=list)  # when each event was recorded
    interrupted: list[ToolCall] = attrs.field(factory=list)
    state: dict[str, Any] | None = None
    snapshot_events: int = 0
    agents: dict[str, AgentThread] = attrs.field(factory=dict)  # subagents, by path
    plan_mode: bool = False  # as the session last was (a resumed session starts so)

    @property
    def id(self) -> str:
        return self.meta.id


def _fold(session_id: str, records: list[dict[str, Any]], skipped: int, size: int,
          load_image: ImageLoader | None = None) -> Session:
    """Rebuild a session (meta, thread, history, events) from its log records; images are
    read back through ``load_image``. A malformed record is counted in ``skipped``."""
    fold = _Fold(SessionMeta(id=session_id, log_size=size), load_image)
    for record in records:
        ts = record.get("ts")
        if isinstance(ts, int | float):
            fold.last_ts = max(fold.last_ts, float(ts))
        try:
            fold.take(record, ts)
        except (KeyError, TypeError, ValueError):
            skipped += 1
    return fold.session(skipped)


class _Fold:
    """A session's log being read back (``_fold``): what each kind of record changes."""

    def __init__(self, meta: SessionMeta, load_image: ImageLoader | None) -> None:
        self.meta = meta
        self.load_image = load_image
        self.messages: list[Message] = []
        self.history: list[Message] = []
        self.events: list[ev.AnyEvent] = []
        self.event_times: list[float] = []
        self.state: dict[str, Any] | None = None
        self.snapshot_events = 0
        self.last_ts = 0.0
        self.plan_mode = False
        self.agents: dict[str, AgentThread] = {}

    def message(self, data: dict[str, Any]) -> Message:
        return _message_from_json(data, self.load_image)

    def take(self, record: dict[str, Any], ts: Any) -> None:
        """Apply one record (raises KeyError, TypeError or ValueError for a malformed one)."""
        kind = record.get("kind")
        path = record.get("agent")
        if isinstance(path, str) and path != ev.MAIN_AGENT and kind in (
            "message", "thread", "agent"
        ):
            self._subagent(self.agents.setdefault(path, AgentThread()), kind, record)
        elif kind == "header":
            for key in ("created", "cwd", "workspace_root", "provider", "model", "title"):
                if isinstance(record.get(key), str):
                    setattr(self.meta, key, record[key])
        elif kind == "message":
            message = self.message(record["message"])
            self.messages.append(message)
            self.history.append(message)
        elif kind == "thread":
            self.messages = [self.message(m) for m in record["messages"]]
            saved = record.get("state")
            self.state = saved if isinstance(saved, dict) else None
            self.snapshot_events = len(self.events)
        elif kind == "title":
            self.meta.title = str(record["title"])
        elif kind == "plan_mode":
            self.plan_mode = record["on"] is True
        elif kind == "event":
            self._event(ev.from_json(record["event"]), ts)

    def _subagent(self, thread: AgentThread, kind: str, record: dict[str, Any]) -> None:
        """A subagent's record: its ``agent`` info, a message, or its compacted thread."""
        if kind == "agent":
            thread.info = dict(record["info"])
        elif kind == "message":
            thread.messages.append(self.message(record["message"]))
        else:
            thread.messages = [self.message(m) for m in record["messages"]]

    def _event(self, event: ev.AnyEvent, ts: Any) -> None:
        """An event: kept with its time (the last one seen when it has none); an interrupted
        call's mark also answers the call, and usage and the session's start fill the meta."""
        self.events.append(event)
        self.event_times.append(float(ts) if isinstance(ts, int | float) else self.last_ts)
        meta = self.meta
        if _is_interrupted_mark(event):
            # the one line that both answers the call and marks it for replay
            result = interrupted_result(ToolCall(event.call_id, event.name, ""))
            if event.agent != ev.MAIN_AGENT:
                self.agents.setdefault(event.agent, AgentThread()).messages.append(result)
                return
            self.messages.append(result)
            self.history.append(result)
        elif isinstance(event, ev.Usage):
            for key in _USAGE_KEYS:
                meta.usage[key] += getattr(event, key)
            meta.usage["cost_usd"] += event.cost_usd
        elif isinstance(event, ev.SessionStart):
            meta.provider = event.provider or meta.provider
            meta.model = event.model or meta.model

    def session(self, skipped: int) -> Session:
        """The folded session: titled from its first prompt when it has no title, and every
        tool call paired with a result."""
        meta = self.meta
        if not meta.title:
            first_user = next((m for m in self.history if m.role == "user" and m.content), None)
            if first_user is not None:
                meta.title = auto_title(first_user.content)
        meta.message_count = len(self.history)
        meta.updated = iso_from_ts(self.last_ts) if self.last_ts else meta.created
        messages, interrupted = pair_tool_results(self.messages)
        for thread in self.agents.values():
            thread.messages, thread.interrupted = pair_tool_results(thread.messages)
        return Session(
            meta, messages, self.events, self.history, skipped, self.event_times, interrupted,
            self.state, self.snapshot_events, self.agents, self.plan_mode,
        )


def interrupted_mark(call: ToolCall, agent: str = ev.MAIN_AGENT) -> ev.ToolDone:
    """The log record for a call that never got a result (see ``records``)."""
    return ev.ToolDone(
        agent=agent, call_id=call.id, name=call.name, output=INTERRUPTED_TEXT, is_error=True,
        metadata={"interrupted": True},
    )


def _is_interrupted_mark(event: ev.AnyEvent) -> bool:
    return isinstance(event, ev.ToolDone) and event.metadata.get("interrupted") is True


# ---- writer ------------------------------------------------------------------------------


class SessionWriter:
    """Appends one session's records. Use from one task; ``close`` (or ``with``) when done.

    Not a checkpoint: every method is a plain blocking write (see the module docstring for
    what survives what).
    """

    def __init__(
        self,
        store: SessionStore,
        meta: SessionMeta,
        fd: int,
        *,
        sync: SyncMode = "boundary",
        persist_deltas: bool = False,
        fresh: bool = False,
    ) -> None:
        if sync not in ("boundary", "turn", "always", "never"):
            raise ValueError(
                f"sync must be 'boundary', 'turn', 'always' or 'never', not {sync!r}"
            )
        self._store = store
        self.meta = meta
        self._fd: int | None = fd
        self._sync = sync
        self._persist_deltas = persist_deltas
        # Created by this writer (not reopened): if it closes before a message was recorded
        # (a failed start: a bad -i, a refused prompt), nothing is kept (issue 55).
        self._fresh = fresh
        self._spent = False
        self.keep_empty = False  # set for a session something else refers to by id
        self._size = os.fstat(fd).st_size
        # The first write that failed (full or read-only disk), ready for the user; after a
        # failed log write the writer appends nothing more (the log stays well formed).
        self.fault: StorageError | None = None
        self._stopped = False
        # Known secret values are replaced before a record reaches the disk (set by the runtime).
        self.redactor: Redactor | None = None
        # What opening it repaired (a torn or corrupt line dropped), said once by the runtime.
        self.notices: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.meta.id

    @property
    def closed(self) -> bool:
        return self._fd is None

    @property
    def size(self) -> int:
        """The log's size now: ``SessionStore.load(id, upto=size)`` rebuilds it as it is."""
        return self._size

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _failed(self, exc: OSError, what: str, path: Path) -> None:
        """Keep the first failure, described for the user."""
        if self.fault is None:
            self.fault = StorageError(
                describe_os_error(
                    exc, f"write {what}", path,
                    f"the session is saved up to here; {storage_fix(exc)}",
                ),
                exc,
            )
            self.fault.__cause__ = exc

    def _append(self, record: dict[str, Any], boundary: bool, turn: bool = False) -> None:
        if self._fd is None:
            raise SessionError(f"session {self.meta.id} writer is closed")
        if self._stopped:
            return
        ts = time.time()
        if self.redactor:
            record = self.redactor.redact_value(record)  # type: ignore[assignment]
        record["ts"] = ts
        line = encode_record(record)
        try:
            write_all(self._fd, line)
        except OSError as exc:
            # Cut a partial line off again, so every record before the fault stays loadable.
            self._stopped = True
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            self._failed(exc, "the session log", self._store.log_path(self.meta.id))
            return
        self._size += len(line)
        self.meta.updated = iso_from_ts(ts)
        if (
            self._sync == "always"
            or (boundary and self._sync == "boundary")
            or (turn and self._sync == "turn")
        ):
            self._fsync(self._fd)

    def _fsync(self, fd: int) -> None:
        try:
            os.fsync(fd)
        except OSError as exc:
            self._failed(exc, "the session log", self._store.log_path(self.meta.id))

    def _store_images(self, messages: Any) -> None:
        """Each image of ``messages`` once, by content hash, in ``<id>.images/`` beside the
        log (0600 files written whole, then renamed): records refer to it by hash, so an image
        is on disk once however many records (thread snapshots) carry it."""
        for message in messages:
            for image in message.images:
                self._store.store_image(self.meta.id, image, self._failed)

    def append_message(self, message: Message, agent: str | None = None) -> None:
        """Record one thread message (fsynced). The first user message titles the session.
        ``agent``: a subagent's path, for a message of its thread."""
        self._store_images((message,))
        record: dict[str, Any] = {"kind": "message", "message": message_to_json(message)}
        if agent and agent != ev.MAIN_AGENT:
            record["agent"] = agent
            self._append(record, boundary=True)
            return
        self._append(record, boundary=True)
        self.meta.message_count += 1
        if not self.meta.title and message.role == "user" and message.content.strip():
            self.set_title(auto_title(message.content))

    def replace_thread(
        self, messages: list[Message] | tuple[Message, ...], state: dict[str, Any] | None = None,
        agent: str | None = None,
    ) -> None:
        """Record that the thread is now ``messages`` (after compaction); resume starts here.
        ``state`` (the runtime's state record, JSON-ready) is saved with it. ``agent``: a
        subagent's path, for its thread."""
        self._store_images(messages)
        record: dict[str, Any] = {
            "kind": "thread", "messages": [message_to_json(m) for m in messages]
        }
        if agent and agent != ev.MAIN_AGENT:
            record["agent"] = agent
        if state is not None:
            record["state"] = state
        self._append(record, boundary=True)

    def append_agent(self, agent: str, info: dict[str, Any]) -> None:
        """Record that subagent ``agent`` exists (its role, model), so a resumed session
        can rebuild it."""
        self._append({"kind": "agent", "agent": agent, "info": info}, boundary=True)

    def mark_interrupted(self, calls: list[ToolCall], agent: str = ev.MAIN_AGENT) -> None:
        """Record that ``calls`` will never get a result (nyz died while they ran): one
        ``interrupted_mark`` line per call, so each is answered and shown by replay, or, if
        the process dies half-way, left for the next load to repair. fsynced once at the end.
        """
        for call in calls:
            self._append({"kind": "event", "event": ev.to_json(interrupted_mark(call, agent))},
                         boundary=False)
            if agent == ev.MAIN_AGENT:
                self.meta.message_count += 1
        if calls and self._sync != "never" and self._fd is not None and not self._stopped:
            self._fsync(self._fd)

    def append_event(self, event: ev.AnyEvent) -> None:
        """Record one event for replay. Deltas are dropped unless ``persist_deltas``."""
        if event.is_delta and not self._persist_deltas:
            return
        boundary = event.type in _BOUNDARY_EVENTS
        self._append(
            {"kind": "event", "event": ev.to_json(event)}, boundary=boundary, turn=boundary
        )
        if isinstance(event, ev.Usage):
            self._spent = True  # a model call happened: worth keeping, for its cost if not more
            for key in _USAGE_KEYS:
                self.meta.usage[key] += getattr(event, key)
            self.meta.usage["cost_usd"] += event.cost_usd
        elif isinstance(event, ev.SessionStart):
            self.meta.provider = event.provider or self.meta.provider
            self.meta.model = event.model or self.meta.model
        if event.type == "turn_complete":
            self.write_meta()

    def set_plan_mode(self, on: bool) -> None:
        """Plan mode switched: recorded, so the session resumes in the mode it was left in."""
        self._append({"kind": "plan_mode", "on": bool(on)}, boundary=True)

    def set_title(self, title: str) -> None:
        title = " ".join(title.split())
        if self.redactor:  # the meta file is written here, not through ``_append``
            title = self.redactor.redact(title)
        self._append({"kind": "title", "title": title}, boundary=True)
        self.meta.title = title
        self.write_meta()

    def write_meta(self) -> None:
        """Rewrite ``<id>.meta.json`` atomically from the writer's current state."""
        self.meta.log_size = self._size
        path = self._store.meta_path(self.meta.id)
        try:
            atomic_write_json(path, convert.unstructure(self.meta))
        except OSError as exc:  # only a cache (rebuilt from the log), but say it could not
            self._failed(exc, "the session index", path)

    def close(self) -> None:
        """fsync, write the final metadata and close. Idempotent. A session this writer
        created that never recorded a message is removed instead: it never took a turn."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self._sync != "never" and not self._stopped:
                self._fsync(fd)
        finally:
            os.close(fd)
        if self._fresh and self.meta.message_count == 0 and not self._spent \
                and not self.keep_empty:
            with contextlib.suppress(OSError, SessionError):
                self._store.delete(self.meta.id)
            return
        self.write_meta()


# ---- store -------------------------------------------------------------------------------


class SessionStore:
    """All sessions under one directory (default: ``default_sessions_dir()``)."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_sessions_dir()
        # One line per damaged file this store repaired (a broken meta.json), for the front
        # end to say once; the repaired file replaces it, so the next reader finds none.
        self.notices: list[str] = []

    def log_path(self, session_id: str) -> Path:
        return self.root / f"{session_id}.jsonl"

    def meta_path(self, session_id: str) -> Path:
        return self.root / f"{session_id}.meta.json"

    def images_dir(self, session_id: str) -> Path:
        return self.root / f"{session_id}.images"

    def store_image(self, session_id: str, image: ImagePart,
                    failed: Any = None) -> None:
        """Write ``image`` under its hash unless it is there (a temp file, fsynced, renamed:
        a crash leaves the whole image or none). ``failed(exc, what, path)`` hears of an error."""
        folder = self.images_dir(session_id)
        path = folder / image.sha256
        if path.exists():
            return
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            atomic_write(path, image.data, mode=0o600, what="an image of the session")
        except OSError as exc:
            if failed is None:
                raise
            cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
            failed(cause, "an image of the session", path)  # described once, by ``failed``

    def image_loader(self, session_id: str) -> ImageLoader:
        from nyzhi.provider.images import usable

        folder = self.images_dir(session_id)

        def load(sha256: str, media_type: str) -> ImagePart | None:
            if not re.fullmatch(r"[0-9a-f]{64}", sha256):
                return None
            try:
                image = ImagePart(media_type, (folder / sha256).read_bytes())
            except OSError:
                return None
            # saved before images were checked: resumed without it, not failing every step
            return image if usable(image) else None

        return load

    def _ensure_root(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _check_id(self, session_id: str) -> None:
        if not _ID_RE.match(session_id):
            raise SessionNotFound(f"no session {session_id!r} in {self.root}")

    def create(
        self,
        *,
        cwd: str | os.PathLike[str] = "",
        workspace_root: str | os.PathLike[str] = "",
        provider: str = "",
        model: str = "",
        title: str = "",
        session_id: str | None = None,
        sync: SyncMode = "boundary",
        persist_deltas: bool = False,
    ) -> SessionWriter:
        """Start a new session; its header is on disk (fsynced) when this returns."""
        session_id = session_id or str(uuid.uuid4())
        if not _ID_RE.match(session_id):
            raise ValueError(f"invalid session id {session_id!r}: use letters, digits, '.', '_', '-'")
        path = self.log_path(session_id)
        try:
            self._ensure_root()
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise StorageError.wrap(
                exc, "create the session log in", self.root, storage_fix(exc)
            ) from exc
        created = iso_from_ts(time.time())
        meta = SessionMeta(
            id=session_id, created=created, updated=created, cwd=str(cwd),
            workspace_root=str(workspace_root), provider=provider, model=model,
        )
        writer = SessionWriter(self, meta, fd, sync=sync, persist_deltas=persist_deltas,
                               fresh=True)
        header = {
            "kind": "header", "v": FORMAT_VERSION, "id": session_id, "created": created,
            "cwd": meta.cwd, "workspace_root": meta.workspace_root,
            "provider": provider, "model": model,
        }
        writer._append(header, boundary=True)
        if writer.fault is not None:  # not even the header fits: nothing to keep
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
            cause = writer.fault.__cause__
            assert isinstance(cause, OSError)
            raise StorageError.wrap(
                cause, "create the session log in", self.root, storage_fix(cause)
            ) from cause
        fsync_dir(self.root)
        if title:
            writer.set_title(title)
        else:
            writer.write_meta()
        return writer

    def open(
        self, session_id: str, *, sync: SyncMode = "boundary", persist_deltas: bool = False
    ) -> SessionWriter:
        """Reopen an existing session to append to it (resume). Trims a partial last line and
        records a result for every tool call left without one (``Session.interrupted``)."""
        self._check_id(session_id)
        path = self.log_path(session_id)
        if not path.exists():
            raise SessionNotFound(f"no session {session_id!r} in {self.root}")
        try:
            repaired = repair_log(path)  # a torn or corrupt line: dropped, the original kept
            session = self.load(session_id)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        except OSError as exc:
            raise StorageError.wrap(
                exc, "open the session log", path, storage_fix(exc)
            ) from exc
        writer = SessionWriter(self, session.meta, fd, sync=sync, persist_deltas=persist_deltas)
        writer.notices = (repaired,) if repaired else ()
        if session.interrupted:
            writer.mark_interrupted(session.interrupted)
            writer.write_meta()
        for path, thread in session.agents.items():
            if thread.interrupted:
                writer.mark_interrupted(thread.interrupted, agent=path)
        return writer

    def load(self, session_id: str, upto: int | None = None) -> Session:
        """Rebuild a session from its log (a partial or corrupt line is skipped, not fatal).
        ``upto``: from its first ``upto`` bytes only, as it was when the log had that size
        (``SessionWriter.size`` then: a checkpoint's conversation)."""
        self._check_id(session_id)
        try:
            records, skipped, size = read_log(self.log_path(session_id), upto)
        except FileNotFoundError:
            raise SessionNotFound(f"no session {session_id!r} in {self.root}") from None
        return _fold(session_id, records, skipped, size, self.image_loader(session_id))

    def meta(self, session_id: str) -> SessionMeta:
        """The cached metadata, rebuilt from the log when missing, corrupt or stale."""
        self._check_id(session_id)
        try:
            size = self.log_path(session_id).stat().st_size
        except FileNotFoundError:
            raise SessionNotFound(f"no session {session_id!r} in {self.root}") from None
        path = self.meta_path(session_id)
        try:
            meta = convert.structure(json.loads(path.read_text()), SessionMeta, path)
            if meta.id == session_id and meta.log_size == size:
                return meta
        except OSError:
            pass
        except (ValueError, TypeError) as exc:  # broken: kept aside, rebuilt, said once
            return self._rebuild_meta(session_id, path, exc)
        return self.load(session_id).meta

    def _rebuild_meta(self, session_id: str, path: Path, exc: Exception) -> SessionMeta:
        meta = self.load(session_id).meta
        damaged = path.with_name(path.name + ".damaged")
        try:
            rename_durably(path, damaged)
            atomic_write_json(path, convert.unstructure(meta))
        except OSError:
            return meta  # a read-only store: rebuilt in memory each time, as before
        reason = " ".join(str(exc).split())[:200]
        self.notices.append(f"{path}: not valid session metadata ({reason}); rebuilt from the "
                            f"log, the damaged file is kept beside it as {damaged.name}")
        return meta

    def list(self, query: str | None = None) -> list[SessionMeta]:
        """Sessions newest first; ``query`` matches an id prefix or a title substring
        (case-insensitive). Logs without a header (killed before creation finished) and
        sessions that never took a turn (no message: a start that failed or was killed) are
        left out."""
        if not self.root.is_dir():
            return []
        metas = []
        for path in self.root.glob("*.jsonl"):
            session_id = path.name[: -len(".jsonl")]
            if not _ID_RE.match(session_id):
                continue
            try:
                meta = self.meta(session_id)
            except (OSError, SessionError):
                continue
            if not meta.created or meta.message_count == 0:
                continue
            if query and not _matches(meta, query):
                continue
            metas.append(meta)
        metas.sort(key=lambda m: (m.updated, m.created), reverse=True)
        return metas

    def resolve(self, query: str) -> SessionMeta:
        """One session by exact id, id prefix or title substring.

        Raises:
            SessionNotFound: nothing matches.
            AmbiguousSession: several match (the message lists up to 10 of them).
        """
        query = query.strip()
        if not query:
            raise SessionNotFound("empty session query")
        if _ID_RE.match(query) and self.log_path(query).exists():
            return self.meta(query)
        found = self.list(query)
        if not found:
            raise SessionNotFound(f"no session matches {query!r} (try `nyz sessions`)")
        if len(found) > 1:
            raise AmbiguousSession(query, found)
        return found[0]

    def latest(self, cwd: str | os.PathLike[str] | None = None) -> SessionMeta | None:
        """The most recently updated session, optionally only those started in ``cwd``
        (matching their cwd or workspace root)."""
        for meta in self.list():
            if cwd is None or str(cwd) in (meta.cwd, meta.workspace_root):
                return meta
        return None

    def rename(self, session_id: str, title: str) -> SessionMeta:
        """Retitle a (closed or live) session: a title record in its log, then fresh meta."""
        self._check_id(session_id)
        path = self.log_path(session_id)
        if not path.exists():
            raise SessionNotFound(f"no session {session_id!r} in {self.root}")
        trim_partial_tail(path)
        title = " ".join(title.split())
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            write_all(fd, encode_record({"kind": "title", "title": title, "ts": time.time()}))
            os.fsync(fd)
        finally:
            os.close(fd)
        meta = self.load(session_id).meta
        atomic_write_json(self.meta_path(session_id), convert.unstructure(meta))
        return meta

    def delete(self, session_id: str) -> None:
        self._check_id(session_id)
        path = self.log_path(session_id)
        if not path.exists():
            raise SessionNotFound(f"no session {session_id!r} in {self.root}")
        path.unlink()
        with contextlib.suppress(FileNotFoundError):
            self.meta_path(session_id).unlink()
        images = self.images_dir(session_id)
        if images.is_dir():
            import shutil

            shutil.rmtree(images, ignore_errors=True)
        fsync_dir(self.root)


def _matches(meta: SessionMeta, query: str) -> bool:
    q = query.lower()
    return meta.id.lower().startswith(q) or q in meta.title.lower()

