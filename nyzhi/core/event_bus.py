"""Fan-out of runtime events to listeners and front ends.

Listeners (the session log, hooks, an embedding program's callbacks) are awaited inline, in the
order they were added, before any subscriber sees the event. They run inside the agent that
published the event, so the bus isolates them: a listener that raises is reported as an
``error`` event (``kind="listener"``) naming it, delivered to the subscribers and the other
listeners, and the agent goes on. A listener that is not async is refused when it is added
(calling it inline would return ``None`` and fail on every event).

Every event goes to every subscriber, in order. A subscriber's buffer is bounded; when it is
full, ``publish`` waits (backpressure), because front ends such as ``nyz run
--output-format stream-json`` must not lose events. A subscriber that closes its receiving
end is dropped, also when it leaves while a publisher is on its way to it (every send lets
other tasks run, and may wait on a full buffer): leaving never fails the publishing agent.

Every event is redacted here first (``nyzhi.config.secrets.Redactor``): this is the one door
to front ends, stream-json, hooks' listeners and the session log, so a known secret value
never passes it. Deltas (model text, thinking, a tool's streamed output) are redacted as
streams, not one by one: a secret printed in two chunks is whole in neither. Each stream keeps
back the tail that could still be the start of a secret (``Redactor.split_release``) and
releases it with its next chunk, or as a last delta before the stream's next other event
(a tool's ``tool_done``; anything else its agent publishes for text and thinking).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import attrs
import trio

from nyzhi.config.secrets import Redactor
from nyzhi.core.errors import describe_error
from nyzhi.core.events import (
    LISTENER_FAILED,
    Error,
    Event,
    TextDelta,
    ThinkingDelta,
    ToolDone,
    ToolOutputDelta,
    redact_event,
)

# A delta stream: (agent, "text" | "thinking") or (agent, "tool", call_id).
StreamKey = tuple[str, ...]

log = logging.getLogger(__name__)

# Where an agent's events go: ``EventBus.publish``, or a test's list.
Emit = Callable[[Event], Awaitable[None]]
Listener = Callable[[Event], Awaitable[None]]


def _is_async(listener: object) -> bool:
    if inspect.iscoroutinefunction(listener):
        return True
    # an object with ``async def __call__``
    return callable(listener) and inspect.iscoroutinefunction(type(listener).__call__)


def listener_name(listener: object) -> str:
    """``event listener <module>.<qualname>``: how an unnamed listener is named in reports."""
    target = listener if hasattr(listener, "__qualname__") else type(listener)
    module = getattr(target, "__module__", "") or ""
    qualname = getattr(target, "__qualname__", repr(target))
    return f"event listener {module}.{qualname}" if module else f"event listener {qualname}"


class EventBus:
    def __init__(self, buffer: int = 4096, redactor: Redactor | None = None) -> None:
        self._buffer = buffer
        self.redactor = redactor or Redactor()
        self._subscribers: list[trio.MemorySendChannel[Event]] = []
        self._listeners: list[tuple[str, Listener, tuple[type[Event], ...] | None]] = []
        self._subscribed = trio.Event()
        self._held: dict[StreamKey, tuple[Event, str]] = {}  # stream -> (last delta, held text)

    def add_listener(self, listener: Listener, *, name: str | None = None,
                     only: tuple[type[Event], ...] | None = None) -> None:
        """Await ``listener(event)`` for every event before subscribers see it (keep it quick).

        ``name`` is how a failure is reported (default: ``listener_name``). ``only``: the
        event classes the listener wants; it is not called for others (every event of every
        agent passes here: a listener that wants two kinds costs nothing for the rest). Raises
        ``TypeError`` when ``listener`` is not an ``async def`` function or an object with an
        ``async def __call__``."""
        if not _is_async(listener):
            raise TypeError(
                f"{name or listener_name(listener)} is not async: an event listener is awaited "
                "for every event, so define it with `async def listener(event): ...`"
            )
        self._listeners.append((name or listener_name(listener), listener, only))

    async def publish(self, event: Event) -> None:
        if not self.redactor:
            await self._deliver(event)
            return
        # Worked out before the first await, so concurrent publishers never share a window.
        for out in self._window(event):
            await self._deliver(out)

    def _window(self, event: Event) -> list[Event]:
        """The events to deliver for ``event``, redacted: a delta's releasable text (nothing
        when all of it is held), or the held tails its stream(s) end with, then the event."""
        key = _stream_key(event)
        out = [self._flush(k) for k in self._ended_by(event, key)]
        if key is None:
            out.append(redact_event(self.redactor, event))
            return out
        held = self._held.pop(key, (event, ""))[1]
        released, rest = self.redactor.split_release(held + event.text)  # type: ignore[attr-defined]
        if rest:
            self._held[key] = (event, rest)
        if released:
            out.append(attrs.evolve(event, text=released))
        return out

    def _ended_by(self, event: Event, key: StreamKey | None) -> list[StreamKey]:
        """The held streams ``event`` closes: the agent's text and thinking on any other event
        of that agent; a tool's output on its ``tool_done`` (or the agent's turn ending)."""
        if not self._held:
            return []
        ended = []
        for held in self._held:
            if held[0] != event.agent or held == key:
                continue
            tool_done = isinstance(event, ToolDone) and event.call_id == held[-1]
            if held[1] != "tool" or tool_done or event.type == "turn_complete":
                ended.append(held)
        return ended

    def _flush(self, key: StreamKey) -> Event:
        last, rest = self._held.pop(key)
        return attrs.evolve(last, text=self.redactor.redact(rest))  # type: ignore[misc]

    async def _deliver(self, event: Event) -> None:
        for name, listener, only in self._listeners:
            if only is not None and not isinstance(event, only):
                continue
            try:
                await listener(event)
            except Exception as exc:  # isolated: reported, never the publishing agent's crash
                await self._listener_failed(name, event, exc)
        if self._subscribers:  # (no coroutine to start for none: this runs for every event)
            await self._send(event)

    async def _listener_failed(self, name: str, event: Event, exc: Exception) -> None:
        log.debug("%s failed on %s", name, event.type, exc_info=exc)  # the event says it
        report: Event = Error(agent=event.agent, message=f"{name}: {describe_error(exc)}",
                              kind=LISTENER_FAILED)
        if self.redactor:  # the exception may quote what the event carried
            report = redact_event(self.redactor, report)
        for other, listener, only in self._listeners:
            if other == name or (only is not None and not isinstance(report, only)):
                continue
            try:
                await listener(report)
            except Exception as again:  # a failure reporting a failure is only logged
                log.warning("%s failed on a listener report", other, exc_info=again)
        await self._send(report)

    async def _send(self, event: Event) -> None:
        """``event`` to every subscriber, in order. The publisher walks a copy of the list and
        every send lets other tasks run (or waits on a full buffer), so a subscriber it comes
        to may have left meanwhile, and been dropped by ``subscribe`` or another publisher: it
        is skipped, and the publisher (an agent, which an exception here would crash) goes on."""
        for send in list(self._subscribers):
            try:
                await send.send(event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._drop(send)

    def _drop(self, send: trio.MemorySendChannel[Event]) -> None:
        """Forget a subscriber that left (idempotent: several may find it gone)."""
        if send in self._subscribers:
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
            self._drop(send)
            send.close()


def _stream_key(event: Event) -> StreamKey | None:
    if isinstance(event, ToolOutputDelta):
        return (event.agent, "tool", event.call_id)
    if isinstance(event, TextDelta):
        return (event.agent, "text")
    if isinstance(event, ThinkingDelta):
        return (event.agent, "thinking")
    return None
