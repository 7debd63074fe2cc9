"""What an editor's terminal leaves behind is ours to end: ``nyzhi.acp.terminal.sweep`` kills
a run's bwrap processes by the token in their command line (an editor's ``terminal/kill``
reaches bwrap only, and bwrap killed while it starts leaves its namespace running)."""

from __future__ import annotations

import random
import secrets
import shutil
import subprocess

import pytest
import trio

from nyzhi.acp.terminal import TOKEN_VAR, sweep
from nyzhi.config.modes import SandboxLevel
from nyzhi.spawn import open_bound_process
from nyzhi.testing.cli import read_until, running_with, wait_gone
from nyzhi.tools.env_policy import child_env
from nyzhi.tools.sandbox import SandboxPolicy

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")


async def test_sweep_ends_a_sandbox_the_editor_did_not_kill(workspace):
    marker = f"300.{random.randrange(10**8):08d}"
    token = f"nyz-terminal-{secrets.token_hex(8)}"
    argv = SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, workspace).wrap(
        f"sleep {marker} & echo started; sleep {marker}", workspace).argv
    argv = [argv[0], "--setenv", TOKEN_VAR, token, *argv[1:]]
    other = await trio.lowlevel.open_process(["sleep", marker])  # no token: not ours to end
    # as our executor starts bwrap: from a thread that lives while it does, so nothing but
    # the sweep ends it (--die-with-parent fires when the forking thread exits)
    proc = await open_bound_process(argv, env=child_env(), stdout=subprocess.PIPE)
    try:
        await read_until(proc.stdout, bytearray(), b"started")
        inside = [pid for pid in running_with(marker) if pid != other.pid]
        await sweep(token)
        with trio.fail_after(10):
            await proc.wait()
        await wait_gone(inside)
        assert running_with(marker) == [other.pid]
    finally:
        for leftover in (proc, other):
            if leftover.returncode is None:
                leftover.kill()
                await leftover.wait()
