"""The one way a failed OS call is described to a user: ``describe_os_error`` and
``StorageError``.

Every writer (sessions, config, credentials, tool output, the compaction archive, remembered
approvals, ``nyz run``'s stdout) turns an ``OSError`` into one line that says what nyz was
doing, where, why (``no space left on device``, ``read-only file system``) and, when the
caller knows it, the fix. Those writers sit in every layer, from ``config`` (the atomic
writes of ``config.fsutil``) to the front ends, so this sits under all of them; it imports
nothing of nyzhi's.
"""

from __future__ import annotations

import errno
import os

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
