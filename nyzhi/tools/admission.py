"""Letting tool calls into the event loop's synchronous work one per scheduler batch.

Why: every agent and the console share one trio thread, and trio runs every task that is
ready in one batch before it looks at timers and input again. Gating a call (resolving its
paths, matching deny rules, taking write leases) is a few hundred microseconds of plain
Python with no await in it. When 100 agents issue calls at once, all 100 gate in the same
batch, and the console's keystrokes and every timer wait behind all of them (about 30-50 ms
measured here). Passing a FIFO turnstile first spreads them over batches: each batch gates
one call, and timers, I/O and the other tasks run between them.

The turnstile is passed, not held: nothing waits behind a call's approval prompt or its tool
run. An uncontended pass costs one schedule point.
"""

from __future__ import annotations

import trio

_TURNSTILE: trio.lowlevel.RunVar[trio.Lock] = trio.lowlevel.RunVar("nyzhi_tool_admission")


def _turnstile() -> trio.Lock:
    try:
        return _TURNSTILE.get()
    except LookupError:
        lock = trio.Lock()
        _TURNSTILE.set(lock)
        return lock


async def admit() -> None:
    """Wait for this call's turn (first come, first served). On return the caller runs in its
    own scheduler batch, apart from the calls admitted before and after it, until its next
    await."""
    lock = _turnstile()
    await lock.acquire()
    # Releasing hands the lock to the next waiter, which trio schedules for the next batch:
    # this task keeps the rest of the current one.
    lock.release()
