"""The team-wide limit on model calls in flight (``[team] max_concurrent_model_calls``).

A hundred members stepping at once would send a hundred requests at once; the provider answers
most with 429 and the retry layer turns that into a storm of retries. Instead every request of
a runtime bound to a team waits for a slot before it is sent and gives it back when its stream
ends (or fails, or is cancelled), so the provider sees at most ``limit`` requests and the rest
queue, first come first served.

``ModelCallGate`` wraps the runtime's provider (over ``RedactingProvider``), so every agent of
the runtime, its subagents and compaction pass through it. It is open (no wait, no cost) until
``TeamRuntime.bind`` makes the runtime a team member and calls ``limit``:

* in-process members share the lead's runtime, hence one ``trio.CapacityLimiter``: it is fair
  (a waiter is handed a freed token in the order it started waiting, and a newcomer never takes
  a token while anyone waits), so no member starves;
* a ``process`` team's members are other programs: after the local limiter, a request also
  takes a ticket in the team's shared slot file (``nyzhi.team_files.model_slots``), granted in
  ticket order across every process of the team, and polled while it waits.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import trio

from nyzhi.provider import types as pt
from nyzhi.tools.offload import run_blocking

POLL = 0.05  # a process member's wait for a shared slot (a flock cannot wake trio)


class ModelCallGate:
    """``provider``, with each ``stream`` holding a slot of the team's limit while it runs;
    every other attribute is the wrapped provider's."""

    def __init__(self, provider: pt.Provider) -> None:
        self._provider = provider
        self._limiter: trio.CapacityLimiter | None = None
        self._shared: Any = None  # nyzhi.team_files.model_slots.SharedSlots for a process team
        self.in_flight = 0
        self.max_in_flight = 0
        self.waited = 0  # requests that had to queue
        self.waiting = 0  # requests queued now
        self.changed = trio.Event()  # set (and replaced) when a request queues or gets a slot

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    @property
    def limit_value(self) -> int:
        return 0 if self._limiter is None else int(self._limiter.total_tokens)

    def set_limit(self, limit: int, shared: Any = None) -> None:
        """At most ``limit`` requests in flight from now on (0: no limit); ``shared``: the team's
        slot file, for a team whose members are processes. The first call wins: a runtime
        bound to a team keeps that team's limit."""
        if self._limiter is not None or limit <= 0:
            return
        self._limiter = trio.CapacityLimiter(limit)
        self._shared = shared

    def stream(self, request: pt.ChatRequest) -> AsyncGenerator[pt.StreamEvent, None]:
        if self._limiter is None:
            return self._provider.stream(request)
        return self._gated(request)

    async def _gated(self, request: pt.ChatRequest) -> AsyncGenerator[pt.StreamEvent, None]:
        async with self.slot():
            async with contextlib.aclosing(self._provider.stream(request)) as events:
                async for event in events:
                    yield event

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot of the team's limit for the block."""
        limiter = self._limiter
        if limiter is None:
            yield
            return
        token = object()
        if limiter.borrowed_tokens >= limiter.total_tokens or limiter.statistics().tasks_waiting:
            self.waited += 1
        self.waiting += 1
        self._signal()
        try:
            await limiter.acquire_on_behalf_of(token)
        finally:
            self.waiting -= 1
        try:
            async with self._shared_slot():
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                self._signal()
                try:
                    yield
                finally:
                    self.in_flight -= 1
        finally:
            limiter.release_on_behalf_of(token)

    def _signal(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    @contextlib.asynccontextmanager
    async def _shared_slot(self) -> AsyncIterator[None]:
        shared = self._shared
        if shared is None:
            yield
            return
        pid = os.getpid()
        ticket, granted = await run_blocking(shared.enqueue, pid)
        try:
            while not granted:
                await trio.sleep(POLL)
                granted = await run_blocking(shared.poll, ticket, pid)
            yield
        finally:
            with trio.CancelScope(shield=True):
                await run_blocking(shared.release, ticket)
