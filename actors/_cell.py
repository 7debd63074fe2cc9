"""The cell: one actor's state across restarts, and the signals others send it.

An ``ActorRef`` points at a cell; the cell outlives each *incarnation* (one instance of the
actor class, from ``started()`` to ``stopping()``), so refs, paths and queued messages
survive restarts. The task that runs a cell lives in ``_lifecycle.py``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import trio

from ._errors import ActorDead, LinkedCrash
from ._events import ActorEvent, EventKind
from ._mailbox import AskSlot, Mailbox
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
