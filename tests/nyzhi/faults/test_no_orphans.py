"""No orphan of any kind (issue 55): nyz killed with SIGKILL while each kind of child it starts
is running (a slow rg over a FIFO, a git stuck reading its config, a slow hook, an MCP stdio
server, a process teammate; the browser in test_browser_e2e), and then none of its processes is left.

What is left is checked with pidfds, opened on every process of nyz's tree *before* the kill
(so a reused pid cannot fool the check) and waited on, bounded: the kernel delivers the death
signals asynchronously, so a child killed a moment ago may still be exiting on a busy machine.
Real nyz, real children, the fake LLM over loopback HTTP."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from nyzhi.testing.cli import NYZ, nyz_env
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call
from nyzhi.testing.waits import BOUND_S, descendants, pidfd_exited, until

HELPER_SERVER = Path(__file__).parents[1] / "mcp" / "helper_server.py"


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


async def kill_nyz_while(workspace: Path, home: Path, args: list[str],
                         is_child: Callable[[list[str]], bool], what: str) -> None:
    """Start ``nyz ARGS``, wait until a descendant ``is_child`` runs, SIGKILL nyz, and assert
    that every process of its tree has ended (bounded, through pidfds)."""
    nyz = await trio.lowlevel.open_process(
        [*NYZ, *args], cwd=workspace, env=nyz_env(home), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    fds: dict[int, int] = {}
    try:
        await until(lambda: [p for p in descendants(nyz.pid) if is_child(_cmdline(p))],
                    what=what)
        for pid in descendants(nyz.pid):
            try:
                fds[pid] = os.pidfd_open(pid)
            except ProcessLookupError:
                pass
        kinds = {pid: " ".join(_cmdline(pid))[:120] for pid in fds}
        nyz.kill()
        await nyz.wait()
        with trio.move_on_after(BOUND_S):
            for fd in fds.values():
                await trio.lowlevel.wait_readable(fd)
        left = [kinds[pid] for pid, fd in fds.items() if not pidfd_exited(fd)]
        assert left == [], f"left running {BOUND_S:g} s after nyz was SIGKILLed: {left}"
    finally:
        if nyz.returncode is None:
            nyz.kill()
            await nyz.wait()
        for fd in fds.values():
            if not pidfd_exited(fd):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            os.close(fd)


def _program(argv: list[str], name: str) -> bool:
    return bool(argv) and os.path.basename(argv[0]) == name


def _one_call(name: str, args: dict) -> Callable:
    """The model calls ``name`` once, then (if ever asked again) says done."""
    def script(request):
        if request.tool_results():
            return reply("done")
        return reply(tool_calls=[tool_call(name, args)])
    return script


@pytest.mark.skipif(shutil.which("rg") is None, reason="rg is not installed")
async def test_an_rg_stuck_on_a_fifo_dies_with_nyz(workspace, home, configure):
    # rg reads .ignore for its ignore rules. A FIFO with a writer but no data lets rg's open
    # succeed and blocks its read for good (glob's watch ends an rg blocked in the open of a
    # FIFO with no writer, so that one never stays): the test holds the writer end.
    os.mkfifo(workspace / ".ignore")
    writer = os.open(workspace / ".ignore", os.O_RDWR | os.O_NONBLOCK)
    try:
        async with open_fake_llm(script=_one_call("glob", {"pattern": "*.py"})) as server:
            configure(workspace, server.url_for("openai"))
            await kill_nyz_while(workspace, home, ["run", "--trust", "full", "find the files"],
                                 lambda argv: _program(argv, "rg") and "--files" in argv,
                                 "glob's rg running")
    finally:
        os.close(writer)


async def test_a_git_stuck_reading_its_config_dies_with_nyz(workspace, home, configure):
    async with open_fake_llm(script=_one_call("git_status", {})) as server:
        configure(workspace, server.url_for("openai"))
        config = workspace / ".git" / "config"
        config.unlink()
        os.mkfifo(config)  # git opens its config first, and blocks there
        await kill_nyz_while(workspace, home, ["run", "--trust", "full", "what changed?"],
                             lambda argv: _program(argv, "git"), "a git running")


async def test_a_slow_hook_and_what_it_started_die_with_nyz(workspace, home, configure):
    marker = "7654329"
    # two processes: dash does not exec the last command, so the sleep is the shell's child
    hook = (f'[[agent.hooks]]\nevent = "session_start"\n'
            f'command = "sleep {marker}; echo never"\ntimeout = 600\n')
    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"), extra=hook)
        await kill_nyz_while(workspace, home, ["run", "--trust", "full", "hello"],
                             lambda argv: argv == ["sleep", marker], "the hook's sleep")


async def test_an_unsandboxed_commands_background_job_dies_with_nyz(workspace, home, configure):
    """full-access: no bwrap namespace to take the tree, so the guard does."""
    marker = "7654331"
    script = _one_call("bash", {"command": f"sleep {marker} & sleep {marker}", "timeout": 600})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[agent.sandbox]\nlevel = "full-access"\n')
        await kill_nyz_while(workspace, home, ["run", "--trust", "full", "run it"],
                             lambda argv: argv == ["sleep", marker], "the command's sleeps")


async def test_an_mcp_stdio_server_dies_with_nyz(workspace, home, configure):
    async def never(request):
        await trio.sleep_forever()

    mcp = (f'[mcp.servers.helper]\ncommand = "{sys.executable}"\n'
           f'args = ["{HELPER_SERVER}"]\n')
    async with open_fake_llm(script=never) as server:
        configure(workspace, server.url_for("openai"), extra=mcp)
        await kill_nyz_while(workspace, home, ["run", "--trust", "full", "hello"],
                             lambda argv: str(HELPER_SERVER) in argv, "the MCP server")


async def test_a_process_teammate_dies_with_its_lead(workspace, home, configure):
    async def never(request):
        await trio.sleep_forever()

    script = PerAgent({"LEAD-TASK": [never], "AMY-JOB": [never]})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        await kill_nyz_while(
            workspace, home,
            ["team", "start", "orph", "--members", "amy:worker", "--teammate-mode", "process",
             "--headless", "--task", "LEAD-TASK"],
            lambda argv: "member" in argv and "amy" in argv, "the process teammate")


# The browser: tests/nyzhi/core/runtime/test_browser_e2e.py kills nyz with SIGKILL while its browser is
# open and waits, through pidfds, for every browser process to end.
