"""Atomic file writes, and the one way a failed write is described to a user.

``atomic_write``: temp file in the same directory + fsync + rename + directory fsync. A reader
(another nyz process) sees either the old file or the new one, never a torn one, and a crash
mid-write (or a full disk) leaves the old file intact. Used for config edits and auth.json.

``describe_os_error`` / ``StorageError``: every writer (sessions, config, credentials, tool
output, the compaction archive, remembered approvals) turns an ``OSError`` into one line that
says what nyz was doing, where, why (``no space left on device``, ``read-only file system``)
and, when the caller knows it, the fix. It lives here because config is the bottom layer.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

# What the user can do about it, when the caller does not say more.
_DEFAULT_FIX = {
    errno.ENOSPC: "free some space on that disk",
    errno.EDQUOT: "free some space (the disk quota is used up)",
}


def reason(exc: OSError) -> str:
    """``no space left on device``: the kernel's reason, in lower case, without the errno."""
    text = exc.strerror or str(exc) or type(exc).__name__
    return text[:1].lower() + text[1:]


def relocate_fix(exc: OSError, variable: str) -> str:
    """The usual fix for a file nyz keeps under ``variable`` (``XDG_DATA_HOME``, ...): free
    space when the disk is full, else point the variable at a writable directory."""
    if exc.errno in _DEFAULT_FIX:
        return f"free some space, or point {variable} at another disk"
    return f"point {variable} at a writable directory"


def describe_os_error(
    exc: OSError, doing: str, path: str | os.PathLike[str] | None = None, fix: str = ""
) -> str:
    """``could not <doing> <path>: <reason>; <fix>``.

    ``doing`` names the action and the thing ("write the session log"); ``path`` defaults to
    the file the error names; ``fix`` is the caller's advice (else a generic one for a full
    disk). A ``StorageError`` is described again from its cause: the caller knows better
    what was being done."""
    while isinstance(exc, StorageError):
        if not isinstance(exc.__cause__, OSError):
            return str(exc)
        exc = exc.__cause__
    where = path if path is not None else exc.filename
    text = f"could not {doing}" + (f" {os.fspath(where)}" if where else "") + f": {reason(exc)}"
    fix = fix or _DEFAULT_FIX.get(exc.errno or 0, "")
    return f"{text}; {fix}" if fix else text


class StorageError(OSError):
    """An ``OSError`` whose message is ready for the user (``describe_os_error``). It keeps the
    original ``errno`` and file name, so ``except OSError`` callers still see what happened."""

    def __init__(self, message: str, cause: OSError | None = None) -> None:
        super().__init__(cause.errno if cause is not None else None, message)
        self.message = message
        self.filename = cause.filename if cause is not None else None

    def __str__(self) -> str:
        return self.message

    @classmethod
    def wrap(
        cls, exc: OSError, doing: str, path: str | os.PathLike[str] | None = None, fix: str = ""
    ) -> StorageError:
        error = cls(describe_os_error(exc, doing, path, fix), exc)
        error.__cause__ = exc
        return error


def atomic_write(
    path: Path, data: bytes, *, mode: int | None = None, dir_mode: int | None = None,
    what: str = "", fix: str = "",
) -> None:
    """Replace ``path`` with ``data``; on a full or read-only disk the old file stays and a
    ``StorageError`` says ``could not write <what> <path>: <reason>; <fix>``.

    ``mode``: permission bits of the new file (default: keep the existing file's mode, else
    0644). The temp file is created 0600 and chmod-ed before the rename, so a secret is
    never readable by others even for an instant. ``dir_mode``: create missing parent
    directories with this mode (and tighten an existing parent to it).
    """
    path = Path(path)
    try:
        _atomic_write(path, data, mode, dir_mode)
    except OSError as exc:
        raise StorageError.wrap(exc, f"write {what}".rstrip(), path, fix) from exc


def _atomic_write(path: Path, data: bytes, mode: int | None, dir_mode: int | None) -> None:
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
