"""Background processes as actors: each under the tool executor of the agent that started it.

A process started by ``bash`` with ``run_in_background`` (``nyzhi.tools.background``) runs
as a ``ShellActor`` at ``<agent path>/tools/<id>`` (``/agents/main/tools/bg_1``). Its one task
runs the process; when the actor stops — ``kill_shell`` aside, that is its agent closing
(``close_agent``, Esc on the subtree), the session's end, ``nyz run``'s end — the task is
cancelled and the process's whole group is killed before the actor is gone (children stop
before their parent, so an agent is never reported stopped while its processes live). When
nyz itself dies, SIGKILL included, bwrap's ``--die-with-parent`` ends the sandbox, and with
``--unshare-pid`` everything in it (``nyzhi.spawn``).

This module also joins the table to the rest of the runtime: the executor actor registers
itself as its agent's host, the table's start and exit become ``process_start`` and
``process_exit`` events, and ``notices`` is the text each agent's next model step gets.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

import actors
from nyzhi.core import events as ev
from nyzhi.provider import types as pt
from nyzhi.tools.background import KILL_GRACE, LAST_LINES, BackgroundShell, ShellTable


class ShellActor(actors.Actor):
    """One background process; stops itself when the process has ended."""

    crash_on_ask_error = False

    def __init__(self, shell: BackgroundShell, run: Callable[[], Awaitable[None]]) -> None:
        self.shell = shell
        self.run = run

    async def started(self) -> None:
        self.context.start_soon(self._run, name=f"{self.context.path}:process")

    async def _run(self) -> None:
        try:
            await self.run()
        finally:
            self.context.stop()


def host(table: ShellTable | None, agent_path: str, context: Any) -> Callable[[], None]:
    """Make the actor whose ``context`` is given (an agent's tool executor) the parent of
    ``agent_path``'s background processes; returns the undo (when that actor stops)."""
    if table is None:
        return lambda: None

    def spawn(shell: BackgroundShell, run: Callable[[], Awaitable[None]]) -> Any:
        return context.spawn(ShellActor, shell, run, name=shell.id,
                             restart=actors.Restart.TEMPORARY)

    table.hosts[agent_path] = spawn

    def release() -> None:
        if table.hosts.get(agent_path) is spawn:
            del table.hosts[agent_path]

    return release


def publish_events(table: ShellTable, publish: Callable[[Any], Awaitable[None]]) -> None:
    """The table's start, output and exit as ``process_start``, ``process_output_delta``
    (bounded: a few a second, the last 4 KiB each) and ``process_exit`` on the bus."""

    async def listener(kind: str, shell: BackgroundShell, **detail: Any) -> None:
        if kind == "output":
            await publish(ev.ProcessOutputDelta(
                agent=shell.owner, shell_id=shell.id, text=detail["text"],
                skipped=detail.get("skipped", 0)))
        elif kind == "start":
            await publish(ev.ProcessStart(
                agent=shell.owner, shell_id=shell.id, command=shell.command,
                pid=shell.pid or 0, tty=shell.tty, sandboxed=shell.sandboxed))
        else:
            await publish(ev.ProcessExit(
                agent=shell.owner, shell_id=shell.id, command=shell.command, state=shell.state,
                exit_code=shell.exit_code, last_lines=tuple(shell.ring.tail_lines(LAST_LINES))))

    table.listener = listener
    table.follows_output = True


def notices(table: ShellTable | None, agent_path: str) -> Callable[[], list[pt.Message]]:
    """The agent's ``before_step`` part for its processes: what happened to them since it was
    last told (an exit with its code and last lines, a port opened), as one user message."""

    def take() -> list[pt.Message]:
        if table is None:
            return []
        texts = table.take_notices(agent_path)
        return [pt.Message("user", "\n".join(texts))] if texts else []

    return take


async def stop_all(table: ShellTable | None) -> None:
    """Kill every process still running (``nyz run``'s end, before its last events are
    printed, so their ``process_exit`` is too); each within its kill grace."""
    if table is None:
        return

    async def stop(shell: BackgroundShell) -> None:
        if shell.kill_now is not None:
            await shell.kill_now()
        await shell.exited.wait()

    with trio.CancelScope(shield=True), trio.move_on_after(KILL_GRACE + 5):
        async with trio.open_nursery() as nursery:
            for shell in table.running():
                nursery.start_soon(stop, shell)


def shell_summaries(table: ShellTable | None) -> list[dict[str, Any]]:
    """Every process of the table, described (``nyz run``'s ``background`` field)."""
    if table is None:
        return []
    return [s.describe() for s in table.shells.values()]
