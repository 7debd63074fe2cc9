"""LocalExecutor and MonitoredExecutor on real subprocesses."""

from pathlib import Path

import pytest
import trio
from _procs import marker_seconds, settled_alive, started_alive

from nyzhi.tools.base import SandboxLevel
from nyzhi.tools.executors import (
    CappedOutput,
    CommandRefused,
    LocalExecutor,
    MonitoredExecutor,
    classify,
)
from nyzhi.tools.sandbox import SandboxPolicy


async def test_streams_merged_output_and_exit_code(tmp_path: Path):
    chunks: list[str] = []
    got_first = trio.Event()

    async def on_output(text: str) -> None:
        chunks.append(text)
        got_first.set()

    # The command blocks until the first chunk has been delivered: proves streaming, no sleeps.
    fifo = tmp_path / "go"
    import os

    os.mkfifo(fifo)
    async with trio.open_nursery() as nursery:
        result = {}

        async def run():
            result["r"] = await LocalExecutor().run(
                f"echo out; echo err >&2; cat {fifo} >/dev/null; echo after; exit 7",
                cwd=tmp_path,
                on_output=on_output,
            )

        nursery.start_soon(run)
        await got_first.wait()
        assert "out" in "".join(chunks) and "after" not in "".join(chunks)
        await trio.to_thread.run_sync(lambda: fifo.write_text("x"))
    r = result["r"]
    assert r.exit_code == 7 and not r.timed_out and not r.truncated
    assert r.output.split() == ["out", "err", "after"]
    assert "".join(chunks) == r.output


async def test_cwd_and_env(tmp_path: Path):
    r = await LocalExecutor().run('pwd; echo "$NYZ_X"', cwd=tmp_path, env={"NYZ_X": "v1"})
    assert r.output.split() == [str(tmp_path), "v1"]


async def test_output_cap_keeps_head_and_tail(tmp_path: Path):
    cmd = "echo FIRST; seq 1 100000; echo LAST"
    r = await LocalExecutor().run(cmd, cwd=tmp_path, output_cap=2000)
    assert r.truncated and r.exit_code == 0
    assert r.output.startswith("FIRST") and r.output.rstrip().endswith("LAST")
    assert "omitted" in r.output and len(r.output) < 2200


def test_capped_output_unit():
    buf = CappedOutput(10)
    for piece in ["abc", "defgh", "ijklmnop", "qrstuvwxyz"]:
        buf.add(piece)
    assert buf.truncated and buf.total == 26
    text = buf.text()
    assert text.startswith("abcde") and text.endswith("vwxyz") and "16 characters" in text
    small = CappedOutput(100)
    small.add("hello")
    assert small.text() == "hello" and not small.truncated


async def test_timeout_kills_the_whole_process_group(tmp_path: Path):
    mark = marker_seconds()
    r = await LocalExecutor().run(f"sleep {mark} & sleep {mark}", cwd=tmp_path, timeout=0.3)
    assert r.timed_out and "timed out" in r.output
    assert await settled_alive(f"sleep {mark}") == []


async def test_background_jobs_do_not_outlive_a_finished_command(tmp_path: Path):
    mark = marker_seconds()
    r = await LocalExecutor().run(f"sleep {mark} & echo started", cwd=tmp_path, timeout=10)
    assert r.exit_code == 0 and "started" in r.output and not r.timed_out
    assert await settled_alive(f"sleep {mark}") == []


@pytest.mark.parametrize("sandboxed", [False, True])
async def test_cancel_kills_the_whole_process_group(tmp_path: Path, sandboxed: bool):
    mark = marker_seconds()
    ready = trio.Event()
    sandbox = SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, tmp_path) if sandboxed else None

    async def on_output(text: str) -> None:
        if "ready" in text:
            ready.set()

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: LocalExecutor().run(
                    f"sleep {mark} & echo ready; wait",
                    cwd=tmp_path,
                    on_output=on_output,
                    sandbox=sandbox,
                )
            )
            await ready.wait()
            assert await started_alive(f"sleep {mark}")  # it really was running
            scope.cancel()
    assert scope.cancelled_caught
    assert await settled_alive(f"sleep {mark}") == []


async def test_unsandboxed_fallback_is_reported_in_output_and_result(tmp_path: Path):
    policy = SandboxPolicy(
        SandboxLevel.WORKSPACE_WRITE,
        tmp_path,
        bwrap_path="/nonexistent/bwrap",
        bwrap_fallback="unsandboxed",
    )
    seen = []

    async def on_output(text):
        seen.append(text)

    r = await LocalExecutor().run("echo hi", cwd=tmp_path, sandbox=policy, on_output=on_output)
    assert not r.sandboxed and "WITHOUT" in r.note and "WITHOUT" in r.output
    assert "WITHOUT" in seen[0] and "hi" in r.output


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat a.txt | grep foo | wc -l",
        "git status && git log --oneline -5 && git diff HEAD~1",
        "find . -name '*.py'",
        "grep -r TODO src 2>/dev/null",
        "git branch -a",
    ],
)
def test_classifier_allows_read_only(command):
    assert classify(command) is None


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        "echo x > file",
        "cat a >> b",
        "find . -name '*.tmp' -delete",
        "find . -exec rm {} +",
        "git commit -m x",
        "git branch -D main",
        "git push",
        "ls; touch x",
        "echo $(rm -rf x)",
        "ls `touch x`",
        "sort -o out in",
        "python3 -c 'print(1)'",
        "FOO=1 ls",
        "sed -i s/a/b/ f",
        "cat 'unterminated",
        "tee out",
    ],
)
def test_classifier_refuses_mutating(command):
    assert classify(command)


async def test_monitored_refuses_mutating_and_runs_read_only(tmp_path: Path):
    (tmp_path / "a.txt").write_text("hello\n")
    mon = MonitoredExecutor(LocalExecutor())
    r = await mon.run("cat a.txt", cwd=tmp_path)
    assert r.output == "hello\n"
    with pytest.raises(CommandRefused, match="read-only") as err:
        await mon.run("rm a.txt", cwd=tmp_path)
    assert "`rm` is not on the read-only allowlist" in str(err.value)
    assert (tmp_path / "a.txt").exists()
    with pytest.raises(CommandRefused, match="marked it as mutating"):
        await mon.run("ls", cwd=tmp_path, mutating=True)
