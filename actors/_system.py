"""``open_system`` and ``ActorSystem``: the root of an actor tree inside a trio program.

The system owns one nursery; every actor and background task runs in it, so nothing can
outlive the ``async with`` block. The system is also the parent (and supervisor) of
top-level actors, with trio's nursery rule for what no one handles: a top-level crash that
is not restarted, or a top-level supervisor giving up, cancels the block's body, stops every
actor and is raised from ``open_system``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from ._cell import Cell
from ._events import DEFAULT_EVENT_BUFFER, EventHub, EventStream
from ._lifecycle import run_cell
from ._ref import ActorRef
from ._spawn import spawn
from ._timer import Timer
from ._types import (
    DEFAULT_MAX_RESTARTS,
    DEFAULT_WITHIN,
    Backoff,
    Strategy,
    Supervision,
)


class ActorSystem:
    """A running actor tree. Create it with :func:`open_system`, never directly."""

    def __init__(self, name: str, nursery: trio.Nursery, supervision: Supervision) -> None:
        self.name = name
        self.supervision = supervision
        self.hub = EventHub()
        self._nursery = nursery
        self._registry: dict[str, Cell] = {}
        self._closing = False
        self._failures: list[BaseException] = []
        self._body_scope: trio.CancelScope | None = None
        self._timer = Timer()
        self._timer_scope = trio.CancelScope(shield=True)  # grace timers outlive outer cancels
        self._root = Cell.root(self)

    def __repr__(self) -> str:
        return f"<ActorSystem {self.name!r} {len(self._registry)} actors>"

    def spawn(
        self,
        factory: Any,
        *args: Any,
        name: str | None = None,
        mailbox_size: int | None = None,
        overflow: Any = None,
        restart: Any = None,
        grace: float | None = None,
    ) -> ActorRef:
        """Start a top-level actor and return its ref at once (status ``PENDING_INIT``;
        messages queue until ``started()`` has run). Not a checkpoint.

        ``factory``: an ``Actor`` subclass (or a callable returning an Actor), called with
        ``*args`` for each incarnation; or a :class:`ChildSpec` (then no other arguments).
        ``name``: unique among siblings (default ``<class>-<n>``); the path is ``/name``.
        ``mailbox_size`` (default 1024) and ``overflow`` (default ``Overflow.WAIT``): see
        :class:`Overflow`. ``restart`` (default ``Restart.TEMPORARY``): see
        :class:`Restart`. ``grace`` (default 5 s): how long a stop waits before cancelling.

        Raises ``NameTaken``, ``SystemClosed``, ``ValueError`` (bad name or size)."""
        return spawn(self._root, factory, args, name, mailbox_size, overflow, restart, grace)

    def lookup(self, path: str) -> ActorRef | None:
        """The live actor at ``path`` (``/agents/main``; the leading ``/`` is optional), or
        ``None``."""
        if not path.startswith("/"):
            path = "/" + path
        cell = self._registry.get(path.rstrip("/") or "/")
        return cell.ref if cell is not None else None

    @property
    def children(self) -> tuple[ActorRef, ...]:
        """Top-level actors in start order."""
        children = self._root.children
        return tuple(c.ref for c in children) if children else ()

    def actors(self) -> list[ActorRef]:
        """Every live actor, parents before children, siblings in start order."""
        out: list[ActorRef] = []

        def walk(cell: Cell) -> None:
            if cell.children:
                for child in tuple(cell.children):
                    out.append(child.ref)
                    walk(child)

        walk(self._root)
        return out

    def events(self, buffer: int = DEFAULT_EVENT_BUFFER) -> EventStream:
        """Subscribe to lifecycle events (from now on). Use ``with``/``async with`` and
        ``async for``. A subscriber more than ``buffer`` events behind loses the newest ones
        (counted in ``.dropped``): observers can never block the system."""
        return EventStream(self.hub, buffer)

    async def shutdown(self) -> None:
        """Stop every actor, top-level ones in reverse start order, each subtree children
        first, each within its grace. Idempotent; ``spawn`` raises ``SystemClosed`` after.
        Leaving ``open_system`` does this for you."""
        self._closing = True
        self._root.close()
        await self._root.stop_children()

    def _start(self, cell: Cell) -> None:
        """Start the task of a cell just spawned (called by ``_spawn``)."""
        self._nursery.start_soon(run_cell, cell, name=cell.path)

    async def _run_timer(self) -> None:
        with self._timer_scope:
            await self._timer.run()

    def _escaped(self, error: BaseException) -> None:
        """A failure reached the top of the tree: remember it and end the system."""
        if not any(error is e for e in self._failures):
            self._failures.append(error)
        if self._body_scope is not None:
            self._body_scope.cancel()


@asynccontextmanager
async def open_system(
    name: str = "actors",
    *,
    max_restarts: int = DEFAULT_MAX_RESTARTS,
    within: float = DEFAULT_WITHIN,
    backoff: Backoff | None = None,
) -> AsyncIterator[ActorSystem]:
    """Run an actor system for the duration of the block, inside any trio program.

    ``max_restarts``/``within``/``backoff`` are the system's supervision policy for
    top-level actors spawned with ``restart=PERMANENT`` or ``TRANSIENT`` (one_for_one).

    On leaving the block, every actor is stopped (top-level ones in reverse start order,
    each subtree children first, each within its grace), even if the block raised or was
    cancelled (this shutdown is shielded, and bounded by the graces). Then whatever escaped
    supervision is raised: one exception as itself, several as an ``ExceptionGroup``;
    an exception from the block itself propagates unchanged."""
    system: ActorSystem | None = None
    try:
        async with trio.open_nursery() as nursery:
            system = ActorSystem(
                name, nursery, Supervision(Strategy.ONE_FOR_ONE, max_restarts, within, backoff)
            )
            nursery.start_soon(system._run_timer, name=f"actors timer ({name})")
            try:
                with trio.CancelScope() as system._body_scope:
                    yield system
            finally:
                system._body_scope = None
                with trio.CancelScope(shield=True):
                    await system.shutdown()
                system.hub.close()
                system._timer_scope.cancel()
    except BaseExceptionGroup as group:
        failures = system._failures if system is not None else []
        if len(group.exceptions) == 1 and not failures:
            inner = group.exceptions[0]
            raise inner from inner.__cause__
        raise BaseExceptionGroup(group.message, [*group.exceptions, *failures]) from None
    assert system is not None
    if len(system._failures) == 1:
        error = system._failures[0]
        raise error from error.__cause__
    if system._failures:
        # BaseExceptionGroup: an ExceptionGroup when every failure is an Exception (as they
        # are in practice); a bare BaseException among them would make ExceptionGroup raise.
        raise BaseExceptionGroup(f"actors escaped supervision in {name!r}", system._failures)
