"""One timer task per system for ask timeouts and stop grace periods.

Why not ``trio.move_on_after`` per ask/stop: entering a ``CancelScope`` costs several µs
(it dominated an ask round trip and a spawn+stop). Here a deadline is one heap push; the
timer task sleeps until the earliest one. Entries are cancelled by clearing their callback
and cleaned off the top of the heap on each push, so the heap stays as small as the number
of requests actually outstanding. Works with ``trio.testing.MockClock`` (the task sleeps
on an ordinary trio deadline).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

import trio


class Timer:
    __slots__ = ("_heap", "_seq", "_scope", "_wake_at", "_clock")

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []
        self._seq = 0
        self._scope: trio.CancelScope | None = None
        self._wake_at = math.inf  # the deadline of ``_scope`` (a property read is a call)
        self._clock: trio.abc.Clock | None = None  # the run's clock, asked directly

    def call_after(self, delay: float, fn: Callable[[Any], None], arg: Any) -> list[Any]:
        """Call ``fn(arg)`` after ``delay`` seconds unless cancelled with :func:`cancel`."""
        clock = self._clock
        if clock is None:
            clock = self._clock = trio.lowlevel.current_clock()
        deadline = clock.current_time() + delay
        heap = self._heap
        while heap and heap[0][2] is None:
            heappop(heap)
        seq = self._seq = self._seq + 1
        entry = [deadline, seq, fn, arg]
        heappush(heap, entry)
        if deadline < self._wake_at:
            self._wake_at = deadline
            scope = self._scope
            if scope is not None:
                scope.deadline = deadline
        return entry

    async def run(self) -> None:
        heap = self._heap
        while True:
            now = trio.current_time()
            while heap and (heap[0][2] is None or heap[0][0] <= now):
                _, _, fn, arg = heappop(heap)
                if fn is not None:
                    fn(arg)
            deadline = self._wake_at = heap[0][0] if heap else math.inf
            with trio.CancelScope(deadline=deadline) as self._scope:
                await trio.sleep_forever()
            self._scope = None
            self._wake_at = math.inf


def cancel(entry: list[Any]) -> None:
    entry[2] = None
    entry[3] = None
