"""Waiting for a member's inbox to change, without polling: a FIFO beside the inbox file.

Senders write one byte into ``<member>.fifo`` after each append (``Inbox.poke``). The watcher
opens the FIFO read-write and non-blocking: holding a write end itself, it never sees EOF when
a sender closes, and senders' non-blocking opens succeed as long as it is open. ``wait``
returns when a poke arrives, or after ``fallback`` seconds anyway, a safety net for pokes
that cannot arrive (the FIFO was deleted and made again under a new inode, or a sender
without a FIFO): the caller reads the inbox file either way.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import trio

from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.locking import DIR_MODE, FILE_MODE


class InboxWatcher:
    """``async with InboxWatcher(inbox_dir, member) as w: while True: await w.wait(); ...``"""

    def __init__(self, inbox_dir: Path, member: str, fallback: float = 2.0) -> None:
        self.dir = Path(inbox_dir)
        self.member = member
        self.fallback = fallback
        self.fifo_path = self.dir / f"{member}.fifo"
        self._stream: trio.lowlevel.FdStream | None = None
        self._inode: tuple[int, int] | None = None

    def _open(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        with contextlib.suppress(FileExistsError):
            os.mkfifo(self.fifo_path, FILE_MODE)
        fd = os.open(self.fifo_path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        st = os.fstat(fd)
        if not stat.S_ISFIFO(st.st_mode):
            os.close(fd)
            raise TeamError(f"{self.fifo_path} is not a FIFO; delete it so nyz can make one")
        self._inode = (st.st_dev, st.st_ino)
        self._stream = trio.lowlevel.FdStream(fd)

    async def __aenter__(self) -> InboxWatcher:
        self._open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.aclose()

    def _drain(self) -> None:
        assert self._stream is not None
        fd = self._stream.fileno()
        while True:
            try:
                if not os.read(fd, 65536):
                    return
            except BlockingIOError:
                return

    def _replaced(self) -> bool:
        """Whether the FIFO on disk is no longer the one we hold (deleted, or made again)."""
        try:
            st = os.stat(self.fifo_path)
        except FileNotFoundError:
            return True
        return (st.st_dev, st.st_ino) != self._inode

    async def wait(self) -> bool:
        """Until at least one poke has arrived (all pending ones are consumed): True; or until
        ``fallback`` seconds pass: False. A checkpoint; cancelling it loses no poke that
        matters, since the caller reads the inbox file afterwards anyway."""
        if self._stream is None:
            raise RuntimeError("InboxWatcher.wait outside 'async with'")
        with trio.move_on_after(self.fallback):
            await self._stream.receive_some(65536)
            self._drain()
            return True
        if self._replaced():  # reopen, so the next pokes reach us
            await self.aclose()
            self._open()
        return False


class PokeWatcher:
    """``InboxWatcher``'s interface for a member on another host, where there is no FIFO to
    wait on: the lead writes a poke line down the member's pipe, and the pipe's reader calls
    ``poke``. The same ``fallback``: a look at the inbox every so often regardless."""

    def __init__(self, fallback: float = 2.0) -> None:
        self.fallback = fallback
        self._poked = trio.Event()

    def poke(self) -> None:
        self._poked.set()

    async def __aenter__(self) -> PokeWatcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def wait(self) -> bool:
        with trio.move_on_after(self.fallback):
            await self._poked.wait()
            self._poked = trio.Event()
            return True
        return False
