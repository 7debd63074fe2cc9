"""The editor-terminal executor in process. What an editor's terminal leaves behind is ours
to end: ``nyzhi.acp.terminal.sweep`` kills a run's bwrap processes by the token in their
command line (an editor's ``terminal/kill`` reaches bwrap only, and bwrap killed while it
starts leaves its namespace running). An editor that never opens the terminal gets a refusal."""

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


async def test_an_editor_that_never_opens_the_terminal_gets_a_refusal(workspace,
                                                                      autojump_clock):
    """``terminal/create`` never answered: after the grace the call is a tool error and the
    command runs nowhere else (the editor may still start it: never twice). In process, on
    trio's autojump clock, over a real JSON-RPC connection whose client stays silent."""
    import json

    import trio.testing

    from nyzhi.acp.jsonrpc import Connection
    from nyzhi.acp.terminal import ClientTerminalExecutor
    from nyzhi.tools.executors import ExecutorError, LocalExecutor

    agent_end, client_end = trio.testing.memory_stream_pair()
    conn = Connection(agent_end, agent_end, methods={}, notifications={})
    marker = workspace / "ran-locally"
    executor = ClientTerminalExecutor(LocalExecutor(), conn, lambda: "s1", lambda *_: None)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.serve)
        with pytest.raises(ExecutorError, match="did not open a terminal within 30 s"):
            await executor.run(f"touch {marker}", cwd=workspace, timeout=5,
                               sandbox=SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, workspace))
        asked = json.loads((await client_end.receive_some(65536)).split(b"\n")[0])
        nursery.cancel_scope.cancel()
    assert asked["method"] == "terminal/create" and asked["params"]["args"][0] == "-i"
    assert not marker.exists()
