"""kill -9 of ``nyz run`` while a ``bash`` call runs, then ``nyz run --continue``: the resumed
request answers every tool call exactly once, in order, in each of the five wire formats.

Real processes throughout: ``nyz`` subprocesses over real HTTP to the fake LLM, and a real
``bash`` tool call that tells the test it is running through a FIFO (no sleeps, no polling).
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

import pytest
import trio

from nyzhi.core.runtime.sessions.pairing import INTERRUPTED_TEXT
from nyzhi.core.runtime.sessions.store import SessionStore
from nyzhi.testing.cli import NYZ, nyz_env
from nyzhi.testing.fake_llm import WIRE_STYLES, FakeRequest, reply, tool_call

# ---- what each wire format requires of tool calls and results --------------------------------


def tool_turns(wire: str, body: dict[str, Any]) -> tuple[list[tuple[list[str], list[str]]], int]:
    """Per assistant turn with tool calls: (the calls, the results right after it), as ids
    (names for gemini and ollama, which pair by position and name); and how many results the
    request holds in all."""
    turns: list[tuple[list[str], list[str]]] = []
    if wire in ("openai", "ollama"):
        msgs = body["messages"]
        total = sum(m["role"] == "tool" for m in msgs)
        for i, m in enumerate(msgs):
            if m["role"] != "assistant" or not m.get("tool_calls"):
                continue
            if wire == "openai":
                calls = [c["id"] for c in m["tool_calls"]]
            else:
                calls = [c["function"]["name"] for c in m["tool_calls"]]
            results = []
            for r in msgs[i + 1 :]:
                if r["role"] != "tool":
                    break
                results.append(r["tool_call_id"] if wire == "openai" else r.get("tool_name", ""))
            turns.append((calls, results))
    elif wire == "openai-responses":
        items = body["input"]
        total = sum(it.get("type") == "function_call_output" for it in items)
        i = 0
        while i < len(items):
            if items[i].get("type") != "function_call":
                i += 1
                continue
            calls = []
            while i < len(items) and items[i].get("type") == "function_call":
                calls.append(items[i]["call_id"])
                i += 1
            results = []
            while i < len(items) and items[i].get("type") == "function_call_output":
                results.append(items[i]["call_id"])
                i += 1
            turns.append((calls, results))
    elif wire == "anthropic":
        msgs = body["messages"]
        total = sum(b.get("type") == "tool_result" for m in msgs for b in m["content"])
        for i, m in enumerate(msgs):
            calls = [b["id"] for b in m["content"] if b.get("type") == "tool_use"]
            if m["role"] != "assistant" or not calls:
                continue
            nxt = msgs[i + 1] if i + 1 < len(msgs) else {"role": "none", "content": []}
            results = []
            if nxt["role"] == "user":
                for b in nxt["content"]:
                    if b.get("type") != "tool_result":
                        break
                    results.append(b["tool_use_id"])
            turns.append((calls, results))
    else:  # gemini
        contents = body["contents"]
        total = sum("functionResponse" in p for c in contents for p in c["parts"])
        for i, c in enumerate(contents):
            calls = [p["functionCall"]["name"] for p in c["parts"] if "functionCall" in p]
            if c["role"] != "model" or not calls:
                continue
            nxt = contents[i + 1] if i + 1 < len(contents) else {"role": "none", "parts": []}
            results = []
            if nxt["role"] == "user":
                for p in nxt["parts"]:
                    if "functionResponse" not in p:
                        break
                    results.append(p["functionResponse"]["name"])
            turns.append((calls, results))
    return turns, total


def assert_every_call_answered_once_in_order(wire: str, body: dict[str, Any]) -> None:
    turns, total = tool_turns(wire, body)
    assert turns, "the resumed request lost the interrupted tool calls"
    for calls, results in turns:
        assert results == calls, f"{wire}: calls {calls} answered by {results}"
    assert total == sum(len(calls) for calls, _ in turns), f"{wire}: a result answers no call"


# ---- the test ---------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRE_STYLES)
async def test_kill_during_bash_then_continue_answers_every_call(wire, workspace, home, configure):
    from nyzhi.testing.fake_llm import open_fake_llm

    ready = workspace / "ready.fifo"
    hold = workspace / "hold.fifo"
    os.mkfifo(ready)
    os.mkfifo(hold)
    (workspace / "notes.txt").write_text("alpha\n")
    # The command takes hold.fifo, says it runs (the test reads ready.fifo), then blocks until
    # the test writes a line to hold.fifo: it is surely running when nyz is killed, and it ends
    # when the test is done if the sandbox has not already ended it with nyz. The test opens
    # both FIFOs read-write, so no open blocks and a read waits for data, never for EOF.
    command = f"exec 3< {hold}; echo running > {ready}; read line <&3; echo released"
    def script(request: FakeRequest):
        if request.last_user_text() == "go on":
            return reply("resumed fine")
        # one message, two calls: the read finishes, the bash is mid-run at the kill
        return reply(tool_calls=[tool_call("read", {"file_path": "notes.txt"}),
                                 tool_call("bash", {"command": command})])

    env = nyz_env(home)
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for(wire), api_style=wire)
        proc = await trio.lowlevel.open_process(
            [*NYZ, "run", "--trust", "full", "start the work"], cwd=workspace, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        said = b""
        hold_fd = os.open(hold, os.O_RDWR | os.O_NONBLOCK)
        try:
            async with trio.lowlevel.FdStream(os.open(ready, os.O_RDWR | os.O_NONBLOCK)) as fifo:
                with trio.fail_after(60):
                    while not said.endswith(b"\n"):
                        said += await fifo.receive_some()
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            os.write(hold_fd, b"go\n")  # releases the command if it outlived nyz
            os.close(hold_fd)
        assert said == b"running\n"
        assert proc.returncode == -signal.SIGKILL
        assert len(server.requests) == 1

        resumed = await trio.run_process(
            [*NYZ, "run", "--trust", "full", "--continue", "go on"], cwd=workspace, env=env,
            capture_stdout=True, capture_stderr=True, check=False,
        )
        assert resumed.returncode == 0, resumed.stderr.decode()
        assert resumed.stdout.decode().strip() == "resumed fine"
        assert len(server.requests) == 2
        request = server.requests[1]

    assert_every_call_answered_once_in_order(wire, request.json)
    sent = [text for role, text in request.transcript() if role == "tool"]
    assert sent == [INTERRUPTED_TEXT, INTERRUPTED_TEXT]

    # the log now records the results: a later load repairs nothing, and replay shows the marks
    store = SessionStore(home / ".local" / "share" / "nyzhi" / "sessions")
    [meta] = store.list()
    session = store.load(meta.id)
    assert session.interrupted == []
    marks = [e for e in session.events if e.type == "tool_done" and e.metadata.get("interrupted")]
    assert [e.name for e in marks] == ["read", "bash"]
    replay = await trio.run_process(
        [*NYZ, "replay", meta.id], cwd=workspace, env=env, capture_stdout=True, check=True,
    )
    shown = [line for line in replay.stdout.decode().splitlines() if INTERRUPTED_TEXT[:40] in line]
    assert len(shown) == 2 and "bash" in shown[1]
