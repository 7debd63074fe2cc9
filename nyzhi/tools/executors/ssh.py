"""Commands on another machine through the OpenSSH client (key auth only, never a prompt).

``BatchMode=yes`` makes ssh fail instead of asking for a password or passphrase. Host keys are
trusted on first use (``StrictHostKeyChecking=accept-new``) into a known_hosts file we pass
explicitly, so a changed key is refused rather than silently accepted.

Killing the local ssh process does not kill a remote command by itself (no pty, so sshd sends no
SIGHUP). The remote side therefore runs a small wrapper: the command in its own session, plus a
watchdog reading the connection's stdin; when the connection closes (timeout, cancel, network
loss) stdin hits EOF and the watchdog kills the command's process group. Limits: a remote
``setsid``/``nohup`` escapes, and a remote host without ``setsid`` only gets the top process
killed.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path, PurePosixPath

import attrs

from nyzhi import records
from nyzhi.tools.env_policy import EnvPolicy, child_env
from nyzhi.tools.executors.base import DEFAULT_OUTPUT_CAP, ExecResult, OutputCallback
from nyzhi.tools.executors.process import run_process

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_REMOTE_WRAPPER = """\
cd -- {cwd} || exit 126
{exports}exec 3<&0
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c {cmd} </dev/null 2>&1 3<&- &
else
  sh -c {cmd} </dev/null 2>&1 3<&- &
fi
p=$!
( while read -r _; do :; done
  kill -TERM -$p 2>/dev/null || kill -TERM $p 2>/dev/null
  sleep 2; kill -KILL -$p 2>/dev/null ) <&3 >/dev/null 2>&1 &
w=$!
exec 3<&-
wait $p; rc=$?
kill $w 2>/dev/null
exit $rc
"""


@records.define
class SshExecutor:
    """One ``[[nodes]]`` entry: runs commands as ``user@host:port`` in ``cwd`` (remote path).

    ``run(cwd=...)``: an absolute cwd is used as is on the remote host; a relative one is taken
    under this node's ``cwd`` (or the remote home). Local sandbox policies do not apply remotely.

    Environment: the local ``ssh`` client runs under ``env_policy`` (keeping ``SSH_AUTH_SOCK``,
    its agent socket), so nothing secret is there for ``SendEnv`` to forward; the remote command
    gets its login environment plus the policy's ``set`` values and the call's ``env``.
    """

    host: str
    user: str | None = None
    port: int = 22
    identity_file: Path | None = None
    cwd: str | None = None
    known_hosts: Path | None = None
    connect_timeout: int = 10
    ssh_path: str = "ssh"
    extra_options: tuple[str, ...] = ()
    env_policy: EnvPolicy | None = None
    nyz_command: str = "nyz"  # how nyz is run on this host (teams: a remote member)
    remote: bool = attrs.field(default=True, init=False)

    def ssh_argv(self, remote_command: str) -> list[str]:
        return [*self.ssh_options(), self.target, "--", remote_command]

    @property
    def target(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host

    def ssh_options(self) -> list[str]:
        """``ssh`` and every option, without the target: also git's ``core.sshCommand``."""
        argv = [self.ssh_path, "-T", "-o", "BatchMode=yes"]
        argv += ["-o", "StrictHostKeyChecking=accept-new"]
        argv += ["-o", "LogLevel=ERROR"]  # no "Permanently added ..." chatter in the output
        argv += ["-o", f"ConnectTimeout={self.connect_timeout}", "-o", "ServerAliveInterval=15"]
        if self.known_hosts is not None:
            argv += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        if self.identity_file is not None:
            argv += ["-i", str(self.identity_file), "-o", "IdentitiesOnly=yes"]
        argv += list(self.extra_options)
        argv += ["-p", str(self.port)]
        return argv

    def session_argv(self, command: str, cwd: Path | str | None) -> list[str]:
        """ssh running ``command`` in ``cwd`` as the session itself: its stdin and stdout are
        the connection's (a team member's pipes), so no watchdog wrapper. When the connection
        ends, sshd closes the command's stdin, and a command that stops at end of input (an
        attached member) ends with it."""
        script = f"cd -- {shlex.quote(self.remote_cwd(cwd))} || exit 126\nexec {command}\n"
        return self.ssh_argv(f"sh -c {shlex.quote(script)}")

    def local_env(self) -> dict[str, str]:
        """The ssh client's own environment: the policy's (no provider key, no secret-looking
        name), plus the agent socket it authenticates with."""
        return child_env(self.env_policy, keep=("SSH_AUTH_SOCK",))

    def remote_cwd(self, cwd: Path | str | None) -> str:
        given = PurePosixPath(str(cwd)) if cwd not in (None, "") else PurePosixPath(".")
        if given.is_absolute():
            return str(given)
        base = PurePosixPath(self.cwd) if self.cwd else None
        if base is None:
            return str(given)  # relative to the remote login directory
        return str(base / given) if str(given) != "." else str(base)

    def remote_script(
        self, command: str, cwd: Path | str | None, env: dict[str, str] | None
    ) -> str:
        exports = ""
        for key, value in (env or {}).items():
            if not _ENV_NAME.match(key):
                raise ValueError(f"invalid environment variable name {key!r}")
            exports += f"export {key}={shlex.quote(value)}\n"
        script = _REMOTE_WRAPPER.format(
            cwd=shlex.quote(self.remote_cwd(cwd)), exports=exports, cmd=shlex.quote(command)
        )
        # The login shell may not be POSIX (fish, csh): hand the whole script to sh.
        return f"sh -c {shlex.quote(script)}"

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
        fixed = self.env_policy.set if self.env_policy is not None else {}
        argv = self.ssh_argv(self.remote_script(command, cwd, {**fixed, **(env or {})}))
        return await run_process(
            argv,
            cwd=None,
            env=self.local_env(),
            timeout=timeout,
            on_output=on_output,
            output_cap=output_cap,
            keep_stdin_open=True,
        )
