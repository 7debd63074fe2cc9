"""Small value types shared by every module: statuses, policies, outcomes, notices.

They are plain enums and frozen attrs classes so they can be compared in tests, logged, and
sent between actors without anyone mutating them.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from ._ref import ActorRef


class Status(enum.Enum):
    """Where an actor is in its life.

    ``PENDING_INIT`` until its ``started()`` hook returns (also while a restart is pending);
    ``RUNNING`` while it takes messages; then exactly one terminal status:
    ``COMPLETED`` (it stopped itself with ``context.stop()``), ``STOPPED`` (someone stopped it:
    ``ref.stop()``, its parent, or the system shutting down) or ``ERRORED`` (it crashed and
    was not restarted).
    """

    PENDING_INIT = "pending_init"
    RUNNING = "running"
    COMPLETED = "completed"
    ERRORED = "errored"
    STOPPED = "stopped"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset({Status.COMPLETED, Status.ERRORED, Status.STOPPED})


class Overflow(enum.Enum):
    """What ``tell`` does when the target's mailbox is full (chosen per actor at spawn).

    ``WAIT``: ``await tell()`` blocks until there is room (backpressure); ``tell_nowait``
    raises ``MailboxFull``. ``RAISE``: both raise ``MailboxFull``. ``DROP``: the message is
    discarded and counted in ``ref.dropped`` (asks still raise ``MailboxFull``).
    """

    WAIT = "wait"
    RAISE = "raise"
    DROP = "drop"


class Restart(enum.Enum):
    """When a parent restarts a child that ended (Erlang/OTP restart types).

    ``PERMANENT``: always, even after it completed normally. ``TRANSIENT``: only after a crash.
    ``TEMPORARY``: never (its crash is still reported: events, watchers, ``join()``).
    A stop someone requested with ``ref.stop()`` is never followed by a restart.
    """

    PERMANENT = "permanent"
    TRANSIENT = "transient"
    TEMPORARY = "temporary"


class Strategy(enum.Enum):
    """Which children a supervisor restarts when one of them must be restarted.

    ``ONE_FOR_ONE``: only that child. ``ONE_FOR_ALL``: stop all the others (reverse start
    order), then restart all (start order). ``REST_FOR_ONE``: the child and those started
    after it. ``TEMPORARY`` siblings stopped this way are not restarted (as in OTP).
    """

    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"


@attrs.frozen
class Backoff:
    """Delay before restart number *n* within the intensity window.

    ``delay(n) = min(maximum, initial * factor ** (n - 1))`` seconds, so the first restart in a
    quiet period waits ``initial``. Deterministic on purpose (no jitter) so tests with
    ``MockClock`` can predict it.
    """

    initial: float = 0.1
    maximum: float = 10.0
    factor: float = 2.0

    def delay(self, n: int) -> float:
        return min(self.maximum, self.initial * self.factor ** max(0, n - 1))


#: Elixir's supervisor defaults (OTP's are 1 in 5 s, which restarts too rarely for agents
#: whose connections blip): more than 3 restarts within 5 s makes a supervisor give up.
DEFAULT_MAX_RESTARTS = 3
DEFAULT_WITHIN = 5.0


@attrs.frozen
class Supervision:
    """How an actor supervises its children. Every actor has one (``Actor.supervision``).

    ``max_restarts`` restarts are allowed within any ``within`` seconds; one more makes this
    actor stop its children and crash with ``RestartIntensityExceeded`` (escalation).
    """

    strategy: Strategy = Strategy.ONE_FOR_ONE
    max_restarts: int = DEFAULT_MAX_RESTARTS
    within: float = DEFAULT_WITHIN
    backoff: Backoff | None = None


@attrs.frozen
class Outcome:
    """How an actor ended: ``status`` (a terminal :class:`Status`) and the ``exception`` that
    ended it (``None`` for ``COMPLETED``/``STOPPED``)."""

    status: Status
    exception: BaseException | None = None

    @property
    def ok(self) -> bool:
        """True unless the actor ended with an error."""
        return self.status is not Status.ERRORED


@attrs.frozen
class Terminated:
    """Delivered to ``receive`` of every actor that ``watch``-ed ``ref`` when it terminates
    for good (not when it is restarted). Sent at once if it was already dead."""

    ref: ActorRef
    outcome: Outcome

    @property
    def status(self) -> Status:
        return self.outcome.status

    @property
    def exception(self) -> BaseException | None:
        return self.outcome.exception


#: Defaults for ``spawn``: a bounded mailbox with backpressure, and 5 s to stop gracefully.
DEFAULT_MAILBOX_SIZE = 1024
DEFAULT_GRACE = 5.0


@attrs.frozen
class ChildSpec:
    """Everything needed to (re)start a child: pass it to ``spawn`` or list it in a
    ``Supervisor``. ``factory`` is an ``Actor`` subclass (or any callable returning an Actor),
    called with ``*args`` for every incarnation. Unlike ``spawn``'s default (``TEMPORARY``),
    a spec's default restart type is ``PERMANENT``, as in OTP."""

    factory: Any
    args: tuple[Any, ...] = ()
    name: str | None = None
    restart: Restart = Restart.PERMANENT
    mailbox_size: int = DEFAULT_MAILBOX_SIZE
    overflow: Overflow = Overflow.WAIT
    grace: float = DEFAULT_GRACE
