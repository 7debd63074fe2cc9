"""The cell: one actor's state across restarts, and every change ever made to that state.

An ``ActorRef`` points at a cell; the cell outlives each *incarnation* (one instance of the
actor class, from ``started()`` to ``stopping()``), so refs, paths and queued messages
survive restarts.

Only this module assigns a cell's fields. The other modules drive a cell through the
methods below: the task that runs it (``_lifecycle``), restart decisions (``_restart``),
spawning (``_spawn``), refs, contexts and the system. So every state transition can be read
in one file, and the modules that use cells import this one, never each other in a circle.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from ._errors import ActorDead, LinkedCrash, SystemClosed
from ._events import ActorEvent, EventKind
from ._mailbox import AskSlot, Mailbox
from ._timer import cancel as cancel_timer
from ._types import Outcome, Restart, Status, Supervision, Terminated

if TYPE_CHECKING:
    from ._actor import Actor, Context
    from ._ref import ActorRef
    from ._system import ActorSystem

#: Returned by restart decisions when the cell must not start another incarnation.
NO_RESTART: Any = object()
#: Returned by :meth:`Cell.await_resume` when a held cell was stopped instead of resumed.
STOPPED: Any = object()
#: The outcome of every requested stop (outcomes are frozen values, so one serves all).
STOPPED_OUTCOME = Outcome(Status.STOPPED)


class Hold:
    """Set on a sibling that a group restart (one_for_all / rest_for_one) stops and restarts."""

    __slots__ = ("stopped", "resume", "reason")

    def __init__(self) -> None:
        self.stopped = trio.Event()
        self.resume = trio.Event()
        self.reason: BaseException | None = None

    def release(self, reason: BaseException | None) -> None:
        """Let the held sibling start its next incarnation, restarted for ``reason``."""
        self.reason = reason
        self.resume.set()


class RestartWindow:
    """A parent's restart intensity: when its children restarted lately, and the lock that
    serialises its restart decisions (they run in the exiting children's tasks)."""

    __slots__ = ("lock", "stamps")

    def __init__(self) -> None:
        self.lock = trio.Lock()
        self.stamps: deque[float] = deque()

    def admit(self, now: float, policy: Supervision) -> int | None:
        """Record a restart at ``now`` and return how many fell in the window, or ``None``
        (nothing recorded) when one more would exceed ``policy.max_restarts``."""
        stamps = self.stamps
        while stamps and stamps[0] <= now - policy.within:
            stamps.popleft()
        if len(stamps) >= policy.max_restarts:
            return None
        stamps.append(now)
        return len(stamps)


class Cell:
    __slots__ = (
        "system", "parent", "path", "factory", "args", "restart", "grace",
        "mailbox", "status", "outcome", "restarts", "instance", "task", "ref", "context",
        "scope", "in_loop", "wait_scope", "closing", "stop_kind", "kill_reason", "hard", "hold",
        "in_exit", "children", "sysq", "watchers", "watching", "links", "bg", "bg_done",
        "done", "running", "window", "counter", "hook", "failure", "reason",
    )  # fmt: skip

    def __init__(
        self,
        system: ActorSystem,
        parent: Cell | None,
        path: str,
        factory: Any,
        args: tuple[Any, ...],
        restart: Restart,
        grace: float,
        mailbox: Mailbox | None,
    ) -> None:
        self.system = system
        self.parent = parent
        self.path = path  # ends with the name (the name itself is not stored: memory)
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
        self.ref: ActorRef = None  # type: ignore[assignment]  # set by attach()
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
        #: The live children in start order (a dict used as an ordered set).
        self.children: dict[Cell, None] | None = None
        self.sysq: list[Any] | None = None
        self.watchers: set[Cell] | None = None
        self.watching: set[Cell] | None = None
        self.links: set[Cell] | None = None
        self.bg: set[trio.CancelScope] | None = None
        self.bg_done: trio.Event | None = None
        self.done: trio.Event | None = None
        self.running: trio.Event | None = None
        self.window: RestartWindow | None = None  # restart intensity of this cell's children
        self.counter = 0
        self.hook: Callable[[], Awaitable[None]] | None = None  # the instance's stopping()
        self.failure: Exception | None = None  # what ended the current incarnation's loop
        self.reason: Any = NO_RESTART  # why the next incarnation starts (its restarted())

    @classmethod
    def root(cls, system: ActorSystem) -> Cell:
        """The system's own cell: the parent of top-level actors. It has no task."""
        root = cls(system, None, "", None, (), Restart.PERMANENT, 0.0, None)
        root.status = Status.RUNNING
        return root

    # -- small queries -------------------------------------------------------------------
    @property
    def name(self) -> str:
        """Unique among siblings: the last component of the path."""
        return self.path.rpartition("/")[2]

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

    # -- the tree -------------------------------------------------------------------------
    def next_child_name(self, factory: Any) -> str:
        """A default child name, unique under this cell: ``<class>-<n>``."""
        self.counter += 1
        base = getattr(factory, "__name__", None) or type(factory).__name__
        return f"{base.lower()}-{self.counter}"

    def attach(self, ref: ActorRef) -> None:
        """Give a new cell its ref and enter it in the registry and its parent's children."""
        self.ref = ref
        self.system._registry[self.path] = self
        parent = self.parent
        assert parent is not None
        if parent.children is None:
            parent.children = {}
        parent.children[self] = None

    def close(self) -> None:
        """Accept no new children (the system's root, when the system shuts down)."""
        self.closing = True

    async def stop_children(self) -> None:
        """Stop the children one at a time, last started first, each within its grace."""
        children = self.children
        while children:
            child = next(reversed(children))
            if child.idle:
                child._stop_idle()
            else:
                await child.stop(None)
            children.pop(child, None)  # finish() normally removes it

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
            for child in tuple(self.children):
                child.cancel_hard()

    async def wait_done(self) -> None:
        if self.outcome is None:
            if self.done is None:
                self.done = trio.Event()
            await self.done.wait()
        else:
            await trio.lowlevel.checkpoint()

    async def wait_running(self) -> None:
        """Wait until ``started()`` has returned; ``ActorDead`` if the actor ends first."""
        while True:
            if self.outcome is not None:
                await trio.lowlevel.checkpoint()
                raise ActorDead(self.path, self.outcome)
            if self.status is Status.RUNNING:
                await trio.lowlevel.checkpoint()
                return
            if self.running is None:
                self.running = trio.Event()
            await self.running.wait()

    @property
    def idle(self) -> bool:
        """Would a stop run nothing in this actor's task? True when the task is parked in
        its message loop (so no message, notice, stop or kill is pending: each of those
        wakes it) and the incarnation has no children, no background work and no
        ``stopping()`` hook."""
        mailbox = self.mailbox
        return (
            self.outcome is None
            and mailbox is not None
            and mailbox.parked
            and not self.children
            and not self.bg
            and self.hook is None
        )

    def _stop_idle(self) -> None:
        """Stop an :attr:`idle` actor here and now, in the stopper's task: its stop sequence
        is empty, so there is nothing to wait for. This makes the cell terminal at once (in
        order, when siblings are stopped one by one) without a scheduler round trip per
        actor; the actor's task is woken, sees it was stopped and returns, running no actor
        code."""
        self.stop_kind = Status.STOPPED
        self.end_loop()
        self.finish(STOPPED_OUTCOME)
        assert self.mailbox is not None
        self.mailbox.wake()

    async def stop(self, grace: float | None) -> Outcome:
        """Request a stop, wait up to ``grace`` (default: the actor's own), then cancel."""
        if self.idle:
            self._stop_idle()
            await trio.lowlevel.checkpoint()
        elif self.outcome is None:
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

    # -- monitors, links and background work (for Context) ---------------------------------
    def watch(self, target: Cell) -> None:
        if target.outcome is not None:
            self.post_system(Terminated(target.ref, target.outcome))
            return
        if target.watchers is None:
            target.watchers = set()
        target.watchers.add(self)
        if self.watching is None:
            self.watching = set()
        self.watching.add(target)

    def unwatch(self, target: Cell) -> None:
        if target.watchers:
            target.watchers.discard(self)
        if self.watching:
            self.watching.discard(target)

    def link(self, target: Cell) -> None:
        if target is self:
            return
        if target.outcome is not None:
            if target.outcome.status is Status.ERRORED:
                failure = LinkedCrash(target.path)
                failure.__cause__ = target.outcome.exception
                self.kill(failure)
            return
        for a, b in ((self, target), (target, self)):
            if a.links is None:
                a.links = set()
            a.links.add(b)

    def unlink(self, target: Cell) -> None:
        if self.links:
            self.links.discard(target)
        if target.links:
            target.links.discard(self)

    def start_background(
        self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], name: str | None
    ) -> None:
        """Run ``fn(*args)`` in the system nursery, owned by the current incarnation."""
        if self.closing or self.terminal or not self.in_loop:
            raise SystemClosed(f"{self.path} is stopping; it cannot start background work")
        scope = trio.CancelScope(shield=True)  # only the actor's end cancels it
        if self.bg is None:
            self.bg = set()
        self.bg.add(scope)
        label = name or f"{self.path}:{getattr(fn, '__qualname__', 'task')}"
        self.system._nursery.start_soon(self._run_background, scope, fn, args, name=label)

    async def _run_background(
        self, scope: trio.CancelScope, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]
    ) -> None:
        try:
            with scope:
                await fn(*args)
        except Exception as exc:
            self.kill(exc)
        finally:
            if self.bg is not None:
                self.bg.discard(scope)
                if not self.bg and self.bg_done is not None:
                    self.bg_done.set()

    # -- the cell's own task (driven by _lifecycle) ---------------------------------------------
    def bind(self, task: trio.lowlevel.Task, context: Context) -> None:
        """Record the task that runs this cell, and the context its instances get."""
        self.task = task
        self.context = context

    def begin_incarnation(self) -> trio.CancelScope:
        """Enter PENDING_INIT; return the shielded scope the incarnation's message loop runs
        in (already cancelled if a kill or hard cancel came first)."""
        self.status = Status.PENDING_INIT
        self.closing = False
        scope = self.scope = trio.CancelScope(shield=True)
        self.in_loop = True
        if self.hard or self.kill_reason is not None:
            scope.cancel()
        return scope

    def failed(self, error: Exception) -> None:
        """The incarnation's start or message loop raised ``error``: it ends with it."""
        self.failure = error

    def take_failure(self) -> Exception | None:
        failure, self.failure = self.failure, None
        return failure

    def take_restart_reason(self) -> Any:
        """Why this incarnation starts (:data:`NO_RESTART` for the first), consumed so the
        cell does not keep the exception alive."""
        reason, self.reason = self.reason, NO_RESTART
        return reason

    def adopt(self, instance: Actor, hook: Callable[[], Awaitable[None]] | None) -> None:
        """Make ``instance`` the current incarnation; ``hook`` is its ``stopping()`` if it
        has one of its own."""
        self.instance = instance
        self.hook = hook

    def mark_running(self) -> None:
        """``started()`` returned: wake ``wait_running`` callers and report STARTED."""
        self.status = Status.RUNNING
        if self.running is not None:
            self.running.set()
            self.running = None
        self.emit(EventKind.STARTED)

    def take_notices(self) -> list[Any] | None:
        """The queued system notices (``Terminated``), removed from the queue."""
        notices, self.sysq = self.sysq, None
        return notices

    def end_loop(self) -> None:
        """The message loop is over: no new children or background work from now on."""
        self.in_loop = False
        self.closing = True
        self.scope = None

    async def stop_sequence(
        self, stopping: Callable[[], Awaitable[None]] | None
    ) -> Exception | None:
        """Stop the children (reverse start order), then run ``stopping`` if given, in a scope
        a hard cancel can cancel. Returns what ``stopping`` raised."""
        error: Exception | None = None
        if (self.children or stopping is not None) and not self.hard:
            # Only pay for a second cancel scope when there is a stop sequence to bound.
            with trio.CancelScope(shield=True) as self.scope:
                if self.children:
                    await self.stop_children()
                if stopping is not None:
                    try:
                        await stopping()
                    except Exception as exc:
                        error = exc
            self.scope = None
        return error

    async def reap(self) -> None:
        """Cancel background tasks, and make sure no child survives (shielded wait)."""
        if self.bg:
            for scope in self.bg:
                scope.cancel()
        children = self.children
        if children:
            for child in children:
                child.cancel_hard()
        if self.bg or children:
            with trio.CancelScope(shield=True):
                while children:
                    child = next(iter(children))
                    await child.wait_done()
                    children.pop(child, None)
                if self.bg:
                    self.bg_done = trio.Event()
                    await self.bg_done.wait()
                self.bg_done = None

    def end_incarnation(self, error: BaseException | None) -> Outcome | None:
        """Close the incarnation that ended with ``error`` (``None``: it ended normally) and
        return its outcome, or ``None`` when a group restart stopped it (held)."""
        self.instance = None
        self.hook = None
        if error is None and self.kill_reason is not None:
            error = self.kill_reason
        self.kill_reason = None  # consumed: a later kill (e.g. during backoff) is a new one
        if self.hold is not None:
            if error is not None:
                self.emit(EventKind.CRASHED, error)
            return None
        if error is not None:
            self.crashed(error)
            return Outcome(Status.ERRORED, error)
        if self.stop_kind is Status.COMPLETED:
            return Outcome(Status.COMPLETED)
        return STOPPED_OUTCOME

    def requested_outcome(self) -> Outcome:
        """The outcome of a held cell that was stopped (or killed) instead of resumed."""
        if self.kill_reason is not None:
            return Outcome(Status.ERRORED, self.kill_reason)
        return STOPPED_OUTCOME

    def set_exiting(self, exiting: bool) -> None:
        """Mark the cell as deciding its own restart, so group restarts leave it alone."""
        self.in_exit = exiting

    async def await_resume(self) -> Any:
        """Held by a group restart: wait for the go-ahead. Returns the restart reason, or
        :data:`STOPPED` if the cell was stopped or killed meanwhile."""
        hold = self.hold
        assert hold is not None
        hold.stopped.set()
        if self.stop_kind is None and self.kill_reason is None:
            with trio.CancelScope(shield=True) as self.wait_scope:
                await hold.resume.wait()
            self.wait_scope = None
        if self.stop_kind is not None or self.kill_reason is not None or not hold.resume.is_set():
            return STOPPED
        return hold.reason

    def prepare_restart(self, reason: Any) -> None:
        self.reason = reason
        self.restarts += 1
        self.stop_kind = None
        self.kill_reason = None
        self.hard = False
        self.hold = None
        self.window = None
        self.status = Status.PENDING_INIT
        self.emit(EventKind.RESTARTED, reason if isinstance(reason, BaseException) else None)

    # -- restart decisions (driven by _restart) ------------------------------------------------
    def restart_window(self) -> RestartWindow:
        if self.window is None:
            self.window = RestartWindow()
        return self.window

    def mark_restarting(self) -> None:
        """A restart was granted (maybe after a backoff): back to PENDING_INIT."""
        self.status = Status.PENDING_INIT

    async def pause(self, delay: float) -> None:
        """Sleep ``delay`` seconds (a restart backoff); a stop or kill ends the wait early."""
        with trio.CancelScope(shield=True) as self.wait_scope:
            await trio.sleep(delay)
        self.wait_scope = None

    def hold_for_restart(self) -> Hold:
        """Ask this cell to end its incarnation for a group restart; see :class:`Hold`."""
        hold = self.hold = Hold()
        if self.mailbox is not None:
            self.mailbox.wake()
        return hold

    # -- termination -----------------------------------------------------------------------
    def finish(self, outcome: Outcome) -> None:
        """Make the cell terminal: unregister, fail pending asks, notify watchers."""
        if self.outcome is not None:
            return
        self.outcome = outcome
        self.status = outcome.status
        self.instance = None
        self.hook = None
        self.failure = None  # (a dead cell keeps no exception, nor its traceback, alive)
        self.reason = NO_RESTART
        system = self.system
        if system._registry.get(self.path) is self:
            del system._registry[self.path]
        parent = self.parent
        if parent is not None and parent.children:
            parent.children.pop(self, None)
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
