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

    from nyzhi.acp.terminal import TerminalRunner
    from nyzhi.core.protocol.elsewhere import ElsewhereExecutor
    from nyzhi.jsonrpc import Connection
    from nyzhi.tools.executors import ExecutorError, LocalExecutor

    agent_end, client_end = trio.testing.memory_stream_pair()
    conn = Connection(agent_end, agent_end, methods={}, notifications={})
    marker = workspace / "ran-locally"
    executor = ElsewhereExecutor(LocalExecutor(),
                                 TerminalRunner(conn, lambda: "s1", lambda *_: None), TOKEN_VAR)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.serve)
        with pytest.raises(ExecutorError, match="did not open a terminal within 30 s"):
            await executor.run(f"touch {marker}", cwd=workspace, timeout=5,
                               sandbox=SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, workspace))
        asked = json.loads((await client_end.receive_some(65536)).split(b"\n")[0])
        nursery.cancel_scope.cancel()
    assert asked["method"] == "terminal/create" and asked["params"]["args"][0] == "-i"
    assert not marker.exists()


async def test_a_background_view_closed_while_the_editor_opens_it_is_still_released(workspace):
    """The process exits before the editor answered ``terminal/create``: the close waits for
    the answer, then kills and releases that terminal (none is left open in the editor). In
    process, over a real JSON-RPC connection to a scripted editor that answers late."""
    import json

    import trio.testing

    from nyzhi.acp.background import BackgroundViews
    from nyzhi.jsonrpc import Connection

    agent_end, client_end = trio.testing.memory_stream_pair()
    conn = Connection(agent_end, agent_end, methods={}, notifications={})
    views = BackgroundViews(conn, lambda: "s1", 4096)
    asked: list[dict] = []
    answer_create = trio.Event()

    async def editor() -> None:
        buffer = b""
        while True:
            buffer += await client_end.receive_some(65536)
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                asked.append(message)
                if message["method"] == "terminal/create":
                    await answer_create.wait()
                    result: dict = {"terminalId": "view-1"}
                elif message["method"] == "terminal/wait_for_exit":
                    result = {"exitCode": 0}
                else:
                    result = {}
                await client_end.send_all(json.dumps(
                    {"jsonrpc": "2.0", "id": message["id"], "result": result}).encode() + b"\n")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.serve)
        nursery.start_soon(editor)
        views.reserve("bg_1")
        assert views.known("bg_1")
        opened = trio.Event()

        async def open_it() -> None:
            assert await views.open("bg_1", str(workspace / "bg_1.log"), 1) == "view-1"
            opened.set()

        nursery.start_soon(open_it)
        closing = trio.Event()

        async def close_it() -> None:
            await views.close("bg_1")
            closing.set()

        nursery.start_soon(close_it)
        with trio.fail_after(30):
            while not asked:
                await trio.testing.wait_all_tasks_blocked()
        assert not closing.is_set()  # waiting for the editor's answer
        answer_create.set()
        with trio.fail_after(30):
            await closing.wait()
            await opened.wait()
        nursery.cancel_scope.cancel()
    methods = [m["method"] for m in asked]
    assert methods == ["terminal/create", "terminal/wait_for_exit", "terminal/kill",
                       "terminal/release"]
    create = asked[0]["params"]
    assert create["command"].endswith("/tail") and create["args"][-1].endswith("bg_1.log")
    assert "--pid=1" in create["args"]
    assert all(m["params"]["terminalId"] == "view-1" for m in asked[1:])
    assert not views.known("bg_1")
