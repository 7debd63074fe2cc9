"""Background shells shown in the editor's terminals, when the client offers ``terminal``.

A background shell (``bash`` with ``run_in_background``) stays nyz's process: the local
executor starts it behind the same sandbox wrap, environment policy, deny rules, approval and
hooks as any ``bash``, as an actor under the agent that started it, bound to nyz with
``--die-with-parent`` (``nyzhi.spawn``). It is *not* run through ``terminal/create``: an
editor-run process outlives nyz when nyz is killed (nothing ties the editor's child to us),
has no stdin we could ``write_stdin`` to, and its output would reach the editor unredacted.

What the editor gets is a view: a terminal (``terminal/create``) running ``tail`` on the
shell's log file, which holds its whole output already redacted, with ``--pid`` naming the
process so the view ends by itself when the process does, even when nyz was killed with
SIGKILL and could not say so. The terminal is embedded in the content of the ``bash`` call
that started it (with the call's result text), so the editor shows the server's output live
after the call returned. When the process exits (``kill_shell``, its own end,
the agent's subtree cancelled) the view is given a moment to print the last lines, then
``terminal/kill`` and ``terminal/release``; on the session's end every view left is killed
and released the same way. The view's command line is ours (a fixed ``tail`` on a path nyz
chose), never the model's text.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable

import trio

from nyzhi.acp import schema as s
from nyzhi.jsonrpc import Connection, RpcError

CREATE_GRACE = 30.0  # seconds an editor gets to open a view
LAST_LINES_GRACE = 3.0  # seconds a view gets to print a process's last lines and end itself
KILL_GRACE = 5.0
_GONE = (RpcError, s.ParamsError, trio.BrokenResourceError, trio.ClosedResourceError)


def view_argv(log_path: str, pid: int) -> tuple[str, list[str]] | None:
    """(command, args) of the editor-side view of a log, or None without a ``tail``."""
    tail = shutil.which("tail")
    if tail is None:
        return None
    return tail, ["-n", "+1", f"--pid={pid}", "-f", log_path]


class BackgroundViews:
    """One session's views: shell id -> the editor terminal showing it."""

    def __init__(self, conn: Connection, session_id: Callable[[], str],
                 output_limit: int) -> None:
        self.conn = conn
        self.session_id = session_id
        self.output_limit = output_limit
        self.views: dict[str, str] = {}
        self._opening: dict[str, trio.Event] = {}

    def known(self, shell_id: str) -> bool:
        """Whether ``shell_id`` has a view, or one being opened."""
        return shell_id in self.views or shell_id in self._opening

    def reserve(self, shell_id: str) -> None:
        """A view of ``shell_id`` is being opened: its ``close`` waits for the opening (a
        process may exit, and its exit be handled, before the editor answered)."""
        self._opening.setdefault(shell_id, trio.Event())

    async def open(self, shell_id: str, log_path: str, pid: int) -> str | None:
        """Ask the editor for a view of ``shell_id``: its terminal id, or None when the
        editor cannot (the shell runs on, unseen there)."""
        self.reserve(shell_id)
        opening = self._opening[shell_id]
        argv = view_argv(log_path, pid)
        if argv is None or self.conn.closed.is_set():
            opening.set()
            self._opening.pop(shell_id, None)
            return None
        terminal: str | None = None
        try:
            # shielded and bounded: a terminal the editor created must be known, to release
            with trio.CancelScope(shield=True), trio.move_on_after(CREATE_GRACE):
                created = await self.conn.request("terminal/create", s.write(
                    s.CreateTerminalParams(self.session_id(), argv[0], tuple(argv[1]), (),
                                           None, self.output_limit)))
                terminal = s.read_params(created, s.CreateTerminalResult,
                                         "terminal/create result").terminal_id
        except _GONE:
            terminal = None
        finally:
            if terminal is not None:
                self.views[shell_id] = terminal
            opening.set()
            self._opening.pop(shell_id, None)
        return terminal

    async def close(self, shell_id: str, *, linger: bool = True) -> None:
        """The process ended: let the view print its last lines (it ends by itself once the
        process is gone), then ``terminal/kill`` and ``terminal/release``."""
        opening = self._opening.get(shell_id)
        if opening is not None:
            await opening.wait()
        terminal = self.views.pop(shell_id, None)
        if terminal is None or self.conn.closed.is_set():
            return
        ids = s.write(s.TerminalParams(self.session_id(), terminal))
        with trio.CancelScope(shield=True), trio.move_on_after(LAST_LINES_GRACE + 2 * KILL_GRACE):
            with contextlib.suppress(*_GONE):
                if linger:
                    with trio.move_on_after(LAST_LINES_GRACE):
                        await self.conn.request("terminal/wait_for_exit", ids)
                await self.conn.request("terminal/kill", ids)
            with contextlib.suppress(*_GONE):
                await self.conn.request("terminal/release", ids)

    async def close_all(self) -> None:
        """The session ends: every view killed and released (shielded, bounded)."""
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for shell_id in [*self.views, *self._opening]:
                    nursery.start_soon(lambda sid=shell_id: self.close(sid, linger=False))
