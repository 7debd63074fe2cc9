"""Spawning actors and the one task that runs each of them, incarnation after incarnation.

Task layout (why it is flat): every actor is ONE task in the system's nursery, with its own
``CancelScope`` (trio has no per-task cancel). No actor owns a nursery: a nursery per actor
nearly doubles its memory, and the tree is kept as data (``children``) instead. That tree
drives shutdown: an incarnation ends by (1) leaving its message loop, (2) stopping its
children in reverse start order, (3) running ``stopping()``, (4) cancelling its background
tasks. A hard cancel (grace expired) cancels the whole subtree at once and then waits for
it, shielded, so no task outlives its actor.

Every scope an actor runs in is *shielded*: only this library cancels actors. A
cancellation from outside the system (the block around ``open_system`` is cancelled) does
not tear actors down mid-message; it cancels the block's body, and the system's shutdown
then stops every actor in order, each within its grace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio
from trio.lowlevel import current_task

from ._cell import _NO_RESTART, _STOPPED, BATCH, Cell
from ._errors import ActorDead, NameTaken, SystemClosed, UnhandledMessage
from ._events import EventKind
from ._mailbox import EMPTY, AskSlot, Mailbox
from ._types import Outcome, Restart, Status

if TYPE_CHECKING:
    from ._actor import Actor
    from ._ref import ActorRef


# -- spawning ---------------------------------------------------------------------------------
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
    from ._ref import ActorRef

    system = parent.system
    if system._closing or parent.closing or parent.terminal:
        raise SystemClosed(
            f"cannot spawn under {parent.path or '/'}: it is stopping and accepts no new actors"
        )
    if name is None:
        parent.counter += 1
        base = getattr(factory, "__name__", None) or type(factory).__name__
        name = f"{base.lower()}-{parent.counter}"
    elif not name or "/" in name:
        raise ValueError(f"actor name must be non-empty and contain no '/': {name!r}")
    path = f"{parent.path}/{name}"
    if path in system._registry:
        raise NameTaken(path)
    cell = Cell(
        system, parent, name, path, factory, args, restart, grace, Mailbox(mailbox_size, overflow)
    )
    cell.ref = ActorRef(cell)
    system._registry[path] = cell
    if parent.children is None:
        parent.children = {}
    parent.children[name] = cell
    system._nursery.start_soon(cell_main, cell, name=path)
    cell.emit(EventKind.SPAWNED)
    return cell


# -- the task -----------------------------------------------------------------------------------
async def cell_main(cell: Cell) -> None:
    from ._supervisor import supervise_exit

    cell.task = current_task()
    outcome = Outcome(Status.STOPPED)
    reason: Any = _NO_RESTART
    try:
        while True:
            result = await _incarnation(cell, reason)
            if result is None:  # stopped by a group restart: wait for the go-ahead
                reason = await _await_resume(cell)
                if reason is _STOPPED:
                    outcome = _requested_outcome(cell)
                    break
            else:
                outcome = result
                if result.status is Status.STOPPED:
                    break
                cell.in_exit = True
                try:
                    reason = await supervise_exit(cell, result)
                finally:
                    cell.in_exit = False
                if reason is _NO_RESTART:
                    break
            _prepare_restart(cell, reason)
    finally:
        cell.finish(outcome)


def _requested_outcome(cell: Cell) -> Outcome:
    if cell.kill_reason is not None:
        return Outcome(Status.ERRORED, cell.kill_reason)
    return Outcome(Status.STOPPED)


def _prepare_restart(cell: Cell, reason: Any) -> None:
    cell.restarts += 1
    cell.stop_kind = None
    cell.kill_reason = None
    cell.hard = False
    cell.hold = None
    cell.sup = None
    cell.status = Status.PENDING_INIT
    cell.emit(EventKind.RESTARTED, reason if isinstance(reason, BaseException) else None)


async def _await_resume(cell: Cell) -> Any:
    hold = cell.hold
    assert hold is not None
    hold.stopped.set()
    if cell.stop_kind is None and cell.kill_reason is None:
        with trio.CancelScope(shield=True) as cell.wait_scope:
            await hold.resume.wait()
        cell.wait_scope = None
    if cell.stop_kind is not None or cell.kill_reason is not None or not hold.resume.is_set():
        return _STOPPED
    return hold.reason


def _base_stopping() -> Any:
    from ._actor import Actor

    return Actor.stopping


def _instantiate(cell: Cell) -> Actor:
    from ._actor import Actor, Context

    if cell.context is None:
        cell.context = Context(cell)
    factory = cell.factory
    if isinstance(factory, type) and issubclass(factory, Actor):
        inst = factory.__new__(factory)
        inst._context = cell.context
        inst.__init__(*cell.args)  # type: ignore[misc]
    else:
        inst = factory(*cell.args)
        if not isinstance(inst, Actor):
            raise TypeError(
                f"{cell.path}: the factory returned {type(inst).__qualname__}, not an actors.Actor"
            )
        inst._context = cell.context
    return inst


async def _incarnation(cell: Cell, reason: Any) -> Outcome | None:
    """Run one instance from construction to the end of its stop sequence.

    Returns ``None`` when a group restart stopped it (the caller waits to be resumed)."""
    cell.status = Status.PENDING_INIT
    cell.closing = False
    inst: Actor | None = None
    error: BaseException | None = None
    loop_scope = cell.scope = trio.CancelScope(shield=True)
    cell.in_loop = True
    if cell.hard or cell.kill_reason is not None:
        loop_scope.cancel()
    with loop_scope:
        if cell.stop_kind is None and cell.hold is None:
            try:
                inst = cell.instance = _instantiate(cell)
                if reason is not _NO_RESTART:
                    await inst.restarted(reason)
                await inst.started()
                cell.status = Status.RUNNING
                if cell.running is not None:
                    cell.running.set()
                    cell.running = None
                cell.emit(EventKind.STARTED)
                await _loop(cell, inst)
            except Exception as exc:
                error = exc
    cell.in_loop = False
    cell.closing = True
    cell.scope = None
    has_hook = inst is not None and type(inst).stopping is not _base_stopping()
    if (cell.children or has_hook) and not cell.hard:
        # Only pay for a second cancel scope when there is a stop sequence to bound.
        with trio.CancelScope(shield=True) as cell.scope:
            if cell.children:
                await _stop_children(cell)
            if has_hook:
                assert inst is not None
                try:
                    await inst.stopping()
                except Exception as exc:
                    if error is None:
                        error = exc
        cell.scope = None
    await _reap(cell)
    cell.instance = None
    if error is None and cell.kill_reason is not None:
        error = cell.kill_reason
    cell.kill_reason = None  # consumed: a later kill (e.g. during backoff) is a new one
    if cell.hold is not None:
        if error is not None:
            cell.emit(EventKind.CRASHED, error)
        return None
    if error is not None:
        cell.crashed(error)
        return Outcome(Status.ERRORED, error)
    return Outcome(cell.stop_kind or Status.STOPPED)


async def _loop(cell: Cell, inst: Actor) -> None:
    mailbox = cell.mailbox
    assert mailbox is not None
    receive = inst.receive
    crash_on_ask_error = inst.crash_on_ask_error
    handled = 0
    while True:
        if cell.sysq:
            notices, cell.sysq = cell.sysq, None
            for notice in notices:
                await receive(notice)
        if cell.stop_kind is not None or cell.hold is not None:
            return
        item = mailbox.pop()
        if item is EMPTY:
            handled = 0
            await mailbox.wait()
            continue
        if type(item) is AskSlot:
            if item.task is not None:  # the asker may have given up already
                try:
                    value = await receive(item.message)
                except Exception as exc:
                    item.fail(exc)
                    # An ask the actor does not understand is the asker's error, not a crash.
                    if crash_on_ask_error and not isinstance(exc, UnhandledMessage):
                        raise
                except BaseException:  # cancelled mid-request: the asker must not hang
                    item.fail(ActorDead(cell.path, None))
                    raise
                else:
                    item.reply(value)
        else:
            await receive(item)
        handled += 1
        if handled >= BATCH:
            handled = 0
            await trio.lowlevel.checkpoint()


async def _stop_children(cell: Cell) -> None:
    children = cell.children
    while children:
        child = next(reversed(children.values()))
        await child.stop(None)
        if children.get(child.name) is child:  # finish() normally removes it
            del children[child.name]


async def _reap(cell: Cell) -> None:
    """Cancel background tasks, and make sure no child survives (shielded wait)."""
    if cell.bg:
        for scope in cell.bg:
            scope.cancel()
    if cell.children:
        for child in cell.children.values():
            child.cancel_hard()
    if cell.bg or cell.children:
        with trio.CancelScope(shield=True):
            while cell.children:
                child = next(iter(cell.children.values()))
                await child.wait_done()
                if cell.children.get(child.name) is child:
                    del cell.children[child.name]
            if cell.bg:
                cell.bg_done = trio.Event()
                await cell.bg_done.wait()
            cell.bg_done = None


async def run_background(cell: Cell, scope: trio.CancelScope, fn: Any, args: tuple) -> None:
    try:
        with scope:
            await fn(*args)
    except Exception as exc:
        cell.kill(exc)
    finally:
        if cell.bg is not None:
            cell.bg.discard(scope)
            if not cell.bg and cell.bg_done is not None:
                cell.bg_done.set()


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
    """Shared body of ``ActorSystem.spawn`` and ``Context.spawn``: accept a ChildSpec or a
    factory plus options, fill in defaults, create the cell."""
    from ._types import DEFAULT_GRACE, DEFAULT_MAILBOX_SIZE, ChildSpec, Overflow

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
