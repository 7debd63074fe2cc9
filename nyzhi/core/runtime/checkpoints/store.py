"""The shadow store of checkpoints: content-addressed blobs and one journal per session.

Layout, under ``$XDG_STATE_HOME/nyzhi/checkpoints`` (``nyzhi.config.paths.checkpoints_dir``),
outside the workspace and its git history, and masked from sandboxed commands with the rest
of nyz's state directory::

    blobs/ab/ab12…ef      a file's bytes, named by their SHA-256 (stored once, whatever
                          session or file they came from)
    sessions/<id>.jsonl   the session's journal (``Journal``)

A journal is append-only JSON lines:

* ``point``: a place to come back to, in order (``seq``): a user prompt (``kind`` "prompt",
  with the prompt and the session log's size just before it, for the conversation), a named
  checkpoint ("named"), or the state just before a restore ("restore");
* ``before``: what a file (or directory) held just before nyz first changed it after point
  ``seq``; restoring a point puts back, for every path changed since, its earliest such record;
* ``after``: what nyz last left at a path (a hash), so a file changed by someone else since
  is noticed before a restore overwrites it;
* ``drop``: prompts taken out of the conversation by a rewind of it (no longer listed).

Durability: a blob is written whole and renamed before the record naming it, and a record is
one ``write`` of a whole line, so a killed nyz loses nothing written; the fsyncs that make
them survive a power cut are batched at the end of each turn (``Journal.sync``: one
``syncfs``) instead of paid on every edit: a power cut may lose the checkpoints of the turn
in progress, as the session log's ``turn`` mode loses at most that turn. A blob is checked against its name when read back.

Pruning (``prune``): journals untouched for ``MAX_AGE_DAYS`` go first, then the oldest until
the blobs fit in ``MAX_BYTES``; blobs no journal names are then removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import attrs

from nyzhi import records
from nyzhi.config.fsutil import atomic_write
from nyzhi.core.runtime.sessions.files import encode_record, fsync_dir, read_log, write_all
from nyzhi.oserror import StorageError

MAX_AGE_DAYS = 30
MAX_BYTES = 1 << 30  # 1 GiB of blobs
PRUNE_EVERY = 24 * 3600  # seconds between two prunes (a stamp file records the last)
_GRACE = 3600  # an unnamed blob younger than this may belong to a record being written
_HASH = re.compile(r"[0-9a-f]{64}")
DIR = "dir"  # the ``after`` fingerprint of a directory that is there

NOT_TRACKED = ("checkpoints hold the files nyz's tools changed inside the workspace; files "
               "outside it and what shell commands did are not tracked")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprint(kind: str, data: bytes | None) -> str | None:
    """What a path holds, comparably: a file's hash, ``DIR``, or None for nothing."""
    if data is None:
        return None
    return DIR if kind == "dir" else digest(data)


class CheckpointError(Exception):
    """A checkpoint cannot be used (missing, damaged, unknown name); the message says which."""


@records.define
class Point:
    seq: int
    kind: str  # "prompt", "named", "restore", "start"
    label: str = ""  # the prompt, or the checkpoint's name
    log: int | None = None  # the session log's size at the point (None: not saved)
    ts: float = 0.0
    dropped: bool = False  # a prompt taken out of the conversation by a rewind


@records.define
class Before:
    seq: int
    path: str
    blob: str | None  # None: nothing was there
    kind: str = "file"
    mode: int | None = None


@records.define
class History:
    """A session's journal, folded."""

    points: list[Point] = attrs.field(factory=list)
    befores: list[Before] = attrs.field(factory=list)
    afters: dict[str, str | None] = attrs.field(factory=dict)

    @property
    def last_seq(self) -> int:
        return self.points[-1].seq if self.points else 0

    def prompts(self) -> list[Point]:
        """The prompts still in the conversation, in order: prompt N is ``prompts()[N-1]``."""
        return [p for p in self.points if p.kind == "prompt" and not p.dropped]

    def named(self, name: str) -> Point | None:
        found = [p for p in self.points if p.kind in ("named", "restore") and p.label == name]
        return found[-1] if found else None

    def targets(self, seq: int) -> dict[str, Before]:
        """Every path changed since point ``seq``, with what it held then."""
        out: dict[str, Before] = {}
        for before in self.befores:
            if before.seq >= seq and before.path not in out:
                out[before.path] = before
        return out

    def changed_after(self, seq: int) -> int:
        """How many paths were first changed in the stretch that point ``seq`` starts."""
        return len({b.path for b in self.befores if b.seq == seq})


def private_dir(path: Path, top: Path) -> None:
    """``path`` and its missing parents up to ``top`` (the store's root) made owner-only:
    the files there hold the user's code. Above ``top``, the usual modes."""
    if path.is_dir():
        return
    if path == top:
        path.parent.mkdir(parents=True, exist_ok=True)
    else:
        private_dir(path.parent, top)
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)


class Blobs:
    """File contents by hash (``blobs/ab/<sha256>``)."""

    def __init__(self, root: Path) -> None:
        self.root = root  # the store's root/blobs
        self._made = False

    def path(self, name: str) -> Path:
        return self.root / name[:2] / name

    def put(self, data: bytes) -> tuple[str, Path | None]:
        """Store ``data`` (not fsynced: see the module doc); (its name, the file written or
        None when it was already there)."""
        name = digest(data)
        path = self.path(name)
        if path.exists():
            return name, None
        if not self._made:
            private_dir(self.root, self.root.parent)
            self._made = True
        atomic_write(path, data, mode=0o600, dir_mode=0o700, what="a checkpoint of a file",
                     fix="free some space, or point XDG_STATE_HOME at another disk",
                     sync=False)
        return name, path

    def get(self, name: str) -> bytes:
        if not _HASH.fullmatch(name):
            raise CheckpointError(f"checkpoint blob {name!r} is not a SHA-256 name")
        path = self.path(name)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CheckpointError(f"checkpoint blob {path} cannot be read: "
                                  f"{exc.strerror or exc}") from None
        if digest(data) != name:
            raise CheckpointError(f"checkpoint blob {path} is damaged (its content does not "
                                  "match its name); that file cannot be restored")
        return data


class Journal:
    """One session's journal: appends (thread-safe, one write per record) and its fold."""

    def __init__(self, store: CheckpointStore, session_id: str) -> None:
        self.store = store
        self.path = store.root / "sessions" / f"{session_id}.jsonl"
        self._fd: int | None = None
        self._lock = threading.Lock()
        self._unsynced: list[Path] = []  # blobs written since the last ``sync``

    def append(self, record: dict[str, Any]) -> None:
        with self._lock:
            if self._fd is None:
                private_dir(self.path.parent, self.store.root)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                write_all(self._fd, encode_record(record))
            except OSError as exc:
                raise StorageError.wrap(exc, "write the checkpoint journal", self.path,
                                        "free some space, or point XDG_STATE_HOME at another "
                                        "disk") from exc

    def put_blob(self, data: bytes) -> str:
        name, written = self.store.blobs.put(data)
        if written is not None:
            with self._lock:
                self._unsynced.append(written)
        return name

    def sync(self) -> None:
        """Make everything written so far survive a power cut (blocking: a worker thread).

        With blobs to keep, one ``syncfs`` of the store's file system where the kernel has it
        (a fifth of the cost of an fsync per blob, measured by ``benchmarks/checkpoint``),
        else an fsync of each blob and directory; then the journal."""
        with self._lock:
            blobs, self._unsynced = self._unsynced, []
            fd = self._fd
            if fd is not None:
                os.fsync(fd)
        if blobs and not syncfs(self.store.root):
            for blob in blobs:
                with contextlib.suppress(OSError):  # pruned meanwhile: nothing left to keep
                    sync_file(blob)
            for folder in {b.parent for b in blobs}:
                fsync_dir(folder)
            fsync_dir(self.store.blobs.root)
        if fd is not None:
            fsync_dir(self.path.parent)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def load(self) -> History:
        """The journal folded (empty when the session has none yet)."""
        try:
            lines, _skipped, _size = read_log(self.path)
        except FileNotFoundError:
            return History()
        history = History()
        by_seq: dict[int, Point] = {}
        for r in lines:
            try:
                kind = r.get("k")
                if kind == "point":
                    point = Point(int(r["seq"]), str(r["kind"]), str(r.get("label", "")),
                                  r.get("log"), float(r.get("ts", 0)))
                    history.points.append(point)
                    by_seq[point.seq] = point
                elif kind == "before":
                    history.befores.append(Before(int(r["seq"]), str(r["path"]), r.get("blob"),
                                                  str(r.get("type", "file")), r.get("mode")))
                elif kind == "after":
                    history.afters[str(r["path"])] = r.get("blob")
                elif kind == "drop":
                    for seq in r["seqs"]:
                        if seq in by_seq:
                            by_seq[seq].dropped = True
            except (KeyError, TypeError, ValueError):
                continue  # a damaged line: the rest still counts
        return history


def syncfs(path: Path) -> bool:
    """Flush the whole file system ``path`` is on (Linux ``syncfs``); False where there is
    no such call, or it failed (the caller then fsyncs file by file)."""
    try:
        import ctypes

        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        return call(fd) == 0
    finally:
        os.close(fd)


def sync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class CheckpointStore:
    """Blobs and journals under one directory (default ``checkpoints_dir()``)."""

    def __init__(self, root: Path | None = None) -> None:
        if root is None:
            from nyzhi.config.paths import checkpoints_dir

            root = checkpoints_dir()
        self.root = Path(root)
        self.blobs = Blobs(self.root / "blobs")

    def journal(self, session_id: str) -> Journal:
        return Journal(self, session_id)

    def prune(self, *, keep: str = "", max_age_days: float = MAX_AGE_DAYS,
              max_bytes: int = MAX_BYTES, now: float | None = None) -> list[str]:
        """Drop journals older than ``max_age_days``, then the oldest until the blobs fit in
        ``max_bytes``, then the blobs no journal names. ``keep``: a session never dropped
        (the one running). Returns the session ids dropped. Blocking."""
        now = time.time() if now is None else now
        sessions = self.root / "sessions"
        journals = sorted(((p.stat().st_mtime, p) for p in sessions.glob("*.jsonl")),
                          key=lambda t: t[0]) if sessions.is_dir() else []
        dropped: list[str] = []

        def drop(path: Path) -> None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            dropped.append(path.name[: -len(".jsonl")])

        for mtime, path in list(journals):
            if path.name != f"{keep}.jsonl" and now - mtime > max_age_days * 86400:
                drop(path)
                journals.remove((mtime, path))
        sizes = self._sweep(now, [p for _, p in journals])
        while sum(sizes.values()) > max_bytes:
            victims = [p for _, p in journals if p.name != f"{keep}.jsonl"]
            if not victims:
                break
            drop(victims[0])
            journals = [(m, p) for m, p in journals if p != victims[0]]
            sizes = self._sweep(now, [p for _, p in journals])
        return dropped

    def _sweep(self, now: float, journals: list[Path]) -> dict[str, int]:
        """Remove the blobs none of ``journals`` names; the sizes of those kept."""
        named: set[str] = set()
        for path in journals:
            with contextlib.suppress(OSError):
                for line in path.read_bytes().split(b"\n"):
                    with contextlib.suppress(ValueError):
                        blob = json.loads(line).get("blob") if b'"blob"' in line else None
                        if isinstance(blob, str):
                            named.add(blob)
        sizes: dict[str, int] = {}
        root = self.blobs.root
        if not root.is_dir():
            return sizes
        for folder in root.iterdir():
            for blob in folder.iterdir() if folder.is_dir() else ():
                try:
                    st = blob.stat()
                except OSError:
                    continue
                if blob.name in named or now - st.st_mtime < _GRACE:
                    sizes[blob.name] = st.st_size
                else:
                    with contextlib.suppress(OSError):
                        blob.unlink()
        return sizes

    def prune_if_due(self, keep: str = "") -> None:
        """``prune`` at most once every ``PRUNE_EVERY`` seconds (a stamp file). Blocking."""
        stamp = self.root / ".pruned"
        try:
            if time.time() - stamp.stat().st_mtime < PRUNE_EVERY:
                return
        except OSError:
            pass
        with contextlib.suppress(OSError):
            private_dir(self.root, self.root)
            stamp.touch()
            self.prune(keep=keep)
