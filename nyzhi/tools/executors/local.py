"""Commands on this machine: ``bash -c`` (``sh`` without bash), confined by bwrap when asked."""

from __future__ import annotations

from pathlib import Path

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
        from nyzhi.tools.sandbox import SandboxPolicy, WrappedCommand, default_shell

        if self.startup_commands:
            command = "\n".join([*self.startup_commands, command])
        if isinstance(sandbox, SandboxPolicy):
            wrapped = sandbox.wrap(command, cwd, shell=self.shell)
        else:
            wrapped = WrappedCommand([self.shell or default_shell(), "-c", command], sandboxed=False)
        return await run_process(
            wrapped.argv,
            cwd=cwd,
            env=child_env(self.env_policy, env),
            timeout=timeout,
            on_output=on_output,
            output_cap=output_cap,
            note=wrapped.note,
            sandboxed=wrapped.sandboxed,
        )
