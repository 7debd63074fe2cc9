"""Spawning: check the request, create the cell and its ref, and have the system start it.

Shared by ``ActorSystem.spawn`` and ``Context.spawn``. The cell's task is started through
the system (``ActorSystem._start``), which owns the nursery and knows the task's body, so
this module needs nothing from the modules that run actors and ``Context`` can use it
without an import circle.
"""

from __future__ import annotations

from typing import Any

from ._cell import Cell
from ._errors import NameTaken, SystemClosed
from ._events import EventKind
from ._mailbox import Mailbox
from ._ref import ActorRef
from ._types import DEFAULT_GRACE, DEFAULT_MAILBOX_SIZE, ChildSpec, Overflow, Restart


def spawn(
    parent: Cell,
    factory: Any,
    args: tuple[Any, ...],
    name: str | None,
    mailbox_size: int | None,
    overflow: Any,
    restart: Any,
    grace: float | None,
) -> ActorRef:
    """Accept a ChildSpec or a factory plus options, fill in defaults, start the child."""
    if isinstance(factory, ChildSpec):
        given = (name, mailbox_size, overflow, restart, grace)
        if args or any(v is not None for v in given):
            raise TypeError("spawn(spec) takes no other arguments: set them on the ChildSpec")
        spec = factory
        return spawn_cell(
            parent,
            spec.factory,
            spec.args,
            name=spec.name,
            mailbox_size=spec.mailbox_size,
            overflow=spec.overflow,
            restart=spec.restart,
            grace=spec.grace,
        ).ref
    return spawn_cell(
        parent,
        factory,
        args,
        name=name,
        mailbox_size=DEFAULT_MAILBOX_SIZE if mailbox_size is None else mailbox_size,
        overflow=Overflow.WAIT if overflow is None else overflow,
        restart=Restart.TEMPORARY if restart is None else restart,
        grace=DEFAULT_GRACE if grace is None else grace,
    ).ref


def spawn_cell(
    parent: Cell,
    factory: Any,
    args: tuple[Any, ...],
    *,
    name: str | None,
    mailbox_size: int,
    overflow: Any,
    restart: Restart,
    grace: float,
) -> Cell:
    system = parent.system
    if system._closing or parent.closing or parent.terminal:
        raise SystemClosed(
            f"cannot spawn under {parent.path or '/'}: it is stopping and accepts no new actors"
        )
    if name is None:
        name = parent.next_child_name(factory)
    elif not name or "/" in name:
        raise ValueError(f"actor name must be non-empty and contain no '/': {name!r}")
    path = f"{parent.path}/{name}"
    if path in system._registry:
        raise NameTaken(path)
    cell = Cell(
        system, parent, path, factory, args, restart, grace, Mailbox(mailbox_size, overflow)
    )
    cell.attach(ActorRef(cell))
    system._start(cell)
    cell.emit(EventKind.SPAWNED)
    return cell
