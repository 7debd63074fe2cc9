"""Supervising a pool of long-lived server processes: the MCP servers (``/mcp``) and the
language servers (``/lsp``) are run the same way, and this is that way, written once.

Restart intensity belongs to a parent, so each server gets its own small supervisor
(``/POOL/NAME``) holding one connection actor (``conn``, transient). A server that keeps
crashing exhausts *its* supervisor, which ends; the pool's supervisor does not restart it
(it is temporary) but is told, so the pool marks that server failed and every other server
goes on. What a connection actor does (start a process, speak MCP or LSP) stays with its pool;
so does the pool's ``Link``, which shares a server's status with callers, built on
``StatusLink`` here.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any, Protocol

import trio

import actors
from nyzhi import records

log = logging.getLogger(__name__)


@records.frozen
class Intensity:
    """How hard one server is restarted: at most ``max_restarts`` in ``within`` seconds,
    each after ``backoff``; one crash more and the server is marked failed."""

    max_restarts: int = 3
    within: float = 30.0
    backoff: actors.Backoff = actors.Backoff(initial=0.5, maximum=10.0, factor=2.0)


def leaf_error(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups: what a person should read."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def gave_up(outcome: actors.Outcome, intensity: Intensity) -> str | None:
    """Why a server's supervisor ended, as the reason its server failed; None when it ended
    without giving up (stopped, or the pool is closing)."""
    if outcome.status is not actors.Status.ERRORED:
        return None
    cause = outcome.exception.__cause__ if outcome.exception is not None else None
    why = str(cause or outcome.exception)
    return (f"gave up after {intensity.max_restarts} restarts in {intensity.within:g} s; "
            f"last error: {why}")


class StatusLink:
    """A server's status, written by its connection actor and waited on by callers; its
    stderr goes to ``log_path``. Each pool's link adds what its callers read."""

    def __init__(self, log_path: Path) -> None:
        self.status = "starting"
        self.reason = ""
        self.client: Any = None
        self.log_path = log_path
        self._changed = trio.Event()

    def _set(self, status: str, reason: str = "") -> None:
        self.status, self.reason = status, reason
        self._changed.set()
        self._changed = trio.Event()

    def stderr_hint(self) -> str:
        """The server's last stderr line, for an error message ("" when there is none)."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 2000))
                lines = [ln for ln in fh.read().decode("utf-8", "replace").splitlines()
                         if ln.strip()]
        except OSError:
            return ""
        line = last_error_line(lines)
        return f" (its last stderr line: {line[:200]})" if line else ""


# Lines of a backtrace, or a runtime's closing remark, that say nothing about what went wrong:
# the frames of Rust (``12: core::…``, ``at src/x.rs:3``), Python (``File "…", line N``), Node
# and Java (``at f (file:1:2)``, ``... 3 more``), Go (``goroutine 1 [running]:``, ``main.f()``,
# a tab and ``/path/x.go:3``), and their footers (``note: run with `RUST_BACKTRACE=1` …``,
# ``Node.js v20.1.0``, ``exit status 2``).
_FRAME = re.compile(
    r"^(\s*\d+:\s|\s*at\s|\s*File \"|\s*\.\.\.\s*\d+ more|stack backtrace:|goroutine \d+ |"
    r"\t|note: run with `RUST_BACKTRACE|Node\.js v\d|exit status \d+$|"
    r"[\w./*-]+\(.*\)(\s+\+0x[0-9a-f]+)?$)")


def last_error_line(lines: list[str]) -> str:
    """The last line of a server's stderr that says what went wrong, its backtrace frames and
    footers skipped (the last line itself when every line is one)."""
    for line in reversed(lines):
        if line.strip() and not _FRAME.match(line.rstrip()):
            return line.strip()
    return lines[-1].strip() if lines else ""


class ServerPool(Protocol):
    async def server_ended(self, name: str, outcome: actors.Outcome) -> None:
        """A server's supervisor ended (``outcome``): mark the server failed if it gave up."""


class PoolSupervisor(actors.Supervisor):
    """``/mcp``, ``/lsp``: starts one temporary per-server supervisor per server and watches
    them, so a server that gives up is reported to the pool as failed without taking the
    others down."""

    def __init__(self, pool: ServerPool, what: str) -> None:
        super().__init__()
        self.pool = pool
        self.what = what  # "MCP server", "language server": for the log

    async def receive(self, message: Any) -> Any:
        if isinstance(message, actors.StartChild):
            ref = self.context.spawn(message.spec)
            self.context.watch(ref)
            return ref
        if isinstance(message, actors.Terminated):
            try:
                await self.pool.server_ended(message.ref.name, message.outcome)
            except Exception:  # reporting must never take the other servers down
                log.exception("reporting the end of %s %s failed", self.what, message.ref.name)
            return None
        return await super().receive(message)


def server_spec(connection: type[actors.Actor], name: str, args: tuple[Any, ...],
                intensity: Intensity) -> actors.ChildSpec:
    """One server's supervisor ``name`` (temporary: the pool decides what comes next), holding
    its connection actor ``conn`` made as ``connection(*args)``, restarted per ``intensity``."""
    conn = actors.ChildSpec(connection, args, name="conn",
                            restart=actors.Restart.TRANSIENT, grace=3.0)
    return actors.ChildSpec(
        actors.Supervisor,
        ([conn], actors.Strategy.ONE_FOR_ONE, intensity.max_restarts, intensity.within,
         intensity.backoff),
        name=name,
        restart=actors.Restart.TEMPORARY,
        grace=5.0,
    )
