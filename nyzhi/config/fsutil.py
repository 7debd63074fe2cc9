"""Atomic file writes.

``atomic_write``: temp file in the same directory + fsync + rename + directory fsync. A reader
(another nyz process) sees either the old file or the new one, never a torn one, and a crash
mid-write (or a full disk) leaves the old file intact. ``replace_in_dir`` is that write itself,
the one copy: config edits, auth.json, session metadata and images, ``/export`` and team files
go through ``atomic_write``, a file another library writes (the index's graph) through
``commit_file``; the file tools through ``nyzhi.tools.paths.write_nofollow``, which first opens
the directory refusing symlinks.

A failed write raises ``StorageError`` (``nyzhi.oserror``: the one way a failed OS call is
described, under every layer): what nyz was writing, where, why, and the fix.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from nyzhi.oserror import StorageError


def atomic_write(
    path: Path, data: bytes, *, mode: int | None = None, dir_mode: int | None = None,
    what: str = "", fix: str = "", sync: bool = True, parents: bool = True,
    refuse_link: bool = False,
) -> None:
    """Replace ``path`` with ``data``; on a full or read-only disk the old file stays and a
    ``StorageError`` says ``could not write <what> <path>: <reason>; <fix>``.

    ``mode``: permission bits of the new file (default: keep the existing file's mode, else
    what the umask gives a new file). ``dir_mode``: create missing parent directories with
    this mode (and tighten an existing parent to it). ``sync`` False skips the fsyncs: still
    atomic against a crash of the process (the rename is), for a caller that makes a batch of
    files durable later at once (the checkpoint store at a turn's end). ``parents`` False: a
    missing parent directory is an error, not made (a file the user named, ``nyz export -o``).
    ``refuse_link``: a symlink at ``path`` is refused instead of replaced (``replace_in_dir``).
    """
    path = Path(path)
    try:
        parent = path.parent
        if parents and dir_mode is not None:
            parent.mkdir(parents=True, exist_ok=True, mode=dir_mode)
            os.chmod(parent, dir_mode)
        elif parents:
            parent.mkdir(parents=True, exist_ok=True)
        dir_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        try:
            replace_in_dir(dir_fd, path.name, data, mode=mode, sync=sync, refuse_link=refuse_link)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise StorageError.wrap(exc, f"write {what}".rstrip(), path, fix) from exc


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def commit_file(tmp: Path, path: Path) -> None:
    """The second half of the atomic write, for a file another library wrote to ``tmp`` (the
    semantic index's graph, saved by hnswlib to a path): ``tmp`` fsynced, renamed over
    ``path`` in the same directory, the directory fsynced. Raises the ``OSError``; ``tmp`` is
    removed on a failure."""
    tmp, path = Path(tmp), Path(path)
    if tmp.parent != path.parent:
        raise ValueError(f"{tmp} and {path} must share a directory for an atomic rename")
    try:
        fd = os.open(tmp, os.O_RDONLY | _CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def rename_durably(src: Path, dest: Path) -> None:
    """``src`` renamed onto ``dest`` in one step, the parent fsynced: a finished directory
    fetched under a staging name (a plugin, a marketplace; ``dest`` must not exist), or a
    damaged session log set aside beside its repaired copy. A crash leaves either name,
    never half of either."""
    src, dest = Path(src), Path(dest)
    os.replace(src, dest)
    dir_fd = os.open(dest.parent, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
_tmpfile_works = bool(_O_TMPFILE) and os.path.isdir("/proc/self/fd")


def _unnamed(dir_fd: int, mode: int | None) -> int | None:
    """An unnamed file in ``dir_fd`` to write (``O_TMPFILE``), or None where it is not
    supported (then the caller makes a named temp file)."""
    global _tmpfile_works
    if not _tmpfile_works:
        return None
    try:
        return os.open(".", os.O_WRONLY | _O_TMPFILE | _CLOEXEC,
                       0o666 if mode is None else 0o600, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            _tmpfile_works = False  # this kernel or file system: not again
            return None
        raise


def replace_in_dir(dir_fd: int, name: str, data: bytes, *, mode: int | None = None,
                   sync: bool = True, refuse_link: bool = False) -> None:
    """The one atomic write: ``name`` in the open directory ``dir_fd`` replaced by ``data``.

    A temp file in the same directory (created exclusively, never through a symlink) is
    written, fsynced and renamed over ``name``; then the directory is fsynced, so after a crash
    the file is the old one or the new one, never a torn one. ``mode`` None keeps an existing
    file's permission bits (a new file gets what the umask gives); a given ``mode`` is set on
    the temp file, created 0600, before the rename, so a secret is never readable by others
    even for an instant. ``atomic_write`` opens the directory plainly; the file tools open it
    refusing symlinks at every component (``nyzhi.tools.paths.write_nofollow``). A symlink at
    ``name`` is never written through: the rename replaces the link itself, or, with
    ``refuse_link`` (a file the user named: ``/export``, ``nyz export -o``, where replacing
    their link with a file would surprise them), ``ELOOP`` is raised and nothing changes.
    Raises the ``OSError``; the temp file is removed."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and refuse_link and stat.S_ISLNK(st.st_mode):
        raise OSError(errno.ELOOP, "it is a symbolic link; nyz does not write over one "
                                   "(name the file it points to)", name)
    if mode is None and st is not None:
        mode = stat.S_IMODE(st.st_mode)
    tmp = f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    # Unnamed while it is written (O_TMPFILE): a process killed mid-write leaves nothing in
    # the user's directory (issue 55: `.big.txt.NNN-XXXX.tmp` files were left beside files
    # and were still there after --continue). It gets its temp name only for the instant
    # before the rename. Where the file system or kernel cannot, a named temp file as before.
    fd = _unnamed(dir_fd, mode)
    named = fd is None
    if fd is None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
        fd = os.open(tmp, flags, 0o666 if mode is None else 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if mode is not None:
                os.fchmod(fd, mode)
            if sync:
                os.fsync(fd)
            if not named:
                os.link(f"/proc/self/fd/{fd}", tmp, dst_dir_fd=dir_fd, follow_symlinks=True)
                named = True
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        if named:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
        raise
    if sync:
        os.fsync(dir_fd)
