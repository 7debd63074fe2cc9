"""The ``Actor`` base class and the ``Context`` an actor uses to act on the system."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar

from ._errors import UnhandledMessage
from ._spawn import spawn
from ._types import Status, Supervision

if TYPE_CHECKING:
    from ._cell import Cell
    from ._ref import ActorRef
    from ._system import ActorSystem


class Actor:
    """Subclass this and define ``async def receive(self, msg)``.

    State lives on the instance; the instance is created afresh for every incarnation
    (first start and each restart), so a restart begins from clean state. Messages are
    handled one at a time, in arrival order; ``receive``'s return value is the reply to an
    ``ask`` (and ignored for a ``tell``). An exception escaping ``receive`` is a crash: the
    actor's parent decides whether to restart it. For typed dispatch, decorate ``receive``
    with ``functools.singledispatchmethod`` and register one handler per message type.

    Class attributes:
      ``supervision``: how this actor supervises the children it spawns (an instance may set
      its own: ``Supervisor`` does, from its arguments).
      ``crash_on_ask_error``: if False, an exception raised while handling an *ask* is only
      delivered to the asker and the actor keeps running (the default, True, also crashes
      the actor, as an Erlang ``gen_server:call`` does). ``UnhandledMessage`` from an ask
      never crashes the actor: a request it does not understand is the asker's error.
    """

    supervision: Supervision = Supervision()
    crash_on_ask_error: ClassVar[bool] = True
    _context: Context

    @property
    def context(self) -> Context:
        """This actor's handle on the system: its ref, path, children, watches and links.
        Available from ``__init__`` on when the actor class itself is the spawn factory."""
        return self._context

    async def started(self) -> None:
        """Runs before the first message of every incarnation. Status is ``PENDING_INIT``
        until it returns; messages sent meanwhile wait in the mailbox. Raising is a crash."""

    async def receive(self, message: Any) -> Any:
        """Handle one message; the return value answers an ``ask``. The default raises
        :class:`UnhandledMessage`."""
        raise UnhandledMessage(self._context.path, message)

    async def stopping(self) -> None:
        """Runs when an incarnation ends (stopped, completed, crashed or restarting), after
        its children have stopped and before its background tasks are cancelled. Skipped if
        the grace period ran out (the actor is then cancelled)."""

    async def restarted(self, reason: BaseException | None) -> None:
        """Runs on the fresh instance before ``started()`` when this is a restart. ``reason``
        is the crash that caused it (``None`` after a normal completion of a PERMANENT
        child)."""


class Context:
    """What an actor can do to the system. One per actor, stable across restarts."""

    __slots__ = ("_cell",)

    def __init__(self, cell: Cell) -> None:
        self._cell = cell

    @property
    def self_ref(self) -> ActorRef:
        return self._cell.ref

    @property
    def name(self) -> str:
        return self._cell.name

    @property
    def path(self) -> str:
        return self._cell.path

    @property
    def system(self) -> ActorSystem:
        return self._cell.system

    @property
    def parent(self) -> ActorRef | None:
        """The parent's ref, or ``None`` for a top-level actor (its parent is the system)."""
        parent = self._cell.parent
        return None if parent is None or parent.parent is None else parent.ref

    @property
    def children(self) -> tuple[ActorRef, ...]:
        """Live children in start order."""
        children = self._cell.children
        return tuple(c.ref for c in children) if children else ()

    @property
    def restarts(self) -> int:
        """How many times this actor has been restarted."""
        return self._cell.restarts

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
        """Spawn a child of this actor; same arguments as :meth:`ActorSystem.spawn`.

        The child is stopped before this actor's ``stopping()`` runs, and when this actor
        restarts. Raises ``SystemClosed`` if this actor is already stopping."""
        return spawn(self._cell, factory, args, name, mailbox_size, overflow, restart, grace)

    def watch(self, ref: ActorRef) -> None:
        """Deliver ``Terminated(ref, outcome)`` to this actor's ``receive`` when ``ref``
        terminates for good (restarts are invisible). At once if it is already dead."""
        self._cell.watch(ref._cell)

    def unwatch(self, ref: ActorRef) -> None:
        self._cell.unwatch(ref._cell)

    def link(self, ref: ActorRef) -> None:
        """Tie this actor's fate to ``ref``'s, both ways: when either crashes, the other is
        failed with ``LinkedCrash`` (current message cancelled, then its stop sequence).
        Normal stops and completions do not propagate. A link fires once and is then gone
        (re-link after a restart if needed). Linking to a crashed actor fails this one now."""
        self._cell.link(ref._cell)

    def unlink(self, ref: ActorRef) -> None:
        self._cell.unlink(ref._cell)

    def start_soon(
        self, async_fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None
    ) -> None:
        """Run long-lived work owned by this incarnation (a subprocess, a reader loop).

        It is cancelled when the incarnation ends (after ``stopping()``), and if it raises,
        the actor crashes with that exception. Raises ``SystemClosed`` once the actor is
        stopping."""
        self._cell.start_background(async_fn, args, name)

    def stop(self) -> None:
        """Stop this actor after the current message: children stop, ``stopping()`` runs and
        the final status is ``COMPLETED`` (a normal end, restarted only if PERMANENT)."""
        self._cell.request_stop(Status.COMPLETED)
