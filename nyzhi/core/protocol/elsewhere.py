"""Commands a front end runs in a process of its own (an editor's terminal: ACP's
``terminal/create``), confined exactly as the session's bash would confine them.

``Session.run_commands_elsewhere(runner, tag_var)`` gives every agent of the session an
``ElsewhereExecutor`` in place of its local one, so the bash tool itself is unchanged and the
gates have already run when a command gets here. The runner is handed *our* command line,
never the model's text, as a ``ConfinedCommand``: ``env -i`` with our ``child_env``
(``[shell.env]``), then the same bubblewrap argv the local executor would start (in the
session's shared loopback network, with stand-ins for missing protected paths held until the
command ends), so nothing the runner's process adds (its environment, its cwd) reaches the
command. Only what bubblewrap contains goes elsewhere: in bwrap's PID namespace killing bwrap
kills every process the command started, the guarantee our own process-group handling gives.
Commands bwrap does not wrap (``full-access``, no bwrap), commands the runner declines (it
answers None) and background shells (which must die with nyz and take stdin) run through the
local executor as before.

The output the model gets is the runner's, capped as the local executor caps it.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from nyzhi import records

OutputCallback = Callable[[str], Awaitable[None]]


@records.frozen
class ConfinedCommand:
    """A command as the session would start it: run ``program`` with ``args`` (``env -i``, the
    environment, the bubblewrap argv with the shell line), in ``cwd``; ``env`` is that
    environment again, for a runner that shows it. Inside the sandbox ``tag_var`` is set to
    ``token``, which also stands in bwrap's argv: whatever of this run a runner leaves behind
    can be found by it. ``call``: the (agent path, model call id) the command serves;
    ``timeout``: seconds it may take (None: no limit); ``output_cap``: characters kept."""

    program: str
    args: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    token: str
    call: tuple[str, str] | None
    timeout: float | None
    output_cap: int


@records.frozen
class Ran:
    """What a runner saw: the exit code (minus the signal that killed it), the output (its
    own ``truncated`` when it kept less), whether the timeout ended it, and a ``note`` put
    after the output (what the runner did about a timeout)."""

    exit_code: int
    output: str
    truncated: bool = False
    timed_out: bool = False
    note: str = ""


class ElsewhereError(Exception):
    """The runner could not run the command, or its process failed: one line, the tool
    call's error (never run twice: the runner raises this rather than answer None once it
    may have started the command)."""


Runner = Callable[[ConfinedCommand, OutputCallback | None], Awaitable[Ran | None]]


class ElsewhereExecutor:
    """Runs sandboxed commands through ``runner``; everything else through ``local``."""

    remote = False

    def __init__(self, local: Any, runner: Runner, tag_var: str) -> None:
        self.local = local  # the LocalExecutor this replaces: its env policy, shell, startup
        self.runner = runner
        self.tag_var = tag_var

    async def run(self, command: str, *, cwd: Path | str, env: dict[str, str] | None = None,
                  timeout: float | None = None,  # noqa: ASYNC109 (the command's limit)
                  on_output: OutputCallback | None = None, sandbox: object | None = None,
                  output_cap: int | None = None, mutating: bool | None = None) -> Any:
        from nyzhi.tools.executors.base import DEFAULT_OUTPUT_CAP
        from nyzhi.tools.executors.local import enter_standins
        from nyzhi.tools.sandbox import SandboxPolicy

        cap = DEFAULT_OUTPUT_CAP if output_cap is None else output_cap

        async def locally() -> Any:
            return await self.local.run(
                command, cwd=cwd, env=env, timeout=timeout, on_output=on_output,
                sandbox=sandbox, output_cap=cap, mutating=mutating)

        env_binary = shutil.which("env")
        if not isinstance(sandbox, SandboxPolicy) or env_binary is None:
            return await locally()
        # the stand-ins for missing protected paths stay until the command has ended
        with await enter_standins(sandbox, cwd) as held:
            confined = await self._confine(command, cwd, env, timeout, cap, sandbox,
                                           env_binary, held)
            ran = None
            if confined is not None:
                try:
                    ran = await self.runner(confined, on_output)
                except ElsewhereError as exc:
                    from nyzhi.tools.executors.base import ExecutorError

                    raise ExecutorError(str(exc)) from None
            if ran is None:
                return await locally()
            return await _result(ran, cap, on_output)

    async def _confine(self, command: str, cwd: Path | str, env: dict[str, str] | None,
                       timeout: float | None, output_cap: int,  # noqa: ASYNC109
                       sandbox: Any, env_binary: str, held: Any) -> ConfinedCommand | None:
        """The command as the session would start it; None when bwrap would not contain
        its processes (they then need our own process group: run locally)."""
        from nyzhi.tools.env_policy import child_env
        from nyzhi.tools.execution import CURRENT_CALL

        startup: tuple[str, ...] = tuple(getattr(self.local, "startup_commands", None) or ())
        line = "\n".join([*startup, command]) if startup else command
        # in the session's shared loopback network, as local commands (nyzhi.tools.netns)
        sandbox = await sandbox.joined()
        wrapped = sandbox.wrap(line, cwd, shell=getattr(self.local, "shell", None))
        held.note(wrapped.argv)
        if not wrapped.sandboxed:
            return None
        child = child_env(getattr(self.local, "env_policy", None), env)
        token = f"nyz-terminal-{secrets.token_hex(8)}"  # names this run's bwrap processes
        at = len(sandbox.netns)  # bwrap's place in the argv (after nsenter's, if any)
        args = ("-i", *(f"{k}={v}" for k, v in child.items()), *wrapped.argv[:at + 1],
                "--setenv", self.tag_var, token, *wrapped.argv[at + 1:])
        return ConfinedCommand(program=env_binary, args=args, env=child, cwd=str(cwd),
                               token=token, call=CURRENT_CALL.get(), timeout=timeout,
                               output_cap=output_cap)

    async def start_background(self, command: str, **options: Any) -> Any:
        """Background shells run here, under the local executor's sandbox, never elsewhere:
        they must die with nyz and take stdin, which a front end's process does not."""
        return await self.local.start_background(command, **options)


async def _result(ran: Ran, output_cap: int, on_output: OutputCallback | None) -> Any:
    """``ran`` as the local executor's ``ExecResult``, its output capped as that caps it."""
    from nyzhi.tools.executors.base import CappedOutput, ExecResult

    buf = CappedOutput(output_cap)
    buf.add(ran.output)
    if ran.note:
        buf.add(ran.note)
    output = buf.text()
    if on_output is not None and output:
        await on_output(output)
    return ExecResult(exit_code=ran.exit_code, output=output, timed_out=ran.timed_out,
                      truncated=buf.truncated or ran.truncated,
                      cancelled=ran.exit_code < 0 and not ran.timed_out, sandboxed=True)


def run_commands_elsewhere(rt: Any, runner: Runner, tag_var: str) -> None:
    """Give every agent of ``rt`` (the main agent's context and the base one later agents are
    made from) an ``ElsewhereExecutor`` over ``runner`` in place of its local executor."""
    from nyzhi.tools.executors import LocalExecutor

    for context in {id(c): c for c in (rt.tooling.context,
                                       rt.main_agent.tooling.context)}.values():
        if isinstance(context.executor, LocalExecutor):
            context.executor = ElsewhereExecutor(context.executor, runner, tag_var)


__all__ = ["ConfinedCommand", "ElsewhereError", "ElsewhereExecutor", "OutputCallback", "Ran",
           "Runner", "run_commands_elsewhere"]
