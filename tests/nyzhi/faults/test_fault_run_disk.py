"""``nyz run`` and the line chat when the data directory's disk fills up or is read-only, and
``nyz run > file`` on a full disk: real subprocesses, a real tmpfs
(``nyzhi.testing.machine_faults``), real HTTP to the scripted fake LLM."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import trio

from nyzhi.testing import machine_faults as mf
from nyzhi.testing.cli import NYZ, nyz_env
from nyzhi.testing.fake_llm import open_fake_llm, reply

pytestmark = pytest.mark.skipif(mf.skip_reason() is not None, reason=mf.skip_reason() or "")

# Longer than a page, so the log needs a block the full disk does not have.
ANSWER = "the answer survives. " * 300


def env_for(home: Path, data: Path) -> dict[str, str]:
    """A fresh user at ``home`` whose data directory is ``data``."""
    return {**nyz_env(home), "XDG_DATA_HOME": str(data)}


async def test_full_disk_mid_run_prints_the_answer_says_why_and_exits_1(
    workspace, home, configure, tmp_path
):
    data = tmp_path / "data"
    gate = trio.Event()

    async def script(request):
        await gate.wait()
        return reply(ANSWER)

    with mf.small_tmpfs(data):
        async with open_fake_llm(script=script) as server, trio.open_nursery() as nursery:
            configure(workspace, server.url_for("openai"))
            result: dict = {}

            async def run() -> None:
                with trio.fail_after(30):  # a hang is the bug this test is about
                    result["proc"] = await trio.run_process(
                        [*NYZ, "run", "hello"], cwd=workspace, env=env_for(home, data),
                        capture_stdout=True, capture_stderr=True, check=False,
                    )

            nursery.start_soon(run)
            await server.wait_for_requests(1)  # the session exists: its header is on disk
            mf.fill(data)
            gate.set()
        proc = result["proc"]
        err = proc.stderr.decode()
        assert proc.stdout.decode().strip() == ANSWER.strip()
        assert proc.returncode == 1, err
        assert err.count("no space left on device") == 1, err
        [log] = (data / "nyzhi" / "sessions").glob("*.jsonl")
        assert str(log) in err
        from nyzhi.core.runtime.sessions.store import SessionStore

        session = SessionStore(data / "nyzhi" / "sessions").load(log.stem)
        assert session.events and session.events[0].type == "session_start"
        assert [m.content for m in session.history if m.role == "user"] == ["hello"]


async def test_read_only_data_directory_names_the_action_and_the_fix(
    workspace, home, configure, tmp_path
):
    data = tmp_path / "data"
    with mf.small_tmpfs(data, read_only=True):
        async with open_fake_llm(script=[reply("never asked")]) as server:
            configure(workspace, server.url_for("openai"))
            with trio.fail_after(30):
                proc = await trio.run_process(
                    [*NYZ, "run", "hello"], cwd=workspace, env=env_for(home, data),
                    capture_stdout=True, capture_stderr=True, check=False,
                )
                ephemeral = await trio.run_process(
                    [*NYZ, "run", "--ephemeral", "hello"], cwd=workspace,
                    env=env_for(home, data), capture_stdout=True, capture_stderr=True,
                    check=False,
                )
    err = proc.stderr.decode()
    assert proc.returncode == 1 and proc.stdout == b""
    [line] = err.splitlines()
    assert line.startswith("nyz: could not create the session log in ")
    assert str(data / "nyzhi" / "sessions") in line and "read-only file system" in line
    assert "XDG_DATA_HOME" in line and "--ephemeral" in line
    assert "Errno" not in line and "OSError" not in line
    # the fix it names works
    assert ephemeral.returncode == 0, ephemeral.stderr.decode()
    assert ephemeral.stdout.decode().strip() == "never asked"


async def test_data_directory_already_full_says_so_before_the_run(
    workspace, home, configure, tmp_path
):
    data = tmp_path / "data"
    with mf.small_tmpfs(data):
        (data / "nyzhi" / "sessions").mkdir(parents=True)
        mf.fill(data)
        async with open_fake_llm(script=[reply("never asked")]) as server:
            configure(workspace, server.url_for("openai"))
            with trio.fail_after(30):
                proc = await trio.run_process(
                    [*NYZ, "run", "hello"], cwd=workspace, env=env_for(home, data),
                    capture_stdout=True, capture_stderr=True, check=False,
                )
        left = sorted(p.name for p in (data / "nyzhi" / "sessions").iterdir())
    [line] = proc.stderr.decode().splitlines()
    assert proc.returncode == 1
    assert line.startswith("nyz: could not create the session log in ")
    assert "no space left on device" in line and "--ephemeral" in line
    assert left == []  # no empty log left behind to list as a session


def open_sink(path: Path):
    return open(path, "wb")  # noqa: SIM115 (closed by the caller's with)


@pytest.mark.parametrize("fmt", ["text", "stream-json"])
async def test_answer_redirected_to_a_full_disk_is_one_clear_line(
    fmt, workspace, home, configure, tmp_path
):
    out_dir = tmp_path / "out"
    with mf.small_tmpfs(out_dir):
        mf.fill(out_dir, leave=0)
        async with open_fake_llm(script=[reply(ANSWER)]) as server:
            configure(workspace, server.url_for("openai"))
            with open_sink(out_dir / "answer.txt") as sink, trio.fail_after(30):
                proc = await trio.run_process(
                    [*NYZ, "run", "--output-format", fmt, "hello"], cwd=workspace,
                    env=env_for(home, tmp_path / "data"), stdout=sink, capture_stderr=True, check=False,
                )
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    # (the answer is echoed on stderr as it streams, since stdout is not the terminal)
    assert err.splitlines()[-1] == (
        "nyz: could not write the output to stdout: no space left on device; "
        "free some space on that disk"
    ), err
    assert "Traceback" not in err and "Exception ignored" not in err


async def test_line_chat_on_a_disk_that_fills_up_says_so_and_goes_on(
    workspace, home, configure, tmp_path
):
    data = tmp_path / "data"
    gate = trio.Event()

    async def script(request):
        if request.last_user_text() == "hello":
            await gate.wait()
            return reply(ANSWER)
        return reply("still here")

    with mf.small_tmpfs(data):
        async with open_fake_llm(script=script) as server:
            configure(workspace, server.url_for("openai"))
            proc = await trio.lowlevel.open_process(
                [*NYZ], cwd=workspace, env=env_for(home, data),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )
            out = bytearray()
            try:
                with trio.fail_after(30):
                    while b"> " not in out:
                        out += await proc.stdout.receive_some(65536)
                    await proc.stdin.send_all(b"hello\n")
                    await server.wait_for_requests(1)
                    mf.fill(data)
                    gate.set()
                    # the answer, the error said once, and the prompt again: the chat goes on
                    while not (b"no space left on device" in out and out.endswith(b"> ")):
                        chunk = await proc.stdout.receive_some(65536)
                        assert chunk, bytes(out).decode()
                        out += chunk
                    await proc.stdin.send_all(b"are you there?\n")
                    while b"still here" not in out:
                        chunk = await proc.stdout.receive_some(65536)
                        assert chunk, bytes(out).decode()
                        out += chunk
                    await proc.stdin.send_all(b"/exit\n")
                    status = await proc.wait()
            finally:
                if proc.returncode is None:
                    proc.kill()
    text = bytes(out).decode()
    assert text.count("no space left on device") == 1, text
    assert "error: session: could not write the session log" in text
    assert status == 1
