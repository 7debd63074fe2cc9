"""Restart decisions: what a parent does when one of its children's incarnations ends.

Every actor supervises its own children with its ``supervision`` policy (a
:class:`~actors.Supervision`). The decision runs in the exiting child's own task, serialised
per parent by a lock, so a parent busy in a long ``receive`` (a model stream) does not delay
the restart of its children.

Semantics follow Erlang/OTP: restart types decide *whether* (permanent / transient /
temporary), strategies decide *which* siblings restart with it, and more than
``max_restarts`` restarts within ``within`` seconds make the parent give up: it fails with
``RestartIntensityExceeded`` and its own parent decides in turn (escalation). At the top,
the system is the parent: a top-level crash that no one restarts escapes supervision,
ends the system and is raised from ``open_system`` (trio's nursery rule).
"""

from __future__ import annotations

from typing import Any

import trio

from ._cell import NO_RESTART, Cell
from ._errors import RestartIntensityExceeded
from ._types import Outcome, Restart, Status, Strategy


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
    the cell must start a new incarnation, else ``NO_RESTART``."""
    parent = cell.parent
    assert parent is not None
    if not _wants_restart(cell, outcome) or _parent_gone(parent):
        if outcome.status is Status.ERRORED and parent.parent is None:
            error = outcome.exception
            assert error is not None
            error.add_note(f"raised in actor {cell.path} (not restarted: escaped supervision)")
            cell.system._escaped(error)
        return NO_RESTART
    window = parent.restart_window()
    async with window.lock:
        if _parent_gone(parent) or cell.stop_kind is Status.STOPPED or cell.kill_reason is not None:
            return NO_RESTART
        policy = parent.supervision()
        count = window.admit(trio.current_time(), policy)
        if count is None:
            failure = RestartIntensityExceeded(
                parent.path or "/", policy.max_restarts, policy.within
            )
            failure.__cause__ = outcome.exception
            parent.kill(failure)
            return NO_RESTART
        cell.mark_restarting()
        held = await _stop_group(parent, cell, policy.strategy)
        if policy.backoff is not None:
            await cell.pause(policy.backoff.delay(count))
        if _parent_gone(parent) or cell.stop_kind is Status.STOPPED or cell.kill_reason is not None:
            for sibling in held:
                sibling.request_stop()
            return NO_RESTART
        for sibling in held:  # start order
            assert sibling.hold is not None
            sibling.hold.release(outcome.exception)
        return outcome.exception


async def _stop_group(parent: Cell, cell: Cell, strategy: Strategy) -> list[Cell]:
    """Stop the siblings that restart with ``cell`` (reverse start order); return the ones
    to restart, in start order. Temporary siblings are stopped for good."""
    if strategy is Strategy.ONE_FOR_ONE or not parent.children:
        return []
    siblings = list(parent.children)
    if strategy is Strategy.REST_FOR_ONE:
        siblings = siblings[siblings.index(cell) + 1 :] if cell in siblings else []
    held: list[Cell] = []
    for sibling in reversed(siblings):
        if sibling is cell or sibling.terminal or sibling.in_exit or sibling.hold is not None:
            continue
        if sibling.restart is Restart.TEMPORARY:
            await sibling.stop(None)
            continue
        hold = sibling.hold_for_restart()
        with trio.move_on_after(sibling.grace):
            await hold.stopped.wait()
        if not hold.stopped.is_set():
            sibling.cancel_hard(stopping=False)
            await hold.stopped.wait()
        held.append(sibling)
    held.reverse()
    return held
