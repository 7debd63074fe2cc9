"""Fan-out of runtime events to front ends.

Every event goes to every subscriber, in order. A subscriber's buffer is bounded; when it is
full, ``publish`` waits (backpressure), because front ends such as ``nyz run
--output-format stream-json`` must not lose events. A subscriber that closes its receiving
end is dropped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import trio

from nyzhi.core.events import Event

# Where an agent's events go: ``EventBus.publish``, or a test's list.
Emit = Callable[[Event], Awaitable[None]]
Listener = Callable[[Event], Awaitable[None]]


class EventBus:
    def __init__(self, buffer: int = 4096) -> None:
        self._buffer = buffer
        self._subscribers: list[trio.MemorySendChannel[Event]] = []
        self._listeners: list[Listener] = []
        self._subscribed = trio.Event()

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(event)`` inline for every event (sessions, hooks): it runs before
        subscribers see the event, so keep it quick."""
        self._listeners.append(listener)

    async def publish(self, event: Event) -> None:
        for listener in self._listeners:
            await listener(event)
        for send in list(self._subscribers):
            try:
                await send.send(event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._subscribers.remove(send)

    async def wait_for_subscriber(self) -> None:
        """Until a front end has subscribed once: a question asked in the background at
        start-up (an MCP server to approve) must not be published to nobody."""
        await self._subscribed.wait()

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        send, receive = trio.open_memory_channel[Event](self._buffer)
        self._subscribers.append(send)
        self._subscribed.set()
        try:
            async with receive:
                yield receive
        finally:
            if send in self._subscribers:
                self._subscribers.remove(send)
            send.close()
