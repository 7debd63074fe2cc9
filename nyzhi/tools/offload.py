"""Running the tools' blocking disk work in worker threads, a few at a time.

Why threads: every agent and the console share one trio thread, so an fsync or a directory
scan on it stalls all of them while one disk is slow. Why only a few: the work is mostly
Python (resolving paths, diffing) between short system calls, and Python threads take turns
on the GIL. With dozens of busy workers the trio thread waits its turn behind all of them
(up to the 5 ms switch interval each); with a couple it gets the GIL back within one.
Calls beyond the limit wait in trio, where waiting costs nothing.

Long scans that may be cancelled (grep, glob walks) use ``trio.to_thread`` directly with
``abandon_on_cancel``; this pool is for short operations that must finish once started.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import trio

T = TypeVar("T")

IO_THREADS = 2
_LIMITER: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("nyzhi_tool_io")


def io_limiter() -> trio.CapacityLimiter:
    """This trio run's pool of tool I/O threads (tests hold its tokens to see calls wait)."""
    try:
        return _LIMITER.get()
    except LookupError:
        limiter = trio.CapacityLimiter(IO_THREADS)
        _LIMITER.set(limiter)
        return limiter


async def run_blocking(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` in a worker thread. Not abandoned on cancellation: once started it runs to
    the end (a write is never left half done), and the caller sees its result."""
    return await trio.to_thread.run_sync(fn, *args, limiter=io_limiter())
