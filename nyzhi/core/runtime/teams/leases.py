"""Write leases that hold across processes: a process team's lock files.

In-process teammates share one ``LeaseTable`` (``nyzhi.tools.leases``) with the lead. Process
teammates are other programs, so the lead and every member of a ``process`` team use this
table instead: a lease is the in-process one *plus* an exclusive ``flock`` on
``teams/<team>/leases/<hash of the real path>.lock``, held for the duration of the write. The
kernel drops a dead process's locks, so a killed member never keeps a file. The lock file holds
the holder's path, for the "<holder> is editing <file>" error.

Waiting for another process's lock polls (``flock`` has no way to wake a trio task); the poll
is short, and only a write that collides with another member's waits at all.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import math
import os
from collections.abc import Iterable
from pathlib import Path

import trio

from nyzhi.config.paths import display_path
from nyzhi.core import events as ev
from nyzhi.tools.leases import Lease, LeaseBusy, LeaseTable

POLL = 0.02


class TeamLeaseTable(LeaseTable):
    def __init__(self, directory: Path, *, label: str = "", wait: float = 30.0) -> None:
        super().__init__(wait)
        self.directory = Path(directory)
        self.label = label  # this process's place in the team (/team/<team>/<member>)
        self._fds: dict[int, list[int]] = {}

    def _shown_holder(self, holder: str) -> str:
        if self.label and (holder == ev.MAIN_AGENT or holder.startswith(ev.MAIN_AGENT + "/")):
            return self.label + holder[len(ev.MAIN_AGENT):]
        return holder

    def _file(self, path: Path) -> Path:
        digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:24]
        return self.directory / f"{digest}.lock"

    async def acquire(
        self, paths: Iterable[str | os.PathLike[str]], holder: str, *,
        wait: float | None = None, root: Path | None = None, resolved: bool = False,
    ) -> Lease:
        lease = await super().acquire(paths, holder, wait=wait, root=root, resolved=resolved)
        bound = self.wait if wait is None else wait
        deadline = trio.current_time() + bound if bound < math.inf else math.inf
        fds: list[int] = []
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            for path in lease.paths:
                fds.append(await self._lock(path, holder, deadline, bound, root))
        except BaseException:
            for fd in fds:
                os.close(fd)
            super().release(lease)
            raise
        self._fds[id(lease)] = fds
        return lease

    async def _lock(self, path: Path, holder: str, deadline: float, bound: float,
                    root: Path | None) -> int:
        fd = os.open(self._file(path), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if trio.current_time() >= deadline:
                        other = os.pread(fd, 400, 0).decode(errors="replace").strip()
                        raise LeaseBusy(other or "another teammate", path, display_path(path, root, real_root=True),
                                        bound) from None
                    await trio.sleep(POLL)
            os.ftruncate(fd, 0)
            os.pwrite(fd, self._shown_holder(holder).encode(), 0)
            return fd
        except BaseException:
            os.close(fd)
            raise

    def release(self, lease: Lease) -> None:
        for fd in self._fds.pop(id(lease), []):
            with contextlib.suppress(OSError):
                os.close(fd)  # closing drops the flock
        super().release(lease)
