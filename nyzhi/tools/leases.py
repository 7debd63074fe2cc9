"""Write leases: two agents of one runtime tree never write the same file at the same moment.

Every call of a tool that writes files (``Tool.writes_files``) holds a lease on each path it
touches for the duration of the call, keyed by the *real* path (symlinks and ``..`` resolved,
as the sandbox resolves them), so ``src/app.py``, ``./src/../src/app.py`` and a symlink to it
are one lease. The holder is the agent's path (``/agents/main/worker-2``).

A second writer waits for the lease up to ``LeaseTable.wait`` seconds (30 by default,
``agent.agents.write_lease_wait``); past that its call fails with a tool error naming the
holder, ``/agents/main/worker-2 is editing src/app.py``, so the model can do something else.
A call takes all its paths at once or none (no two calls can each hold half of what the other
needs), an agent re-entering a path it already holds does not wait for itself, and leases are
released in a ``finally`` (a cancelled or crashed call never keeps one) and, for good measure,
by ``release_all`` when an agent stops.

The table lives on the ``ToolContext`` (``ctx.leases``); contexts derived from one another
(``attrs.evolve``) share it, which is what makes it one table per runtime tree.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import trio

from nyzhi import records
from nyzhi.config.paths import display_path
from nyzhi.tools.ledger import LastWriters

DEFAULT_WAIT = 30.0


class LeaseBusy(Exception):
    """Another agent held a path past the wait bound. The message is for the model."""

    def __init__(self, holder: str, path: Path, shown: str, waited: float) -> None:
        self.holder = holder
        self.path = path
        self.waited = waited
        super().__init__(
            f"{holder} is editing {shown} (waited {waited:g} s for it). Work on something else "
            "and try this change again later, or ask that agent to finish first."
        )


@records.define(eq=False)
class Lease:
    """The paths one call holds (only those it took: paths its agent already held are not
    its to release)."""

    holder: str
    paths: tuple[Path, ...] = ()


def real_path(path: str | os.PathLike[str], base: Path | None = None) -> Path:
    """The real absolute path, relative ones taken from ``base``."""
    p = Path(os.path.expanduser(os.fspath(path)))
    if not p.is_absolute() and base is not None:
        p = base / p
    return Path(os.path.realpath(p))


class LeaseTable:
    """Leases of one runtime tree, by real path."""

    def __init__(self, wait: float = DEFAULT_WAIT) -> None:
        self.wait = wait
        self._held: dict[Path, Lease] = {}
        self._released = trio.lowlevel.ParkingLot()
        # The last write through our tools to each path (nyzhi.tools.ledger), tree-wide.
        self.writers = LastWriters()

    def holder_of(self, path: str | os.PathLike[str]) -> str | None:
        lease = self._held.get(real_path(path))
        return lease.holder if lease else None

    def held_by(self, holder: str) -> list[Path]:
        return [p for p, lease in self._held.items() if lease.holder == holder]

    def _blocker(self, paths: Iterable[Path], holder: str) -> tuple[Path, Lease] | None:
        for path in paths:
            lease = self._held.get(path)
            if lease is not None and lease.holder != holder:
                return path, lease
        return None

    async def acquire(
        self, paths: Iterable[str | os.PathLike[str]], holder: str, *,
        wait: float | None = None, root: Path | None = None, resolved: bool = False,
    ) -> Lease:
        """Take every path for ``holder``, waiting up to ``wait`` seconds (default
        ``self.wait``) for other holders; ``LeaseBusy`` past that. ``root`` makes the path in
        the error relative (and resolves relative ``paths``); ``resolved`` says the paths are
        real already (the gates resolved them), which saves resolving them again."""
        if resolved:
            wanted = sorted({Path(p) for p in paths})
        else:
            wanted = sorted({real_path(p, root) for p in paths})
        blocked = self._blocker(wanted, holder)
        if blocked is not None:
            bound = self.wait if wait is None else wait
            with trio.move_on_at(trio.current_time() + bound if bound < math.inf else math.inf):
                while blocked is not None:
                    await self._released.park()
                    blocked = self._blocker(wanted, holder)
            if blocked is not None:
                path, lease = blocked
                raise LeaseBusy(lease.holder, path, display_path(path, root, real_root=True), bound)
        lease = Lease(holder, tuple(p for p in wanted if p not in self._held))
        for path in lease.paths:
            self._held[path] = lease
        return lease

    def release(self, lease: Lease) -> None:
        """Give back what ``lease`` took (a no-op for paths already released)."""
        freed = False
        for path in lease.paths:
            if self._held.get(path) is lease:
                del self._held[path]
                freed = True
        if freed:
            self._released.unpark_all()

    def release_all(self, holder: str, *, subtree: bool = True) -> list[Path]:
        """Release every lease of ``holder`` (and, with ``subtree``, of the agents under it):
        for an agent that stops or crashes. Returns the paths freed."""
        prefix = holder.rstrip("/") + "/"
        freed = [
            path for path, lease in self._held.items()
            if lease.holder == holder or (subtree and lease.holder.startswith(prefix))
        ]
        for path in freed:
            del self._held[path]
        if freed:
            self._released.unpark_all()
        return freed

    @contextlib.asynccontextmanager
    async def hold(
        self, paths: Iterable[str | os.PathLike[str]], holder: str, *,
        wait: float | None = None, root: Path | None = None, resolved: bool = False,
    ) -> AsyncIterator[Lease]:
        """``acquire`` for the duration of the block; released however the block ends."""
        lease = await self.acquire(paths, holder, wait=wait, root=root, resolved=resolved)
        try:
            yield lease
        finally:
            self.release(lease)


@contextlib.asynccontextmanager
async def write_leases(tool: Any, ctx: Any, paths: Iterable[Path]) -> AsyncIterator[Lease | None]:
    """Hold the leases one tool call needs: ``paths`` (the gates' targets, already resolved
    with ``os.path.realpath`` like the sandbox does) if the tool writes files and the context
    has a lease table; otherwise nothing."""
    table = getattr(ctx, "leases", None)
    paths = list(paths)
    if table is None or not getattr(tool, "writes_files", False) or not paths:
        yield None
        return
    root = Path(ctx.workspace_root)
    async with table.hold(paths, ctx.agent_path, root=root, resolved=True) as lease:
        yield lease


