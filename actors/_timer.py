"""One timer task per system for ask timeouts and stop grace periods.

Why not ``trio.move_on_after`` per ask/stop: entering a ``CancelScope`` costs several µs
(it dominated an ask round trip and a spawn+stop). Here a deadline is one heap push; the
timer task sleeps until the earliest one. Entries are cancelled by clearing their callback
and cleaned off the top of the heap on each push, so the heap stays as small as the number
of requests actually outstanding. Works with ``trio.testing.MockClock`` (the task sleeps
on an ordinary trio deadline).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any

import trio


class Timer:
    __slots__ = ("_heap", "_seq", "_scope")

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []
        self._seq = 0
        self._scope: trio.CancelScope | None = None

    def call_after(self, delay: float, fn: Callable[[Any], None], arg: Any) -> list[Any]:
        """Call ``fn(arg)`` after ``delay`` seconds unless cancelled with :func:`cancel`."""
        deadline = trio.current_time() + delay
        heap = self._heap
        while heap and heap[0][2] is None:
            heapq.heappop(heap)
        self._seq += 1
        entry = [deadline, self._seq, fn, arg]
        heapq.heappush(heap, entry)
        scope = self._scope
        if scope is not None and deadline < scope.deadline:
            scope.deadline = deadline
        return entry

    async def run(self) -> None:
        heap = self._heap
        while True:
            now = trio.current_time()
            while heap and (heap[0][2] is None or heap[0][0] <= now):
                _, _, fn, arg = heapq.heappop(heap)
                if fn is not None:
                    fn(arg)
            deadline = heap[0][0] if heap else math.inf
            with trio.CancelScope(deadline=deadline) as self._scope:
                await trio.sleep_forever()
            self._scope = None


def cancel(entry: list[Any]) -> None:
    entry[2] = None
    entry[3] = None
