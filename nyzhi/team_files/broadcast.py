"""A team's broadcasts: one append-only log every member reads from its own offset.

``send_team_message(to="all")`` used to write one copy into every other member's inbox: with
every member broadcasting that is n² inbox rewrites. Instead a broadcast is one line appended
to ``teams/<team>/broadcast.jsonl`` (under ``broadcast.lock``), and each member keeps how far it
has read in ``inboxes/<member>.cursor`` (a byte offset, written atomically under that member's
inbox lock, ``nyzhi.team_files.inbox``). A broadcast costs one write; a member's read costs one
cursor write, whatever the number of broadcasts it takes in.

Crash safety: a line is written with one ``write`` and fsynced before the appender returns. A
process killed mid-write can leave a torn last line (no newline); readers only ever consume
whole lines, and the next appender, under the lock, cuts the torn tail off before it writes.
A member's cursor is written after its inbox is marked read, so a crash between the two
delivers a broadcast again rather than losing it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nyzhi.team_files import locking
from nyzhi.team_files.locking import DIR_MODE, FILE_MODE, file_lock

LOG_FILE = "broadcast.jsonl"


class BroadcastLog:
    """The broadcast log of one team directory. Blocking calls."""

    def __init__(self, team_dir: Path) -> None:
        self.path = Path(team_dir) / LOG_FILE
        self.lock_path = Path(team_dir) / "broadcast.lock"

    def size(self) -> int:
        """The offset a member that joins now starts reading from."""
        try:
            return os.path.getsize(self.path)
        except FileNotFoundError:
            return 0

    def append(self, record: dict[str, Any]) -> int:
        """Append one record (a message as JSON) as a line; returns the log's new end."""
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        with file_lock(self.lock_path):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                         FILE_MODE)
            try:
                end = os.fstat(fd).st_size
                if end and os.pread(fd, 1, end - 1) != b"\n":  # a dead appender's torn line
                    end = self._last_newline(fd, end)
                    os.ftruncate(fd, end)
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        locking.COUNTS["writes"] += 1
        return end + len(line)

    @staticmethod
    def _last_newline(fd: int, end: int) -> int:
        pos = end
        while pos > 0:
            start = max(0, pos - 65536)
            chunk = os.pread(fd, pos - start, start)
            i = chunk.rfind(b"\n")
            if i >= 0:
                return start + i + 1
            pos = start
        return 0

    def read_from(self, offset: int) -> tuple[list[dict[str, Any]], int]:
        """The whole records after ``offset``, and the offset after the last of them (a torn
        or half-written last line is left for later). A line that does not parse is skipped:
        one bad line must not block every member's inbox."""
        locking.COUNTS["reads"] += 1
        try:
            with open(self.path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if offset > size:  # the log was reset under an old cursor
                    offset = 0
                fh.seek(offset)
                data = fh.read(size - offset)
        except FileNotFoundError:
            return [], 0
        cut = data.rfind(b"\n") + 1
        records = list(_parse(data[:cut]))
        return records, offset + cut


def _parse(data: bytes) -> Iterator[dict[str, Any]]:
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record
