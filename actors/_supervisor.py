"""Supervision: what a parent does when a child ends, and the ``Supervisor`` actor.

Every actor supervises its own children with its ``supervision`` policy (a
:class:`~actors.Supervision`); ``Supervisor`` is simply an actor whose job is nothing else,
built from child specs. The decision runs in the exiting child's own task, serialised per
parent by a lock, so a parent busy in a long ``receive`` (a model stream) does not delay
the restart of its children.

Semantics follow Erlang/OTP: restart types decide *whether* (permanent / transient /
temporary), strategies decide *which* siblings restart with it, and more than
``max_restarts`` restarts within ``within`` seconds make the parent give up: it fails with
``RestartIntensityExceeded`` and its own parent decides in turn (escalation). At the top,
the system is the parent: a top-level crash that no one restarts escapes supervision,
ends the system and is raised from ``open_system`` (trio's nursery rule).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import attrs
import trio

from ._actor import Actor
from ._cell import _NO_RESTART, Cell, Hold
from ._errors import RestartIntensityExceeded
from ._types import (
    DEFAULT_MAX_RESTARTS,
    DEFAULT_WITHIN,
    Backoff,
    ChildSpec,
    Outcome,
    Restart,
    Status,
    Strategy,
    Supervision,
)


class _SupState:
    __slots__ = ("lock", "stamps")

    def __init__(self) -> None:
        self.lock = trio.Lock()
        self.stamps: deque[float] = deque()


def _wants_restart(cell: Cell, outcome: Outcome) -> bool:
    if cell.stop_kind is Status.STOPPED or cell.hard:
        return False  # someone asked it to stop: a crash while stopping is not restarted
    if cell.restart is Restart.PERMANENT:
        return True
    return cell.restart is Restart.TRANSIENT and outcome.status is Status.ERRORED


def _parent_gone(parent: Cell) -> bool:
    return parent.closing or parent.terminal or parent.system._closing


async def supervise_exit(cell: Cell, outcome: Outcome) -> Any:
    """Decide what follows ``cell``'s incarnation ending with ``outcome``.

    Returns the restart reason (the exception, or ``None`` after a normal completion) when
    the cell must start a new incarnation, else ``_NO_RESTART``."""
    parent = cell.parent
    assert parent is not None
    if not _wants_restart(cell, outcome) or _parent_gone(parent):
        if outcome.status is Status.ERRORED and parent.parent is None:
            error = outcome.exception
            assert error is not None
            error.add_note(f"raised in actor {cell.path} (not restarted: escaped supervision)")
            cell.system._escaped(error)
        return _NO_RESTART
    if parent.sup is None:
        parent.sup = _SupState()
    state: _SupState = parent.sup
    async with state.lock:
        if _parent_gone(parent) or cell.stop_kind is Status.STOPPED or cell.kill_reason is not None:
            return _NO_RESTART
        policy = parent.supervision()
        now = trio.current_time()
        stamps = state.stamps
        while stamps and stamps[0] <= now - policy.within:
            stamps.popleft()
        if len(stamps) >= policy.max_restarts:
            failure = RestartIntensityExceeded(
                parent.path or "/", policy.max_restarts, policy.within
            )
            failure.__cause__ = outcome.exception
            parent.kill(failure)
            return _NO_RESTART
        stamps.append(now)
        cell.status = Status.PENDING_INIT  # restarting (maybe after a backoff)
        held = await _stop_group(parent, cell, policy.strategy)
        if policy.backoff is not None:
            with trio.CancelScope(shield=True) as cell.wait_scope:
                await trio.sleep(policy.backoff.delay(len(stamps)))
            cell.wait_scope = None
        if _parent_gone(parent) or cell.stop_kind is Status.STOPPED or cell.kill_reason is not None:
            for sibling in held:
                sibling.request_stop()
            return _NO_RESTART
        for sibling in held:  # start order
            assert sibling.hold is not None
            sibling.hold.reason = outcome.exception
            sibling.hold.resume.set()
        return outcome.exception


async def _stop_group(parent: Cell, cell: Cell, strategy: Strategy) -> list[Cell]:
    """Stop the siblings that restart with ``cell`` (reverse start order); return the ones
    to restart, in start order. Temporary siblings are stopped for good."""
    if strategy is Strategy.ONE_FOR_ONE or not parent.children:
        return []
    siblings = list(parent.children.values())
    if strategy is Strategy.REST_FOR_ONE:
        siblings = siblings[siblings.index(cell) + 1 :] if cell in siblings else []
    held: list[Cell] = []
    for sibling in reversed(siblings):
        if sibling is cell or sibling.terminal or sibling.in_exit or sibling.hold is not None:
            continue
        if sibling.restart is Restart.TEMPORARY:
            await sibling.stop(None)
            continue
        hold = sibling.hold = Hold()
        if sibling.mailbox is not None:
            sibling.mailbox.wake()
        with trio.move_on_after(sibling.grace):
            await hold.stopped.wait()
        if not hold.stopped.is_set():
            sibling.cancel_hard(stopping=False)
            await hold.stopped.wait()
        held.append(sibling)
    held.reverse()
    return held


# -- the Supervisor actor -------------------------------------------------------------------
@attrs.frozen
class StartChild:
    """Ask a :class:`Supervisor` to start a dynamic child; the reply is its ``ActorRef``."""

    spec: ChildSpec


@attrs.frozen
class StopChild:
    """Ask a :class:`Supervisor` to stop the child named ``name``; the reply is its
    ``Outcome`` (or ``None`` if there was no such child)."""

    name: str
    grace: float | None = None


@attrs.frozen
class WhichChildren:
    """Ask a :class:`Supervisor` for its live children; the reply is a tuple of refs."""


class Supervisor(Actor):
    """An actor that only supervises: it starts ``children`` (child specs) in order when it
    starts (and again after it is restarted), and applies ``strategy`` with
    ``max_restarts`` restarts per ``within`` seconds and an optional ``backoff``.

    Dynamic children: ``await sup.ask(StartChild(spec))``, ``StopChild(name)``,
    ``WhichChildren()``. Dynamic children are not re-created when the supervisor itself
    restarts (its state starts afresh, as in OTP).
    """

    def __init__(
        self,
        children: Sequence[ChildSpec] = (),
        strategy: Strategy = Strategy.ONE_FOR_ONE,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        within: float = DEFAULT_WITHIN,
        backoff: Backoff | None = None,
    ) -> None:
        self.specs = tuple(children)
        self.supervision = Supervision(strategy, max_restarts, within, backoff)

    async def started(self) -> None:
        for spec in self.specs:
            self.context.spawn(spec)

    async def receive(self, message: Any) -> Any:
        if isinstance(message, StartChild):
            return self.context.spawn(message.spec)
        if isinstance(message, StopChild):
            for ref in self.context.children:
                if ref.name == message.name:
                    return await ref.stop(grace=message.grace)
            return None
        if isinstance(message, WhichChildren):
            return self.context.children
        return await super().receive(message)
