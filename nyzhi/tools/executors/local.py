"""Commands on this machine: ``bash -c`` (``sh`` without bash), confined by bwrap when asked."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import attrs

from nyzhi import records
from nyzhi.tools.env_policy import EnvPolicy, child_env
from nyzhi.tools.executors.base import DEFAULT_OUTPUT_CAP, ExecResult, OutputCallback
from nyzhi.tools.executors.process import run_process


@records.define
class LocalExecutor:
    """Runs commands locally in their own process group (see ``process.run_process``).

    With a ``SandboxPolicy`` at read-only or workspace-write the command runs inside bubblewrap;
    if bwrap is missing the policy either raises ``SandboxUnavailable`` (nothing runs) or, when
    configured to fall back, runs it unsandboxed with a warning in the output and the result.

    The child's environment is ``env_policy`` applied to ours, plus ``env`` (``[shell.env]``).
    ``shell`` and ``startup_commands`` are ``[shell] path`` and ``startup_commands``: the
    startup lines run in the same shell, before the command.
    """

    env_policy: EnvPolicy | None = None
    shell: str | None = None
    startup_commands: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    remote: bool = attrs.field(default=False, init=False)
    # ``run`` takes ``detach`` (nyzhi.tools.executors.process.Detach): Ctrl-B
    supports_detach: bool = attrs.field(default=True, init=False)

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
        detach: Any = None,
    ) -> ExecResult:
        wrapped, held = await self._wrapped(command, cwd, sandbox)
        with held:  # the stand-ins stay while the command may stand on them
            return await self._run(wrapped, cwd, env, timeout, on_output, output_cap, detach)

    async def _run(self, wrapped: Any, cwd: Path | str, env: dict[str, str] | None,
                   timeout: float | None, on_output: OutputCallback | None,  # noqa: ASYNC109
                   output_cap: int, detach: Any) -> ExecResult:
        return await run_process(
            wrapped.argv,
            cwd=cwd,
            env=child_env(self.env_policy, env),
            timeout=timeout,
            on_output=on_output,
            output_cap=output_cap,
            note=wrapped.note,
            sandboxed=wrapped.sandboxed,
            detach=detach,
        )

    async def _wrapped(self, command: str, cwd: Path | str,
                       sandbox: object | None) -> tuple[Any, Any]:
        """(the argv to run ``command`` with, the stand-ins held for it) under the sandbox; a
        confined command without network joins the session's shared loopback namespace
        (``nyzhi.tools.netns``) when there is one. The stand-ins for missing protected paths
        are held from before the mounts are worked out: the caller leaves them (``with``)
        once the command has ended."""
        import contextlib

        from nyzhi.tools.sandbox import SandboxPolicy, WrappedCommand, default_shell

        if self.startup_commands:
            command = "\n".join([*self.startup_commands, command])
        if not isinstance(sandbox, SandboxPolicy):
            return (WrappedCommand([self.shell or default_shell(), "-c", command], sandboxed=False),
                    contextlib.nullcontext())
        sandbox = await sandbox.joined()
        held = await enter_standins(sandbox, cwd)
        wrapped = sandbox.wrap(command, cwd, shell=self.shell)
        held.note(wrapped.argv)
        return wrapped, held

    async def start_background(
        self, command: str, *, cwd: Path | str, sandbox: object | None, env: dict[str, str] | None
        = None, **streams: Any,
    ) -> tuple[Any, str, bool]:
        """Start ``command`` as ``run`` would (sandbox, environment, its own session), with
        the given ``stdin``/``stdout``/``stderr``, and hand it over: (the ``BoundProcess``,
        the sandbox note, whether it is confined). The caller owns its whole group, and
        leaves ``proc.standins`` (held for as long as it runs) when it has ended."""
        from nyzhi.spawn import open_bound_process

        wrapped, held = await self._wrapped(command, cwd, sandbox)
        argv = wrapped.argv
        if not wrapped.sandboxed and (setpriv := shutil.which("setpriv")):
            # No bwrap to die with nyz: the command gets the death signal itself (kept
            # across exec, so ``bash -c 'server'`` passes it on to the server).
            argv = [setpriv, "--pdeathsig", "KILL", *argv]
        try:
            proc = await open_bound_process(
                argv, cwd=cwd, env=child_env(self.env_policy, env),
                start_new_session=True, **streams)
        except BaseException:
            held.__exit__(None, None, None)
            raise
        proc.standins = held
        return proc, wrapped.note, wrapped.sandboxed


async def enter_standins(sandbox: Any, cwd: Path | str) -> Any:
    """``sandbox.standins(cwd)`` entered (in a worker thread only when its shared lock
    would wait for another process's clean-up); the caller leaves it with ``with``."""
    import trio

    held = sandbox.standins(cwd)
    if not held.enter(blocking=False):
        await trio.to_thread.run_sync(held.enter)
    return held
