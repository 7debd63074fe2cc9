"""Lifecycle events and the subscriptions that stream them to observers.

Observers (a console drawing the agent tree, a logger, a test) must never slow the system
down or block it: each subscription has a bounded buffer filled with ``send_nowait``; when a
subscriber falls behind, new events for it are dropped and counted in
``subscription.dropped`` instead of making the publisher wait. When no one subscribes,
no event object is even built.
"""

from __future__ import annotations

import enum
import math
from types import TracebackType
from typing import TYPE_CHECKING

import attrs
import trio

from ._types import Status

if TYPE_CHECKING:
    from ._ref import ActorRef


class EventKind(enum.Enum):
    """``SPAWNED`` (ref created), ``STARTED`` (its ``started()`` returned), ``CRASHED`` (an
    incarnation raised; ``reason`` is the exception), ``RESTARTED`` (a new incarnation is
    being started after a crash or a group restart), ``STOPPED`` (gone for good; ``status``
    says how, ``reason`` holds the final exception if it errored)."""

    SPAWNED = "spawned"
    STARTED = "started"
    CRASHED = "crashed"
    RESTARTED = "restarted"
    STOPPED = "stopped"


@attrs.frozen
class ActorEvent:
    """One lifecycle event, tagged with the actor's path (``/agents/main/sub-1``)."""

    kind: EventKind
    path: str
    ref: ActorRef = attrs.field(repr=False, eq=False)
    actor_type: str
    status: Status
    reason: BaseException | None = None
    restarts: int = 0
    time: float = 0.0


DEFAULT_EVENT_BUFFER = 1000


class EventStream:
    """A subscription: iterate it with ``async for``; leave its ``with`` block to unsubscribe.

    Usable as ``with system.events() as events:`` or ``async with``. Iteration ends when the
    system has shut down and every buffered event was read. ``dropped`` counts events lost
    because this subscriber was more than ``buffer`` events behind.
    """

    def __init__(self, hub: EventHub, buffer: int) -> None:
        if buffer < 1 and buffer != math.inf:
            raise ValueError(f"buffer must be >= 1, got {buffer}")
        self._hub = hub
        self._send, self._receive = trio.open_memory_channel[ActorEvent](buffer)
        self.dropped = 0
        hub._subscribers.append(self)
        if hub.closed:
            self._send.close()

    def _publish(self, event: ActorEvent) -> None:
        try:
            self._send.send_nowait(event)
        except trio.WouldBlock:
            self.dropped += 1
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    def close(self) -> None:
        """Unsubscribe (idempotent). Events already buffered can no longer be read."""
        if self in self._hub._subscribers:
            self._hub._subscribers.remove(self)
        self._send.close()
        self._receive.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> ActorEvent:
        """Next event; a checkpoint. Raises ``StopAsyncIteration`` after system shutdown."""
        try:
            return await self._receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise StopAsyncIteration from None

    def receive_nowait(self) -> ActorEvent:
        """Next buffered event without waiting; raises ``trio.WouldBlock`` if none."""
        return self._receive.receive_nowait()


class EventHub:
    """Fans events out to subscriptions. Publishing never awaits."""

    __slots__ = ("_subscribers", "closed")

    def __init__(self) -> None:
        self._subscribers: list[EventStream] = []
        self.closed = False

    def __bool__(self) -> bool:
        return bool(self._subscribers)

    def publish(self, event: ActorEvent) -> None:
        for sub in tuple(self._subscribers):
            sub._publish(event)

    def close(self) -> None:
        """End every subscription's iteration once its buffer is drained."""
        self.closed = True
        for sub in self._subscribers:
            sub._send.close()
