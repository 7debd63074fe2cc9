"""Atomic file writes: temp file in the same directory + fsync + rename + directory fsync.

A reader (another nyz process) sees either the old file or the new one, never a torn one,
and a crash mid-write leaves the old file intact. Used for config edits and auth.json.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def atomic_write(path: Path, data: bytes, *, mode: int | None = None, dir_mode: int | None = None) -> None:
    """Replace ``path`` with ``data``.

    ``mode``: permission bits of the new file (default: keep the existing file's mode, else
    0644). The temp file is created 0600 and chmod-ed before the rename, so a secret is
    never readable by others even for an instant. ``dir_mode``: create missing parent
    directories with this mode (and tighten an existing parent to it).
    """
    path = Path(path)
    parent = path.parent
    if dir_mode is not None:
        parent.mkdir(parents=True, exist_ok=True, mode=dir_mode)
        os.chmod(parent, dir_mode)
    else:
        parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
