"""Waiting on a condition, never on a moment: how a test stays right on a busy machine.

A scan of ``/proc`` right after a signal, or a short ``fail_after`` over polling, asserts that
something happened *by now*; on a loaded machine (two cores kept busy by ``make test-stress``)
the kernel may not have run the child yet, or may still be tearing a killed process down. These
helpers poll a cheap check with a growing interval until it holds, bounded generously, so a
test fails only when the condition never comes (a real leak, a real hang), not when it is late.
"""

from __future__ import annotations

import os
import select
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import trio

T = TypeVar("T")

# Generous: a condition that holds at all holds well within this on a loaded two-core machine.
BOUND_S = 60.0


async def until(check: Callable[[], T], *, timeout: float = BOUND_S, what: str = "") -> T:  # noqa: ASYNC109
    """Poll ``check`` until it returns something truthy and return that; AssertionError
    (naming ``what``) if it has not within ``timeout`` seconds."""
    delay = 0.01
    with trio.move_on_after(timeout):
        while True:
            found = check()
            if found:
                return found
            await trio.sleep(delay)
            delay = min(delay * 2, 0.25)
    found = check()
    if found:
        return found
    raise AssertionError(f"not within {timeout:g} s: {what or check}")


async def settled(scan: Callable[[], list[T]], *, timeout: float = BOUND_S) -> list[T]:  # noqa: ASYNC109
    """What ``scan`` still finds once it has had ``timeout`` seconds to become empty: [] as
    soon as it is; else what is left (the caller asserts, and can clean up). For "nothing is
    left running": a process killed a moment ago may still be exiting, a leaked one never ends.
    """
    delay = 0.01
    with trio.move_on_after(timeout):
        while scan():
            await trio.sleep(delay)
            delay = min(delay * 2, 0.25)
        return []
    return scan()


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (children, theirs, ...), from /proc's parent links:
    what the orphan test and the crash benchmark check after killing nyz."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def pidfd_exited(fd: int) -> bool:
    """Whether the process behind pidfd ``fd`` has exited (readable), without waiting."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))
