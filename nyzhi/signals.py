"""How nyz stops on a signal: Ctrl-C (SIGINT), ``kill`` (SIGTERM) and a closed terminal
(SIGHUP) all stop it gracefully, in every front end (``nyz chat``, ``nyz run``, ``nyz serve``,
``nyz acp``, a team member): the running turn is cancelled and settles (its thread gets a
result for every call, its subprocesses are killed), the session is saved, and the command
line exits with ``128 + signal``: 130, 143, 129.

One loop, ``stop_on_signal``, at the bottom of the layers so that the ``web`` and ``acp`` front
ends and the command line share it; what differs between them (what stopping does, a Ctrl-C
that only interrupts a turn, the closed terminal) is its parameters. Only the ``nyz``
command's front ends call it: catching signals is the process's business, never a library's.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import signal
from collections.abc import Awaitable, Callable

import trio

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def exit_code(signum: int) -> int:
    """The shell's convention for a process stopped by ``signum``."""
    return 128 + int(signum)


async def stop_on_signal(stop: Callable[[int], Awaitable[None] | None] | None = None, *,
                         interrupts: Callable[[int], Awaitable[bool]] | None = None,
                         detach_terminal: bool = False) -> int:
    """Wait for SIGINT, SIGTERM or SIGHUP, then ``stop(signum)``; returns the signal.

    ``interrupts(signum)`` sees each signal first: True when it only interrupted something
    (the line chat's Ctrl-C mid-turn: back to the prompt), and the wait goes on.
    ``detach_terminal``: after SIGHUP, standard streams that were the terminal point at
    ``/dev/null`` before ``stop`` (its last words cannot fail on a terminal that is gone).
    ``stop`` runs while the signals are still caught here, so one more that comes while it
    settles waits until it has returned (trio delivers it then) and never cuts the settling
    short; from then on a signal has its usual effect (KeyboardInterrupt, or the end)."""
    with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            if interrupts is not None and await interrupts(signum):
                continue
            if detach_terminal:
                detach_closed_terminal(signum)
            if stop is not None:
                stopped = stop(signum)
                if inspect.isawaitable(stopped):
                    await stopped
            return signum
    raise AssertionError("a signal receiver does not end")  # pragma: no cover


def detach_closed_terminal(signum: int) -> None:
    """After SIGHUP the terminal is gone and writing to it fails (``EIO``): point every
    standard stream that was the terminal at ``/dev/null``, so the cleanup that follows (and
    its last words) cannot fail on output nobody can read. Pipes and files are left alone."""
    if signum != signal.SIGHUP:
        return
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)
        try:
            for fd in (0, 1, 2):
                with contextlib.suppress(OSError):
                    if os.isatty(fd):
                        os.dup2(null, fd)
        finally:
            os.close(null)


__all__ = ["STOP_SIGNALS", "detach_closed_terminal", "exit_code", "stop_on_signal"]
