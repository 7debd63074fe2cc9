"""The cell: one actor's state across restarts, and the task that runs it.

An ``ActorRef`` points at a cell; the cell outlives each *incarnation* (one instance of the
actor class, from ``started()`` to ``stopping()``), so refs, paths and queued messages
survive restarts.

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

import math
from typing import TYPE_CHECKING, Any

import trio
from trio.lowlevel import current_task

from ._errors import ActorDead, LinkedCrash, NameTaken, SystemClosed, UnhandledMessage
from ._events import ActorEvent, EventKind
from ._mailbox import EMPTY, AskSlot, Mailbox
from ._timer import cancel as cancel_timer
from ._types import Outcome, Restart, Status, Supervision, Terminated

if TYPE_CHECKING:
    from ._actor import Actor, Context
    from ._ref import ActorRef
    from ._system import ActorSystem

#: Messages handled before the loop takes a checkpoint, so one busy actor cannot starve others.
BATCH = 64

_NO_RESTART: Any = object()
_STOPPED: Any = object()


class Hold:
    """Set on a sibling that a group restart (one_for_all / rest_for_one) stops and restarts."""

    __slots__ = ("stopped", "resume", "reason")

    def __init__(self) -> None:
        self.stopped = trio.Event()
        self.resume = trio.Event()
        self.reason: BaseException | None = None


class Cell:
    __slots__ = (
        "system", "parent", "name", "path", "factory", "args", "restart", "grace",
        "mailbox", "status", "outcome", "restarts", "instance", "task", "ref", "context",
        "scope", "in_loop", "wait_scope", "closing", "stop_kind", "kill_reason", "hard", "hold",
        "in_exit", "children", "sysq", "watchers", "watching", "links", "bg", "bg_done",
        "done", "running", "sup", "counter",
    )  # fmt: skip

    def __init__(
        self,
        system: ActorSystem,
        parent: Cell | None,
        name: str,
        path: str,
        factory: Any,
        args: tuple[Any, ...],
        restart: Restart,
        grace: float,
        mailbox: Mailbox | None,
    ) -> None:
        self.system = system
        self.parent = parent
        self.name = name
        self.path = path
        self.factory = factory
        self.args = args
        self.restart = restart
        self.grace = grace
        self.mailbox = mailbox
        self.status = Status.PENDING_INIT
        self.outcome: Outcome | None = None
        self.restarts = 0
        self.instance: Actor | None = None
        self.task: trio.lowlevel.Task | None = None
        self.ref: ActorRef = None  # type: ignore[assignment]  # set by the spawner
        self.context: Context | None = None
        self.scope: trio.CancelScope | None = None
        self.in_loop = False
        self.wait_scope: trio.CancelScope | None = None
        self.closing = False  # no new children: the incarnation is ending
        self.stop_kind: Status | None = None  # STOPPED (requested) or COMPLETED (self-stop)
        self.kill_reason: BaseException | None = None
        self.hard = False
        self.hold: Hold | None = None
        self.in_exit = False
        self.children: dict[str, Cell] | None = None
        self.sysq: list[Any] | None = None
        self.watchers: set[Cell] | None = None
        self.watching: set[Cell] | None = None
        self.links: set[Cell] | None = None
        self.bg: set[trio.CancelScope] | None = None
        self.bg_done: trio.Event | None = None
        self.done: trio.Event | None = None
        self.running: trio.Event | None = None
        self.sup: Any = None  # supervision state of this actor's children (lazy)
        self.counter = 0

    # -- small queries -------------------------------------------------------------------
    @property
    def terminal(self) -> bool:
        return self.outcome is not None

    def supervision(self) -> Supervision:
        if self.parent is None:
            return self.system.supervision
        return getattr(self.instance, "supervision", None) or Supervision()

    def emit(self, kind: EventKind, reason: BaseException | None = None) -> None:
        hub = self.system.hub
        if hub:
            factory = self.factory
            hub.publish(
                ActorEvent(
                    kind=kind,
                    path=self.path,
                    ref=self.ref,
                    actor_type=getattr(factory, "__qualname__", type(factory).__qualname__),
                    status=self.outcome.status if self.outcome else self.status,
                    reason=reason,
                    restarts=self.restarts,
                    time=trio.current_time(),
                )
            )

    # -- signals from outside --------------------------------------------------------------
    def post_system(self, message: object) -> None:
        """Queue a notice (``Terminated``) ahead of user messages; it is never dropped."""
        if self.terminal or self.mailbox is None:
            return
        if self.sysq is None:
            self.sysq = []
        self.sysq.append(message)
        self.mailbox.wake()

    def request_stop(self, kind: Status = Status.STOPPED) -> None:
        """Ask the actor to finish its current message and stop (cooperative)."""
        if self.terminal:
            return
        if self.stop_kind is None:
            self.stop_kind = kind
        if self.mailbox is not None:
            self.mailbox.wake()
        if self.wait_scope is not None:
            self.wait_scope.cancel()

    def kill(self, reason: BaseException) -> None:
        """Fail the actor now with ``reason``: its current message is cancelled, then it runs
        its normal stop sequence (children, ``stopping()``) and ends ``ERRORED``."""
        if self.terminal:
            return
        if self.parent is None:
            self.system._escaped(reason)
            return
        if self.kill_reason is None:
            self.kill_reason = reason
        if self.in_loop and self.scope is not None:
            self.scope.cancel()
        if self.wait_scope is not None:
            self.wait_scope.cancel()
        if self.mailbox is not None:
            self.mailbox.wake()

    def cancel_hard(self, *, stopping: bool = True) -> None:
        """Cancel this actor and its whole subtree now (grace expired). ``stopping=False`` is
        used by group restarts: the actor's incarnation ends but the cell lives on."""
        if self.terminal:
            return
        self.hard = True
        if stopping and self.stop_kind is None:
            self.stop_kind = Status.STOPPED
        for scope in (self.scope, self.wait_scope):
            if scope is not None:
                scope.cancel()
        if self.bg:
            for scope in self.bg:
                scope.cancel()
        if self.children:
            for child in tuple(self.children.values()):
                child.cancel_hard()

    async def wait_done(self) -> None:
        if self.outcome is None:
            if self.done is None:
                self.done = trio.Event()
            await self.done.wait()
        else:
            await trio.lowlevel.checkpoint()

    async def stop(self, grace: float | None) -> Outcome:
        """Request a stop, wait up to ``grace`` (default: the actor's own), then cancel."""
        if self.outcome is None:
            self.request_stop()
            delay = self.grace if grace is None else grace
            entry = None
            if delay != math.inf:
                entry = self.system._timer.call_after(delay, _grace_expired, self)
            try:
                await self.wait_done()
            finally:
                if entry is not None:
                    cancel_timer(entry)
        else:
            await trio.lowlevel.checkpoint()
        assert self.outcome is not None
        return self.outcome

    # -- termination -----------------------------------------------------------------------
    def finish(self, outcome: Outcome) -> None:
        """Make the cell terminal: unregister, fail pending asks, notify watchers."""
        if self.outcome is not None:
            return
        self.outcome = outcome
        self.status = outcome.status
        self.instance = None
        system = self.system
        if system._registry.get(self.path) is self:
            del system._registry[self.path]
        parent = self.parent
        if parent is not None and parent.children and parent.children.get(self.name) is self:
            del parent.children[self.name]
        if self.mailbox is not None:
            dead: ActorDead | None = None
            for item in self.mailbox.close():
                if type(item) is AskSlot:
                    dead = dead or ActorDead(self.path, outcome)
                    item.fail(dead)
        self.sysq = None
        if self.watching:
            for target in self.watching:
                if target.watchers:
                    target.watchers.discard(self)
            self.watching = None
        if self.watchers:
            notice = Terminated(self.ref, outcome)
            for watcher in self.watchers:
                if watcher.watching:
                    watcher.watching.discard(self)
                watcher.post_system(notice)
            self.watchers = None
        if self.links:
            for other in self.links:
                if other.links:
                    other.links.discard(self)
            self.links = None
        self.emit(EventKind.STOPPED, outcome.exception)
        if self.done is not None:
            self.done.set()
        if self.running is not None:
            self.running.set()

    def crashed(self, error: BaseException) -> None:
        """An incarnation raised: report it and fire (and consume) its links."""
        self.emit(EventKind.CRASHED, error)
        links, self.links = self.links, None
        if links:
            for other in links:
                if other.links:
                    other.links.discard(self)
                failure = LinkedCrash(self.path)
                failure.__cause__ = error
                other.kill(failure)


def _grace_expired(cell: Cell) -> None:
    cell.cancel_hard()


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
