"""Bash in the editor's terminal: the runner the session's sandboxed commands are handed to.

When the client offers the ``terminal`` capability, the session runs its sandboxed commands
elsewhere (``nyzhi.core.protocol.elsewhere``): the protocol confines each exactly as the local
executor would (``env -i``, our ``child_env``, the bubblewrap argv) and hands it here as a
``ConfinedCommand``; this asks the editor to run that argv, never the model's text, so nothing
the editor adds (its own environment, variables it merges in, its cwd) reaches the command.
The environment is also passed as the terminal's ``env`` and the workspace path as its
``cwd``, for editors that show them. Commands bwrap does not contain run through the local
executor as before, as do commands when the client fails to create a terminal (the runner
answers None).

A timeout or a cancel (``session/cancel``, the editor going away) is ``terminal/kill`` then
``terminal/release``; the terminal is released in every case, and ``sweep`` kills what of the
run the editor left, found by the token the protocol sets inside the sandbox (``TOKEN_VAR``).
The output the model gets is the terminal's (``terminal/output``), capped as the local executor
caps it; it reaches our own event stream once the command ends, while the editor shows it live
in the tool call.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

import trio

from nyzhi.acp import schema as s
from nyzhi.core.protocol.elsewhere import ConfinedCommand, ElsewhereError, OutputCallback, Ran
from nyzhi.jsonrpc import Connection, RpcError

RUNNING_NOTE = "[running in the editor's terminal]\n"
TOKEN_VAR = "NYZ_TERMINAL"  # set inside the sandbox: the run's token, also in bwrap's argv
CREATE_GRACE = 30.0  # seconds an editor gets to open a terminal
KILL_GRACE = 5.0  # seconds to wait for the editor to kill and release a terminal
# Told which terminal serves which call (agent path, model call id), so the tool call embeds it.
Announce = Callable[[tuple[str, str] | None, str], None]


class TerminalRunner:
    """Runs a confined command (``protocol.elsewhere``) in a client terminal: the runner the
    session's ``ElsewhereExecutor`` hands its sandboxed commands to."""

    def __init__(self, conn: Connection, session_id: Callable[[], str],
                 announce: Announce) -> None:
        self.conn = conn
        self.session_id = session_id
        self.announce = announce

    async def __call__(self, cmd: ConfinedCommand,
                       on_output: OutputCallback | None) -> Ran | None:
        """What the terminal ran; None when the editor cannot open one (we run it)."""
        session = self.session_id()
        # Shielded (and bounded): a terminal the editor created must be known, to be killed.
        terminal: str | None = None
        with trio.CancelScope(shield=True), trio.move_on_after(CREATE_GRACE) as waited:
            try:
                created = await self.conn.request("terminal/create", s.write(
                    s.CreateTerminalParams(
                        session, cmd.program, cmd.args,
                        tuple(s.NameValue(k, v) for k, v in cmd.env.items()),
                        cmd.cwd, cmd.output_cap)))
                terminal = s.read_params(created, s.CreateTerminalResult,
                                         "terminal/create result").terminal_id
            except (RpcError, s.ParamsError, trio.BrokenResourceError, trio.ClosedResourceError):
                terminal = None
        if waited.cancelled_caught:  # it may still start it: never run the command twice
            with trio.CancelScope(shield=True):
                await sweep(cmd.token)
            raise ElsewhereError(f"the editor did not open a terminal within {CREATE_GRACE:g} s; "
                                 "the command was not run")
        if terminal is None:  # the editor cannot: we run it
            return None
        try:
            return await self._in_terminal(s.write(s.TerminalParams(session, terminal)),
                                           terminal, cmd, on_output)
        finally:
            with trio.CancelScope(shield=True):
                await sweep(cmd.token)

    async def _in_terminal(self, ids: Any, terminal: str, cmd: ConfinedCommand,
                           on_output: OutputCallback | None) -> Ran:
        seconds = cmd.timeout
        timed_out = False
        try:
            self.announce(cmd.call, terminal)
            if on_output is not None:
                # the call's first output, where the session embeds the terminal in the call
                await on_output(RUNNING_NOTE)
            with trio.move_on_after(float("inf") if seconds is None else seconds) as limit:
                await self.conn.request("terminal/wait_for_exit", ids)
            if limit.cancelled_caught:
                timed_out = True
                await self._kill(ids)
            shown = s.read_params(await self.conn.request("terminal/output", ids),
                                  s.TerminalOutputResult, "terminal/output result")
        except BaseException as exc:
            with trio.CancelScope(shield=True), trio.move_on_after(KILL_GRACE):
                await self._kill(ids)
                await self._release(ids)
            if isinstance(exc, RpcError | s.ParamsError):
                raise ElsewhereError(f"the editor's terminal failed: {exc}") from None
            raise
        await self._release(ids)
        note = (f"\n[timed out after {seconds:g} s; the editor's terminal was killed]\n"
                if timed_out and seconds is not None else "")
        return Ran(exit_code=_exit_code(shown.exit_status or s.TerminalExitStatus()),
                   output=shown.output, truncated=shown.truncated, timed_out=timed_out,
                   note=note)

    async def _kill(self, ids: Any) -> None:
        """Kill the command and wait (bounded) until the editor saw it end: bwrap is gone
        then, and the kernel tears its PID namespace down with everything in it."""
        if self.conn.closed.is_set():
            return  # the editor is gone: bwrap died with it, and ``sweep`` ends the rest
        try:
            await self.conn.request("terminal/kill", ids)
            with trio.move_on_after(KILL_GRACE):
                await self.conn.request("terminal/wait_for_exit", ids)
        except (RpcError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # already gone, or the editor with it (bwrap then dies with its parent)

    async def _release(self, ids: Any) -> None:
        if self.conn.closed.is_set():
            return
        try:
            await self.conn.request("terminal/release", ids)
        except (RpcError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass


def _holding(token: str) -> list[int]:
    """Pids of live processes whose command line names ``token`` (this run's bwrap pair)."""
    needle = token.encode()
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                    if needle in fh.read():
                        pids.append(int(entry.name))
            except OSError:
                continue
    return pids


async def sweep(token: str) -> None:
    """Kill whatever of this run the editor left: its kill reaches bwrap only, and bwrap
    killed while it starts up leaves its namespace's init (and the command) running. Killing
    that init ends everything in the namespace, as our own process-group kill would."""
    for pid in await trio.to_thread.run_sync(_holding, token):
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
            with trio.move_on_after(KILL_GRACE):
                await trio.lowlevel.wait_readable(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


def _exit_code(status: s.TerminalExitStatus) -> int:
    """The exit status as ``ExecResult`` has it: the code, or minus the killing signal."""
    if status.exit_code is not None:
        return status.exit_code
    name = status.signal or "SIGKILL"
    try:
        return -int(signal.Signals[name if name.startswith("SIG") else f"SIG{name}"])
    except KeyError:
        return -int(signal.SIGKILL)


def install(session: Any, conn: Connection, announce: Announce) -> None:
    """Run the sandboxed commands of every agent of ``session``'s runtime in client terminals
    (``Session.run_commands_elsewhere``)."""
    from nyzhi.core.protocol import Session

    runner = TerminalRunner(conn, lambda: session.id, announce)
    Session(session.rt).run_commands_elsewhere(runner, TOKEN_VAR)
