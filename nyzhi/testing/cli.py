"""Running the real ``nyz`` in tests: as an isolated user, from the interpreter running the
tests (so a worktree on ``PYTHONPATH`` runs its own code).

    proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "hi")
    events = json_lines(proc.stdout)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from nyzhi.testing.waits import BOUND_S, settled, until

NYZ = [sys.executable, "-m", "nyzhi"]
XDG_VARS = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


def nyz_env(home: Path) -> dict[str, str]:
    """This process's environment as a fresh user at ``home``: no API keys (so no test reaches
    a real provider), no XDG overrides (everything lives under ``home``), unbuffered output."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1")
    for var in XDG_VARS:
        env.pop(var, None)
    return env


async def run_nyz(
    cwd: Path, home: Path, *args: str, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    """Run ``nyz ARGS`` to completion in ``cwd``; output captured, exit status not checked."""
    return await trio.run_process(
        [*NYZ, *args], cwd=cwd, env=nyz_env(home), stdin=stdin,
        capture_stdout=True, capture_stderr=True, check=False,
    )


def json_lines(out: bytes) -> list[dict[str, Any]]:
    """The JSON objects of a ``stream-json`` output, one per non-empty line."""
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()]


def running_with(marker: str) -> list[int]:
    """Pids of live processes whose command line contains ``marker``: how a test shows that no
    process a tool started outlived a cancel, a close or a signal."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd:
                pids.append(int(entry.name))
    return pids


async def started_running(marker: str, timeout: float = BOUND_S,  # noqa: ASYNC109
                          including: int | None = None) -> list[int]:
    """``running_with(marker)`` once it finds something, and ``including`` among it when given
    (a process a test started may not have exec'd yet when the line it printed arrives);
    AssertionError after ``timeout`` seconds."""
    def found() -> list[int]:
        pids = running_with(marker)
        return pids if including is None or including in pids else []
    return await until(found, timeout=timeout,
                       what=f"a process running with {marker!r}"
                       + ("" if including is None else f" including pid {including}"))


async def settled_running(marker: str, timeout: float = BOUND_S) -> list[int]:  # noqa: ASYNC109
    """``running_with(marker)`` once it is empty, or what is left after ``timeout`` seconds:
    a process killed a moment ago may still be exiting on a busy machine; a leaked one stays."""
    return await settled(lambda: running_with(marker), timeout=timeout)


async def wait_gone(pids: list[int], timeout: float = BOUND_S) -> None:  # noqa: ASYNC109
    """Wait until every process of ``pids`` has ended (zombies count as ended), through a
    pidfd each: how a test waits out the kernel's asynchronous teardown of a sandbox's PID
    namespace after its bwrap was killed by someone else (an editor's terminal)."""
    with trio.fail_after(timeout):
        for pid in pids:
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            try:
                await trio.lowlevel.wait_readable(fd)
            finally:
                os.close(fd)


async def read_until(stream: Any, buf: bytearray, marker: bytes) -> None:
    """Read ``stream`` into ``buf`` until ``marker`` has arrived: how a test waits on what a
    process prints (no sleeps). Fails on EOF or after 30 seconds."""
    with trio.fail_after(30):
        while marker not in buf:
            chunk = await stream.receive_some(4096)
            if not chunk:
                raise AssertionError(f"EOF before {marker!r}; got {bytes(buf)!r}")
            buf += chunk


async def start_chat(cwd: Path, home: Path) -> tuple[trio.Process, bytearray]:
    """``nyz`` with no arguments and a pipe for stdin (the line chat), once its prompt shows."""
    proc = await trio.lowlevel.open_process(
        NYZ, cwd=cwd, env=nyz_env(home),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    out = bytearray()
    await read_until(proc.stdout, out, b"> ")
    return proc, out
