"""How the command line stops on a signal: Ctrl-C (SIGINT), ``kill`` (SIGTERM) and a closed
terminal (SIGHUP) all do the same thing — cancel the running turn, let it settle (its thread
gets a result for every call, its subprocesses are killed), save the session, and exit with
``128 + signal``: 130, 143, 129.
"""

from __future__ import annotations

import contextlib
import os
import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def exit_code(signum: int) -> int:
    """The shell's convention for a process stopped by ``signum``."""
    return 128 + int(signum)


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
