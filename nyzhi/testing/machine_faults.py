"""Machine faults for tests: a tiny tmpfs that can be filled up (a full disk) or mounted
read-only, so the code under test meets the real ``ENOSPC`` / ``EROFS`` from the kernel.

Mounting needs root (CI runs as root); ``skip_reason()`` says why a test cannot run elsewhere.
Every mount is undone when the context exits, whatever happened inside it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

_FILLER = ".filler"


def skip_reason() -> str | None:
    """Why the machine-fault tests cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "mounting a tmpfs to simulate a full or read-only disk needs root (CI runs as root)"
    return None


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str = "256k", *, read_only: bool = False) -> Iterator[Path]:
    """Mount a ``size`` tmpfs on ``path`` (created if missing) for the block; ``read_only``
    mounts it ``ro``. Unmounted in a ``finally``."""
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def remount(path: Path, *, read_only: bool) -> None:
    """Flip a mounted tmpfs between read-only and read-write."""
    subprocess.run(
        ["mount", "-o", f"remount,{'ro' if read_only else 'rw'}", str(path)], check=True
    )


def fill(path: Path, leave: int = 0) -> Path:
    """Fill the filesystem holding ``path`` until the kernel says ``ENOSPC``, then free
    ``leave`` bytes again; returns the filler file (delete it to free the space)."""
    filler = path / _FILLER
    chunk = b"\0" * 4096
    with open(filler, "ab", buffering=0) as fh:
        try:
            while True:
                fh.write(chunk)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
        if leave:
            fh.truncate(max(0, fh.tell() - leave))
    return filler
