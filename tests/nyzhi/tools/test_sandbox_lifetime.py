"""How long a sandboxed command may live (issue 42): as long as it needs, and not a moment
longer than nyz.

bwrap's ``--die-with-parent`` death signal is tied to the thread that forked bwrap. Forked from
one of trio's worker threads (retired after 10 s idle), every sandboxed command was SIGKILLed
after about ten seconds. These tests run real ``nyz run`` processes with real bwrap.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time

import pytest
import trio

from nyzhi.spawn import open_bound_process
from nyzhi.testing.cli import NYZ, json_lines, running_with, settled_running
from nyzhi.testing.cli import nyz_env as env_for
from nyzhi.testing.fake_llm import FakeRequest, open_fake_llm, reply, tool_call

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

# More than twice trio's idle-thread lifetime (10 s), so a retired forking thread would show.
LONG = 25


def bash_then_answer(command: str):
    def script(request: FakeRequest):
        if request.tool_results():
            return reply("done")
        return reply(tool_calls=[tool_call("bash", {"command": command, "timeout": 120})])

    return script


async def run_sandboxed(workspace, home, configure, level: str, command: str):
    async with open_fake_llm(script=bash_then_answer(command)) as server:
        configure(workspace, server.url_for("openai"), extra=f'[agent.sandbox]\nlevel = "{level}"\n')
        proc = await trio.run_process(
            [*NYZ, "run", "--trust", "full", "--output-format", "stream-json", "go"],
            cwd=workspace, env=env_for(home), capture_stdout=True, capture_stderr=True,
            check=False,
        )
        return proc, server.requests[-1].tool_results()


@pytest.mark.slow
async def test_long_sandboxed_command_finishes_in_both_confined_levels(
    tmp_path, home, configure
):
    """``sleep 25; echo WOKE`` through ``nyz run`` under workspace-write and read-only (both at
    once, so the suite pays 25 s, not 50): the model gets the output and exit status 0."""
    results = {}

    async def one(level: str) -> None:
        ws = tmp_path / level
        ws.mkdir()
        await trio.run_process(["git", "init", "-q", str(ws)])
        (ws / ".nyzhi").mkdir()
        results[level] = await run_sandboxed(
            ws, home, configure, level, f"sleep {LONG}; echo WOKE-{level}"
        )

    started = time.monotonic()
    async with trio.open_nursery() as nursery:
        for level in ("workspace-write", "read-only"):
            nursery.start_soon(one, level)
    assert time.monotonic() - started >= LONG  # the command really ran that long
    for level, (proc, tool_results) in results.items():
        assert proc.returncode == 0, proc.stderr.decode()
        [result] = tool_results
        assert f"WOKE-{level}" in result, result
        assert "-9" not in result and "timed out" not in result, result
        events = json_lines(proc.stdout)
        assert events[-1]["type"] == "result" and events[-1]["is_error"] is False


async def test_sandboxed_command_dies_with_nyz_on_sigkill(workspace, home, configure):
    """nyz killed with SIGKILL (no clean-up runs): the sandboxed command and its background
    job die with it, because bwrap's death signal fires when nyz's threads die."""
    marker = "7365.2718"
    ready = workspace / "ready.fifo"
    os.mkfifo(ready)
    command = f"sleep {marker} & echo running > {ready}; sleep {marker}"
    async with open_fake_llm(script=bash_then_answer(command)) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[agent.sandbox]\nlevel = "workspace-write"\n')
        proc = await trio.lowlevel.open_process(
            [*NYZ, "run", "--trust", "full", "go"], cwd=workspace, env=env_for(home),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        pidfds: list[int] = []
        try:
            said = b""
            async with trio.lowlevel.FdStream(os.open(ready, os.O_RDWR | os.O_NONBLOCK)) as fifo:
                with trio.fail_after(30):
                    while not said.endswith(b"\n"):
                        said += await fifo.receive_some()
            # bwrap, its init, bash and the two sleeps (bwrap's argv holds the command too)
            sandboxed = running_with(marker)
            assert len(sandboxed) >= 3
            pidfds = [os.pidfd_open(pid) for pid in sandboxed]
            proc.kill()
            await proc.wait()
            with trio.fail_after(10):  # a pidfd turns readable when its process has exited
                for fd in pidfds:
                    await trio.lowlevel.wait_readable(fd)
        finally:
            for fd in pidfds:
                os.close(fd)
            for pid in running_with(marker):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        assert await settled_running(marker) == []


async def test_bound_process_pipes_status_and_missing_program(tmp_path):
    """The spawner's own contract: stdout piped with stderr merged, stdin piped, the exit
    status, and FileNotFoundError for a missing program with no pipe left open."""
    proc = await open_bound_process(
        ["sh", "-c", "read line; echo out:$line; echo err >&2; exit 3"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    await proc.stdin.send_all(b"hello\n")
    await proc.stdin.aclose()
    out = b""
    async for chunk in proc.stdout:
        out += chunk
    assert await proc.wait() == 3
    assert proc.returncode == 3
    assert out == b"out:hello\nerr\n"
    await proc.stdout.aclose()
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(FileNotFoundError):
        await open_bound_process([str(tmp_path / "no-such-program")], stdout=subprocess.PIPE)
    assert len(os.listdir("/proc/self/fd")) == before
