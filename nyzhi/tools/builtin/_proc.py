"""Running a helper program (rg, git) as a real subprocess from a tool.

The process gets its own session (process group) so that cancelling the tool, a timeout, or
stopping early once enough output arrived kills the program *and* anything it started; nothing
outlives the call. stdout and stderr are kept apart because the tools parse stdout.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import trio

from nyzhi import records
from nyzhi.config.procgroup import signal_group
from nyzhi.spawn import open_bound_process
from nyzhi.tools.env_policy import EnvPolicy, child_env

STDERR_CAP = 64 * 1024


@records.frozen
class ProcResult:
    returncode: int
    stdout: bytes
    stderr: bytes
    stopped_early: bool = False  # we killed it after max_lines / max_bytes of stdout

    @property
    def err_text(self) -> str:
        return self.stderr.decode("utf-8", "replace").strip()


async def run_argv(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str] | None = None,
    env_policy: EnvPolicy | None = None,
    max_lines: int | None = None,
    max_bytes: int = 64 * 1024 * 1024,
    keep: Sequence[str] = (),
    started: Callable[[trio.Process], None] | None = None,
) -> ProcResult:
    """Run ``argv`` to completion (or until ``max_lines`` lines of stdout arrived, then kill it).

    Raises ``FileNotFoundError`` if the program is missing. For a time limit, wrap the call in
    ``trio.fail_after``: on cancellation or any error the process group is killed first.
    The environment is ``env_policy`` (None: the default one) applied to ours, plus ``env``;
    ``keep`` names variables passed down whatever the policy says (``child_env``).
    ``started(process)`` is called once it runs (a caller watching it, ``search.run_rg``).
    """
    full_env = child_env(env_policy, env, keep=keep)
    proc = await open_bound_process(  # dies with nyz, SIGKILL included (nyzhi.spawn)
        list(argv), cwd=str(cwd), env=full_env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    out = bytearray()
    err = bytearray()
    stopped = False
    if started is not None:
        started(proc)
    try:
        async with trio.open_nursery() as nursery:

            async def read_stderr() -> None:
                assert proc.stderr is not None
                async for chunk in proc.stderr:
                    if len(err) < STDERR_CAP:
                        err.extend(chunk)

            nursery.start_soon(read_stderr)
            assert proc.stdout is not None
            lines = 0
            async for chunk in proc.stdout:
                out.extend(chunk)
                lines += chunk.count(b"\n")
                if (max_lines is not None and lines >= max_lines) or len(out) >= max_bytes:
                    stopped = True
                    signal_group(proc.pid)
                    break
            await proc.wait()
    finally:
        if proc.returncode is None:
            signal_group(proc.pid)
        with trio.CancelScope(shield=True):
            await proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    await stream.aclose()
    return ProcResult(proc.returncode, bytes(out), bytes(err), stopped)
