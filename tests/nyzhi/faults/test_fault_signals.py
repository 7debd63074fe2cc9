"""SIGHUP (the terminal closed) and SIGTERM while a ``bash`` call runs, in ``nyz run`` and in
the line chat: the turn is cancelled and settles, the command's processes are killed, the
session is saved with every call paired, and nyz exits with 128 + the signal. Real
subprocesses, real HTTP to the fake LLM, /proc for what is left running."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
import trio

from nyzhi.core.runtime.sessions.pairing import pair_tool_results
from nyzhi.core.runtime.sessions.store import SessionStore
from nyzhi.testing.cli import NYZ, read_until, running_with, settled_running
from nyzhi.testing.cli import nyz_env as env_for
from nyzhi.testing.fake_llm import FakeRequest, open_fake_llm, reply, tool_call
from nyzhi.testing.waits import until

SANDBOX = '[agent.sandbox]\nlevel = "full-access"\n'




def script_for(marker: str, ready: Path):
    """First turn: a bash call that starts a background sleep and says so through the FIFO
    ``ready``; after resume, an answer."""
    command = f"sleep {marker} & echo running > {ready}; sleep {marker}"

    def script(request: FakeRequest):
        if request.last_user_text() == "go on":
            return reply("resumed fine")
        return reply(tool_calls=[tool_call("bash", {"command": command, "timeout": 600})])

    return script


async def wait_running(ready: Path) -> None:
    """Until the command writes its line to the FIFO (opened read-write: no open blocks)."""
    said = b""
    async with trio.lowlevel.FdStream(os.open(ready, os.O_RDWR | os.O_NONBLOCK)) as fifo:
        with trio.fail_after(30):
            while not said.endswith(b"\n"):
                said += await fifo.receive_some()


def sleeps_of(marker: str) -> list[int]:
    """Pids of the command's two ``sleep MARKER`` once exec'd (not the shell, whose command
    line names the marker from the start)."""
    want = f"sleep\0{marker}\0".encode()
    return [pid for pid in running_with(marker)
            if _cmdline(pid) == want]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


async def both_sleeps_running(marker: str) -> None:
    """Until both sleeps have exec'd: the FIFO line comes before the background one may have
    (on a busy machine it often has not), and the test is about killing exec'd children."""
    await until(lambda: len(sleeps_of(marker)) == 2, what=f"two 'sleep {marker}' running")


async def assert_saved_paired_and_resumable(workspace: Path, home: Path, server) -> None:
    store = SessionStore(home / ".local" / "share" / "nyzhi" / "sessions")
    [meta] = store.list()
    session = store.load(meta.id)
    assert session.interrupted == []  # saved on the way out: nothing for a load to repair
    calls = [c.id for m in session.messages for c in m.tool_calls]
    answered = [m.tool_call_id for m in session.messages if m.role == "tool"]
    assert calls and answered == calls
    assert pair_tool_results(session.messages)[1] == []
    resumed = await trio.run_process(
        [*NYZ, "run", "--trust", "full", "--continue", "go on"], cwd=workspace,
        env=env_for(home), capture_stdout=True, capture_stderr=True, check=False,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert resumed.stdout.decode().strip() == "resumed fine"
    body = server.requests[-1].json["messages"]
    sent_calls = [c["id"] for m in body if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    sent_results = [m["tool_call_id"] for m in body if m["role"] == "tool"]
    assert sent_calls == sent_results == calls


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGHUP, 129), (signal.SIGTERM, 143)])
async def test_nyz_run_stopped_mid_bash(signum, code, workspace, home, configure):
    marker = f"98765{signum}"
    ready = workspace / "ready.fifo"
    os.mkfifo(ready)
    async with open_fake_llm(script=script_for(marker, ready)) as server:
        configure(workspace, server.url_for("openai"), extra=SANDBOX)
        proc = await trio.lowlevel.open_process(
            [*NYZ, "run", "--trust", "full", "--output-format", "stream-json", "run it"],
            cwd=workspace, env=env_for(home), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        out = bytearray()
        try:
            await wait_running(ready)
            await both_sleeps_running(marker)
            proc.send_signal(signum)
            with trio.fail_after(30):
                async for chunk in proc.stdout:
                    out += chunk
                status = await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
            left = await settled_running(marker)
            for pid in left:  # a failed run must not leave its sleeps to the next one
                os.kill(pid, signal.SIGKILL)
        assert status == code, bytes(out).decode()
        assert left == []  # what was running when nyz had exited
        assert b'"type": "result"' in out
        await assert_saved_paired_and_resumable(workspace, home, server)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGHUP, 129), (signal.SIGTERM, 143)])
async def test_line_chat_stopped_mid_bash(signum, code, workspace, home, configure):
    marker = f"87654{signum}"
    ready = workspace / "ready.fifo"
    os.mkfifo(ready)
    async with open_fake_llm(script=script_for(marker, ready)) as server:
        configure(workspace, server.url_for("openai"), extra=SANDBOX + '[agent.trust]\nmode = "full"\n')
        proc = await trio.lowlevel.open_process(
            [*NYZ], cwd=workspace, env=env_for(home),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        out = bytearray()
        try:
            await read_until(proc.stdout, out, b"> ")
            await proc.stdin.send_all(b"run it\n")
            await wait_running(ready)
            await both_sleeps_running(marker)
            proc.send_signal(signum)
            with trio.fail_after(30):
                status = await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
            left = await settled_running(marker)
            for pid in left:  # a failed run must not leave its sleeps to the next one
                os.kill(pid, signal.SIGKILL)
        assert status == code, bytes(out).decode()
        assert left == []  # what was running when nyz had exited
        await assert_saved_paired_and_resumable(workspace, home, server)
