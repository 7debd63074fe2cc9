"""The lock and the JSON file I/O every team file goes through.

``file_lock`` is an exclusive ``flock`` on a lock file beside the data, never on the data file
itself: the data file is replaced by rename on every write, so a lock on it would lock an
inode that is no longer there. ``flock`` locks belong to an open file description, so two
threads of one process exclude each other as two processes do, and the kernel drops the lock
when its holder dies (a ``kill -9`` never leaves a team locked).

Writes go through ``atomic_write`` (temp + fsync + rename + directory fsync): a reader, or a
process killed mid-write, sees the old file or the new one, never a torn one.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nyzhi.config.fsutil import atomic_write
from nyzhi.team_files.errors import TeamError

DIR_MODE = 0o700
FILE_MODE = 0o600
# Durable writes this process made to team files (each ``write_json``, each broadcast line),
# and team files it read: how the scale tests and the benchmark see that an event costs O(1)
# file operations, not O(n).
COUNTS = {"writes": 0, "reads": 0}


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created 0600, with its parents, if missing) for the
    block. Blocks the calling thread while another holder has it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def read_json(path: Path, default: Any) -> Any:
    """The JSON in ``path``; ``default`` when it does not exist. A file that does not parse is
    a ``TeamError`` naming it (writes are atomic, so that means someone edited it by hand)."""
    COUNTS["reads"] += 1
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        return default
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise TeamError(f"{path} is not valid JSON ({exc}); fix or delete the file") from exc


def write_json(path: Path, data: Any, *, indent: int | None = None, sync: bool = True) -> None:
    """Replace ``path`` with ``data`` as JSON, atomically, mode 0600 (messages may be private).
    Compact unless ``indent`` is given: an indented dump takes the pure-Python encoder, several
    times slower, and inboxes and tasks are rewritten on every change. ``sync`` False skips the
    fsyncs (still atomic against a killed process): for a cache that is rebuilt when lost."""
    text = json.dumps(data, ensure_ascii=False, indent=indent,
                      separators=None if indent else (",", ":"))
    atomic_write(Path(path), text.encode("utf-8"), mode=FILE_MODE, what="the team file",
                 sync=sync)
    COUNTS["writes"] += 1


def now_rfc3339() -> str:
    """The time stamp every team record carries: UTC, RFC 3339, milliseconds."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
