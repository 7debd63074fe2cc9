"""The lead's lease: one running ``nyz team start`` per team.

Two leads of one team would both start its teammates, read the same inboxes and race on every
file, and a start that loses some of those races hangs. So starting a team first takes an
exclusive, non-blocking POSIX record lock (``fcntl``) on ``teams/<team>/lead.lease`` and holds
it for the rest of the lead's life; a second start finds it taken and refuses at once, naming
the lead's pid.

Why a POSIX lock and not ``flock`` (which ``locking`` uses for short critical sections): the
kernel tells who holds a POSIX lock (``F_GETLK`` gives the holder's pid, so the refusal names
it even before the holder wrote its pid into the file), and a POSIX lock belongs to the
process, so it is never inherited by the teammate processes a lead starts: a ``--detach``
teammate outliving its lead does not keep the team leased. Both kinds die with their process,
so a lead killed with ``kill -9`` leaves no stale lease. The one pitfall of POSIX locks, that
closing *any* descriptor of the file drops the process's lock, is why only this module opens
the lease file, and why it is opened once per process and team.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from pathlib import Path

from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.locking import DIR_MODE, FILE_MODE

LEASE_FILE = "lead.lease"
# struct flock on Linux: short l_type, l_whence; off_t l_start, l_len; pid_t l_pid (+ padding)
_FLOCK = "hhqqi4x"
_held: dict[Path, int] = {}  # lease path -> the open descriptor holding it, for the process


class TeamLeased(TeamError):
    """Another lead holds the team (``pid``: that lead's pid, or None if it cannot be told)."""

    def __init__(self, team: str, pid: int | None) -> None:
        self.pid = pid
        who = f"pid {pid}" if pid else "another process"
        super().__init__(f"team '{team}' already has a running lead ({who}); `nyz team stop "
                         f"{team}` stops it")


def lease_path(team_dir: Path) -> Path:
    return Path(team_dir) / LEASE_FILE


def take_lead_lease(team: str, team_dir: Path) -> None:
    """Lease the team in ``team_dir`` to this process until it exits; ``TeamLeased`` at once
    if a live process (this one included) holds it."""
    path = lease_path(team_dir)
    if path in _held:
        raise TeamLeased(team, os.getpid())
    path.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        for _attempt in range(5):  # the holder may let go between our try and our question
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EAGAIN):
                    raise
            holder = _holder(fd)
            if holder is not None:
                raise TeamLeased(team, holder or _written_pid(fd))
        else:
            raise TeamLeased(team, _written_pid(fd))
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    _held[path] = fd  # never closed: the lock lasts as long as the process


def lead_pid(team_dir: Path) -> int | None:
    """The pid of the team's running lead (0 if the kernel cannot tell it and the lead has not
    written it yet), or None when no lead runs. It only asks (``F_GETLK``), never locks: a
    viewer such as ``nyz serve --team`` must see the lead without becoming one."""
    path = lease_path(team_dir)
    if path in _held:  # ours: asking through a second descriptor and closing it would drop it
        return os.getpid()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        holder = _holder(fd)
        return None if holder is None else (holder or _written_pid(fd) or 0)
    finally:
        os.close(fd)


def _holder(fd: int) -> int | None:
    """``F_GETLK``: the pid of the lock that would block ours (0 if the kernel cannot say, as
    across pid namespaces), or None when nothing holds the file."""
    query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
    l_type, _whence, _start, _len, pid = struct.unpack(
        _FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, query))
    return None if l_type == fcntl.F_UNLCK else max(pid, 0)


def _written_pid(fd: int) -> int | None:
    """The pid the holder wrote into the file (None if it has not yet)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
