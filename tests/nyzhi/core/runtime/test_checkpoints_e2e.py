"""Checkpoints and ``nyz rewind`` as a user runs them: three ``nyz run`` turns against the fake
LLM that edit files (one edit made by a subagent spawned with the real ``worker`` role), then
the headless rewind of the conversation only, the code only, and both, which refuses to
overwrite a file changed outside nyz until ``--force`` and keeps what it overwrote."""

from __future__ import annotations

import json
import os
from pathlib import Path

import trio

from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import FakeRequest, PerAgent, open_fake_llm, reply, tool_call


def spawned_ids(request: FakeRequest) -> list[str]:
    ids = []
    for text in request.tool_results():
        try:
            ids.append(json.loads(text)["agent_id"])
        except (ValueError, KeyError, TypeError):
            pass
    return ids


def three_turns() -> PerAgent:
    """Turn 1 writes a.txt; turn 2 edits it and has a worker write b.txt; turn 3 edits b.txt
    and writes c.txt in a new directory."""
    return PerAgent({
        "TURN-ONE": [
            reply(tool_calls=[tool_call("write", {"file_path": "a.txt", "content": "one\n"})]),
            reply("turn one done"),
            reply(tool_calls=[
                tool_call("edit", {"file_path": "a.txt", "old_string": "one",
                                   "new_string": "two"}),
                tool_call("spawn_agent", {"message": "WORKER-JOB write b.txt",
                                          "agent_type": "worker"}),
            ]),
            lambda req: reply(tool_calls=[tool_call("wait", {"ids": spawned_ids(req),
                                                             "timeout_ms": 60000})]),
            reply("turn two done"),
            reply(tool_calls=[tool_call("read", {"file_path": "b.txt"})]),
            reply(tool_calls=[
                tool_call("edit", {"file_path": "b.txt", "old_string": "worker",
                                   "new_string": "main"}),
                tool_call("write", {"file_path": "sub/c.txt", "content": "three\n"}),
            ]),
            reply("turn three done"),
        ],
        # After the rewind to before prompt 1, the thread starts with the next prompt.
        "AFTER-REWIND": [reply("answer after the rewind")],
        "WORKER-JOB": [
            reply(tool_calls=[tool_call("write", {"file_path": "b.txt",
                                                  "content": "from worker\n"})]),
            reply("worker wrote b.txt"),
        ],
    })


async def nyz(ws: Path, home: Path, *args: str) -> tuple[int, str, str]:
    with trio.fail_after(120):
        proc = await run_nyz(ws, home, *args)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def session_id(home: Path) -> str:
    logs = list((home / ".local/share/nyzhi/sessions").glob("*.jsonl"))
    assert len(logs) == 1
    return logs[0].name[: -len(".jsonl")]


async def test_rewind_conversation_code_and_both_after_three_turns(workspace, home, configure):
    script = three_turns()
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        for prompt, answer in (("TURN-ONE write a", "turn one done"),
                               ("TURN-TWO edit a, b by a worker", "turn two done"),
                               ("TURN-THREE edit b, write c", "turn three done")):
            flags = ("--continue",) if prompt != "TURN-ONE write a" else ()
            code, out, err = await nyz(workspace, home, "run", *flags, "-y", "full", prompt)
            assert code == 0, err
            assert answer in out
        assert len(script.seen["WORKER-JOB"]) == 2  # the worker really ran
        assert (workspace / "a.txt").read_text() == "two\n"
        assert (workspace / "b.txt").read_text() == "from main\n"
        assert (workspace / "sub" / "c.txt").read_text() == "three\n"
        sid = session_id(home)

        code, out, err = await nyz(workspace, home, "rewind", sid[:8])
        assert code == 0, err
        assert "1. TURN-ONE write a" in out and "3. TURN-THREE edit b, write c" in out
        assert "2 file(s) changed" in out  # turn two: a.txt and the worker's b.txt
        assert "shell commands did are not tracked" in out

        # The conversation only: back to before prompt 3; the files stay as they are.
        code, out, err = await nyz(workspace, home, "rewind", sid, "--to", "3",
                                   "--conversation")
        assert code == 0, err
        assert "conversation: back to" in out
        assert (workspace / "sub" / "c.txt").read_text() == "three\n"
        code, out, _ = await nyz(workspace, home, "rewind", sid)
        assert "2. TURN-TWO" in out and "TURN-THREE" not in out

        # The code only: back to before prompt 2; the worker's b.txt goes, c.txt and sub/ too.
        code, out, err = await nyz(workspace, home, "rewind", sid, "--to", "2", "--code")
        assert code == 0, err
        assert (workspace / "a.txt").read_text() == "one\n"
        assert not (workspace / "b.txt").exists()
        assert not (workspace / "sub").exists()
        assert "restored a.txt" in out and "removed b.txt" in out
        code, out, _ = await nyz(workspace, home, "rewind", sid)
        assert "2. TURN-TWO" in out  # the conversation was not touched

        # Both, to before prompt 1: a.txt was changed outside nyz, so nothing is written...
        (workspace / "a.txt").write_text("my own edit\n")
        code, out, err = await nyz(workspace, home, "rewind", sid, "--to", "1")
        assert code == 1
        assert "changed outside nyz" in err and "a.txt" in err and "--force" in err
        assert (workspace / "a.txt").read_text() == "my own edit\n"
        code, out, _ = await nyz(workspace, home, "rewind", sid)
        assert "2. TURN-TWO" in out  # ...and the conversation is untouched too
        # ...until --force; what it overwrote is kept as a checkpoint of its own.
        code, out, err = await nyz(workspace, home, "rewind", sid, "--to", "1", "--force")
        assert code == 0, err
        assert not (workspace / "a.txt").exists()
        kept = next(w for w in out.split() if w.startswith("undo-restore-"))
        code, out, _ = await nyz(workspace, home, "rewind", sid)
        assert "1. TURN-ONE" not in out and "(none in the conversation now)" in out
        assert kept in out
        code, out, err = await nyz(workspace, home, "rewind", sid, "--to", kept, "--code")
        assert code == 0, err
        assert (workspace / "a.txt").read_text() == "my own edit\n"

        # The session continues from the rewound conversation: no earlier prompt is sent.
        code, out, err = await nyz(workspace, home, "run", "--session", sid, "AFTER-REWIND")
        assert code == 0, err
        assert "answer after the rewind" in out
        sent = [text for role, text in server.requests[-1].transcript() if role == "user"]
        assert sent == ["AFTER-REWIND"]


async def test_checkpoints_live_under_xdg_state_not_in_the_workspace(workspace, home,
                                                                     configure):
    script = [reply(tool_calls=[tool_call("read", {"file_path": "a.txt"})]),
              reply(tool_calls=[tool_call("write", {"file_path": "a.txt", "content": "A"})]),
              reply(tool_calls=[tool_call("write", {"file_path": "a.txt", "content": "B"})]),
              reply("done")]
    (workspace / "a.txt").write_text("the original\n")
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        code, _out, err = await nyz(workspace, home, "run", "-y", "full", "rewrite a")
        assert code == 0, err
    assert (workspace / "a.txt").read_text() == "B"
    store = home / ".local/state/nyzhi/checkpoints"
    blobs = [p for p in (store / "blobs").rglob("*") if p.is_file()]
    # Content-addressed: one blob, the bytes before the turn's first change of a.txt.
    assert [p.read_bytes() for p in blobs] == [b"the original\n"]
    assert blobs[0].name == __import__("hashlib").sha256(b"the original\n").hexdigest()
    assert oct(os.stat(store / "blobs").st_mode & 0o777) == "0o700"
    assert not [p for p in workspace.rglob("*") if "checkpoint" in p.name]


async def test_a_checkpoint_survives_kill_9_mid_turn(workspace, home, configure):
    import signal
    import subprocess

    from nyzhi.testing.cli import NYZ, nyz_env
    from nyzhi.testing.fake_llm import hang

    (workspace / "a.txt").write_text("the original\n")
    script = [reply(tool_calls=[tool_call("read", {"file_path": "a.txt"})]),
              reply(tool_calls=[tool_call("write", {"file_path": "a.txt", "content": "new"})]),
              hang()]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await trio.lowlevel.open_process(
            [*NYZ, "run", "-y", "full", "rewrite a"], cwd=workspace, env=nyz_env(home),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with trio.fail_after(60):
                await server.wait_for_requests(3)  # the write's result is being answered
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
    assert (workspace / "a.txt").read_text() == "new"
    code, out, err = await nyz(workspace, home, "rewind", session_id(home), "--to", "1",
                               "--code")
    assert code == 0, err
    assert "restored a.txt" in out
    assert (workspace / "a.txt").read_text() == "the original\n"


async def test_the_line_chat_has_the_commands_and_an_ephemeral_journal_goes(workspace, home,
                                                                           configure):
    script = [reply(tool_calls=[tool_call("write", {"file_path": "a.txt", "content": "1"})]),
              reply("one done"),
              reply(tool_calls=[tool_call("write", {"file_path": "b.txt", "content": "2"})]),
              reply("two done"),
              reply(tool_calls=[tool_call("write", {"file_path": "c.txt", "content": "3"})]),
              reply("ephemeral done")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(120):
            proc = await run_nyz(workspace, home, "--trust", "full", "chat", "--plain",
                                 stdin=b"ONE\n/undo all\nTWO\n/rewind\n/rewind 1 code\n/exit\n")
            journals = home / ".local/state/nyzhi/checkpoints/sessions"
            assert len(list(journals.glob("*.jsonl"))) == 1
            code, _out, err = await nyz(workspace, home, "run", "--ephemeral", "-y", "full",
                                        "THREE")
            assert code == 0, err
    assert (workspace / "c.txt").read_text() == "3"
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "removed " in out and "a.txt" in out  # /undo all: the first turn's write
    assert "1. ONE" in out and "2. TWO" in out and "not tracked" in out
    assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
    assert len(server.requests) == 6
    # an unsaved session's checkpoints went with it; the chat's are kept
    assert len(list(journals.glob("*.jsonl"))) == 1
