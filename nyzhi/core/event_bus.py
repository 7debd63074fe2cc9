"""Fan-out of runtime events to front ends.

Every event goes to every subscriber, in order. A subscriber's buffer is bounded; when it is
full, ``publish`` waits (backpressure), because front ends such as ``nyz run
--output-format stream-json`` must not lose events. A subscriber that closes its receiving
end is dropped.

Every event is redacted here first (``nyzhi.config.secrets.Redactor``): this is the one door
to front ends, stream-json, hooks' listeners and the session log, so a known secret value
never passes it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import attrs
import trio

from nyzhi.config.secrets import Redactor
from nyzhi.core.events import Event

# Where an agent's events go: ``EventBus.publish``, or a test's list.
Emit = Callable[[Event], Awaitable[None]]
Listener = Callable[[Event], Awaitable[None]]


class EventBus:
    def __init__(self, buffer: int = 4096, redactor: Redactor | None = None) -> None:
        self._buffer = buffer
        self.redactor = redactor or Redactor()
        self._subscribers: list[trio.MemorySendChannel[Event]] = []
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(event)`` inline for every event (sessions, hooks): it runs before
        subscribers see the event, so keep it quick."""
        self._listeners.append(listener)

    async def publish(self, event: Event) -> None:
        if self.redactor:
            event = redact_event(self.redactor, event)
        for listener in self._listeners:
            await listener(event)
        for send in list(self._subscribers):
            try:
                await send.send(event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._subscribers.remove(send)

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        send, receive = trio.open_memory_channel[Event](self._buffer)
        self._subscribers.append(send)
        try:
            async with receive:
                yield receive
        finally:
            if send in self._subscribers:
                self._subscribers.remove(send)
            send.close()


def redact_event(redactor: Redactor, event: Event) -> Event:
    """``event`` with known secrets replaced in its string, list and dict fields (the same
    object when there is nothing to replace)."""
    changes = {}
    for field in attrs.fields(type(event)):
        value = getattr(event, field.name)
        redacted = redactor.redact_value(value)
        if redacted is not value:
            changes[field.name.lstrip("_")] = redacted
    return attrs.evolve(event, **changes) if changes else event
