"""Bash in the editor's terminal: an ``Executor`` that asks the ACP client to run the command.

When the client offers the ``terminal`` capability, the session's tool contexts get this
executor in place of their ``LocalExecutor``, so the bash tool itself is unchanged and the
gates have already run when a command gets here. The editor is asked to run *our* command
line, never the model's text: the same ``SandboxPolicy.wrap`` bubblewrap argv the local
executor would start, behind ``env -i`` and our ``child_env`` (``[shell.env]``), so nothing the
editor adds (its own environment, variables it merges in, its cwd) reaches the command. The
environment is also passed as the terminal's ``env`` and the workspace path as its ``cwd``,
for editors that show them.

The editor only ever runs commands bubblewrap contains: in bwrap's PID namespace
(``--unshare-pid``, ``--die-with-parent``) killing bwrap kills every process the command
started, which is the guarantee our own process-group handling gives. Commands bwrap does not
wrap (``full-access``, or no bwrap with the fallback ``unsandboxed``) therefore run through the
local executor as before, as do commands when the client fails to create a terminal.

A timeout or a cancel (``session/cancel``, the editor going away) is ``terminal/kill`` then
``terminal/release``; the terminal is released in every case. The output the model gets is
the terminal's (``terminal/output``), capped as the local executor caps it; it reaches our own
event stream once the command ends, while the editor shows it live in the tool call.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from nyzhi.acp import schema as s
from nyzhi.jsonrpc import Connection, RpcError
from nyzhi.tools.env_policy import child_env
from nyzhi.tools.executors.base import (
    DEFAULT_OUTPUT_CAP,
    CappedOutput,
    ExecResult,
    ExecutorError,
    OutputCallback,
)

RUNNING_NOTE = "[running in the editor's terminal]\n"
TOKEN_VAR = "NYZ_TERMINAL"  # set inside the sandbox: the run's token, also in bwrap's argv
CREATE_GRACE = 30.0  # seconds an editor gets to open a terminal
KILL_GRACE = 5.0  # seconds to wait for the editor to kill and release a terminal
# Told which terminal serves which call (agent path, model call id), so the tool call embeds it.
Announce = Callable[[tuple[str, str] | None, str], None]


class ClientTerminalExecutor:
    """Runs sandboxed commands in client terminals; everything else through ``local``."""

    remote = False

    def __init__(self, local: Any, conn: Connection, session_id: Callable[[], str],
                 announce: Announce) -> None:
        self.local = local  # the LocalExecutor this replaces: its env policy, shell, startup
        self.conn = conn
        self.session_id = session_id
        self.announce = announce

    async def run(
        self,
        command: str,
        *,
        cwd: Path | str,
        env: dict[str, str] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (the command's limit, part of the protocol)
        on_output: OutputCallback | None = None,
        sandbox: object | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        mutating: bool | None = None,
    ) -> ExecResult:
        from nyzhi.tools.sandbox import SandboxPolicy

        async def locally() -> ExecResult:
            return await self.local.run(
                command, cwd=cwd, env=env, timeout=timeout, on_output=on_output,
                sandbox=sandbox, output_cap=output_cap, mutating=mutating)

        env_binary = shutil.which("env")
        if not isinstance(sandbox, SandboxPolicy) or env_binary is None:
            return await locally()
        from nyzhi.tools.executors.local import enter_standins

        # the stand-ins for missing protected paths stay until the command has ended
        with await enter_standins(sandbox, cwd) as held:
            return await self._confined(command, cwd, env, timeout, on_output, output_cap,
                                        sandbox, locally, env_binary, held)

    async def _confined(self, command: str, cwd: Path | str, env: dict[str, str] | None,
                        timeout: float | None, on_output: OutputCallback | None,  # noqa: ASYNC109
                        output_cap: int, sandbox: Any, locally: Any,
                        env_binary: str, held: Any) -> ExecResult:
        startup = tuple(getattr(self.local, "startup_commands", ()))
        line = "\n".join([*startup, command]) if startup else command
        # in the session's shared loopback network, as local commands (nyzhi.tools.netns)
        sandbox = await sandbox.joined()
        wrapped = sandbox.wrap(line, cwd, shell=getattr(self.local, "shell", None))
        held.note(wrapped.argv)
        if not wrapped.sandboxed:  # nothing contains its processes: our own process group
            return await locally()
        child = child_env(getattr(self.local, "env_policy", None), env)
        token = f"nyz-terminal-{secrets.token_hex(8)}"  # names this run's bwrap processes
        at = len(sandbox.netns)  # bwrap's place in the argv (after nsenter's, if any)
        argv = ["-i", *(f"{k}={v}" for k, v in child.items()), *wrapped.argv[:at + 1],
                "--setenv", TOKEN_VAR, token, *wrapped.argv[at + 1:]]
        session = self.session_id()
        # Shielded (and bounded): a terminal the editor created must be known, to be killed.
        terminal: str | None = None
        with trio.CancelScope(shield=True), trio.move_on_after(CREATE_GRACE) as waited:
            try:
                created = await self.conn.request("terminal/create", s.write(
                    s.CreateTerminalParams(
                        session, env_binary, tuple(argv),
                        tuple(s.NameValue(k, v) for k, v in child.items()),
                        str(cwd), output_cap)))
                terminal = s.read_params(created, s.CreateTerminalResult,
                                         "terminal/create result").terminal_id
            except (RpcError, s.ParamsError, trio.BrokenResourceError, trio.ClosedResourceError):
                terminal = None
        if waited.cancelled_caught:  # it may still start it: never run the command twice
            with trio.CancelScope(shield=True):
                await sweep(token)
            raise ExecutorError(f"the editor did not open a terminal within {CREATE_GRACE:g} s; "
                                "the command was not run")
        if terminal is None:  # the editor cannot: we run it
            return await locally()
        try:
            return await self._in_terminal(s.write(s.TerminalParams(session, terminal)),
                                           terminal, timeout, on_output, output_cap)
        finally:
            with trio.CancelScope(shield=True):
                await sweep(token)

    async def start_background(self, command: str, **options: Any) -> Any:
        """Background shells run here, under the local executor's sandbox, not in an editor
        terminal: they must die with nyz and take stdin, which an editor's process does not
        (the editor gets a view of their output instead: ``nyzhi.acp.background``)."""
        return await self.local.start_background(command, **options)

    async def _in_terminal(self, ids: Any, terminal: str, seconds: float | None,
                           on_output: OutputCallback | None, output_cap: int) -> ExecResult:
        from nyzhi.tools.execution import CURRENT_CALL

        timed_out = False
        try:
            self.announce(CURRENT_CALL.get(), terminal)
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
                raise ExecutorError(f"the editor's terminal failed: {exc}") from None
            raise
        await self._release(ids)
        status = shown.exit_status or s.TerminalExitStatus()
        code = _exit_code(status)
        buf = CappedOutput(output_cap)
        buf.add(shown.output)
        if timed_out:
            buf.add(f"\n[timed out after {seconds:g} s; the editor's terminal was killed]\n")
        output = buf.text()
        if on_output is not None and output:
            await on_output(output)
        return ExecResult(exit_code=code, output=output, timed_out=timed_out,
                          truncated=buf.truncated or shown.truncated,
                          cancelled=code < 0 and not timed_out, sandboxed=True)

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
    """Give every agent of ``session``'s runtime (the main agent's context and the base one
    that later agents are made from) the client-terminal executor in place of its local one."""
    from nyzhi.core.protocol import Session
    from nyzhi.tools.executors import LocalExecutor

    def wrap(executor: Any) -> Any:
        if isinstance(executor, LocalExecutor):
            return ClientTerminalExecutor(executor, conn, lambda: session.id, announce)
        return executor

    Session(session.rt).wrap_executors(wrap)
