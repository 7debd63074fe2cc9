"""File primitives for session logs: whole-line appends, atomic replace, tolerant reads.

Kept apart from the store so the durability mechanics (what is one syscall, what is fsynced,
how a torn last line is detected and trimmed) can be read in one place.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from nyzhi.config.fsutil import atomic_write


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def atomic_write_json(path: Path, data: dict[str, Any]) -> None:
    """``data`` as indented JSON, replacing ``path`` atomically (owner-only). A full disk
    leaves the old file; the ``StorageError`` names the file."""
    payload = json.dumps(data, ensure_ascii=False, indent=1).encode()
    atomic_write(path, payload, mode=0o600, what="the session metadata")


def encode_record(record: dict[str, Any]) -> bytes:
    # json.dumps escapes control characters, so the line holds no raw b"\n".
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode()


def read_log(path: Path, limit: int | None = None) -> tuple[list[dict[str, Any]], int, int]:
    """(records, skipped line count, byte size). A trailing line without a newline is partial.
    ``limit``: only the first ``limit`` bytes (the log as it was then: a checkpoint's)."""
    data = path.read_bytes()
    if limit is not None:
        data = data[:limit]
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    skipped = 1 if tail.strip() else 0
    records = []
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            skipped += 1
    return records, skipped, len(data)


def trim_partial_tail(path: Path) -> None:
    """Cut a partial last line (left by a killed writer) so new records start on a fresh line."""
    with open(path, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        block = 65536
        pos = size
        while pos > 0:
            start = max(0, pos - block)
            f.seek(start)
            chunk = f.read(pos - start)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                f.truncate(start + nl + 1)
                return
            pos = start
        f.truncate(0)


def repair_log(path: Path) -> str | None:
    """Rewrite the log at ``path`` without the lines that are not records (a torn or
    corrupt line), keeping the damaged file beside it as ``<name>.damaged``; the one line to
    tell the user which file and lines were dropped, or None when there were none. Run
    before a resumed session appends, so what was skipped is said once, not on every load."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    bad: list[int] = []
    good: list[bytes] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            good.append(line + b"\n")
        else:
            bad.append(number)
    if tail.strip():
        bad.append(len(lines) + 1)
    if not bad:
        return None
    damaged = path.with_name(path.name + ".damaged")
    atomic_write(damaged, data, what="the damaged session log", mode=0o600)
    atomic_write(path, b"".join(good), what="the repaired session log")
    shown = ", ".join(map(str, bad[:10])) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
    return (f"{path}: skipped line{'s' if len(bad) > 1 else ''} {shown} (not a valid record); "
            f"the damaged file is kept beside it as {damaged.name}")
