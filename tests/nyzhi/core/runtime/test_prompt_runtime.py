"""The prompt in a running session, over real HTTP to the fake LLM: a byte-identical prefix
across steps and across a resume, Anthropic cache breakpoints, cache usage reported, and the
prompt's size in ``session_start``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import trio

from nyzhi.core import events as ev
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.cli import nyz_env
from nyzhi.testing.fake_llm import FakeUsage, open_fake_llm, reply, tool_call


def prefix(request) -> tuple[str, str]:
    """The (system, tools) part of a request exactly as sent, in its wire format."""
    body = request.json
    if request.wire == "anthropic":
        return json.dumps(body["system"]), json.dumps(body["tools"])
    assert body["messages"][0]["role"] == "system"
    return json.dumps(body["messages"][0]), json.dumps(body["tools"])


def five_steps() -> list:
    return [
        reply(tool_calls=[tool_call("read", {"file_path": "hello.txt"})]),
        reply(tool_calls=[tool_call("grep", {"pattern": "hello"})]),
        reply(tool_calls=[tool_call("todowrite", {"todos": [
            {"id": "1", "content": "change the greeting", "status": "in_progress"}]})]),
        reply(tool_calls=[tool_call("edit", {"file_path": "hello.txt", "old_string": "hello",
                                             "new_string": "goodbye"})]),
        reply("Changed the greeting."),
    ]


def commit_all(ws) -> None:
    git = ["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
async def test_prefix_is_byte_identical_across_a_five_step_session(workspace, configure, wire):
    (workspace / "hello.txt").write_text("hello world\n")
    async with open_fake_llm(script=five_steps()) as server:
        configure(workspace, server.url_for(wire), api_style=wire)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            handle = await rt.submit("change the greeting")
            outcome = await handle.wait()
    assert outcome.text == "Changed the greeting." and outcome.steps == 5
    assert (workspace / "hello.txt").read_text() == "goodbye world\n"  # the steps really ran
    assert len(server.requests) == 5
    first = prefix(server.requests[0])
    assert all(prefix(r) == first for r in server.requests[1:])
    # the todo list written in step 3 lives in the messages, never in the prefix
    assert "change the greeting" not in first[0]
    assert "change the greeting" in json.dumps(server.requests[3].json["messages"])


async def test_anthropic_requests_carry_three_cache_breakpoints(workspace, configure):
    (workspace / "hello.txt").write_text("hello world\n")
    async with open_fake_llm(script=five_steps()) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await (await rt.submit("change the greeting")).wait()
    assert len(server.requests) == 5
    for request in server.requests:
        body = request.json
        marked_tools = [t["name"] for t in body["tools"] if "cache_control" in t]
        marked_system = [b for b in body["system"] if "cache_control" in b]
        marked_blocks = [
            (i, j) for i, m in enumerate(body["messages"])
            for j, b in enumerate(m["content"]) if "cache_control" in b
        ]
        assert marked_tools == [body["tools"][-1]["name"]]
        assert len(marked_system) == 1 and body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        last = len(body["messages"]) - 1
        assert marked_blocks == [(last, len(body["messages"][last]["content"]) - 1)]
        assert len(marked_tools) + len(marked_system) + len(marked_blocks) <= 4


async def test_a_resumed_session_keeps_the_same_prefix(workspace, configure):
    async with open_fake_llm(script=[
        reply(tool_calls=[tool_call("write", {"file_path": "new.txt", "content": "x\n"})]),
        reply("wrote it"),
        reply("resumed"),
        reply("fresh"),
    ]) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        commit_all(workspace)  # the tree is clean when the first session starts
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await (await rt.submit("write new.txt")).wait()
            session_id = rt.session_id
        assert (workspace / "new.txt").exists()  # now the tree is dirty
        # same options as before (the trust mode is part of the prompt), other day-to-day state
        async with open_runtime(
            RuntimeOptions(cwd=workspace, trust="full", session=session_id)
        ) as rt:
            assert rt.session_id == session_id
            await (await rt.submit("again")).wait()
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True)) as rt:
            await (await rt.submit("fresh")).wait()
    original, resumed, fresh = server.requests[0], server.requests[2], server.requests[3]
    assert resumed.json["messages"][0]["content"][0]["text"] == "write new.txt"  # really resumed
    assert prefix(resumed) == prefix(original)
    assert "clean at session start" in original.json["system"][0]["text"]
    # a new session takes a new snapshot, so the comparison above is not vacuous
    assert "uncommitted changes at session start" in fresh.json["system"][0]["text"]


@pytest.mark.parametrize(("wire", "writes"), [("anthropic", 120), ("openai", 0)])
async def test_cache_reads_and_writes_reach_usage_events_and_totals(
    workspace, configure, wire, writes
):
    usage = FakeUsage(input_tokens=40, output_tokens=7, cache_read_tokens=300,
                      cache_write_tokens=120)
    script = [reply(tool_calls=[tool_call("think", {"thought": "x"})], usage=usage),
              reply("done", usage=usage)]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for(wire), api_style=wire)
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            seen = []
            async with rt.subscribe() as channel:
                await (await rt.submit("go")).wait()
                while len(seen) < 2:
                    event = await channel.receive()
                    if isinstance(event, ev.Usage):
                        seen.append(event)
            totals = rt.usage_totals()
    # OpenAI reports cached reads only; its cache writes are not billed apart
    assert [(u.cache_read_tokens, u.cache_write_tokens) for u in seen] == [(300, writes)] * 2
    assert all(u.input_tokens == 40 for u in seen)
    assert totals["cache_read_tokens"] == 600 and totals["cache_write_tokens"] == 2 * writes


async def test_stream_json_session_start_reports_the_prompt(workspace, home, configure):
    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await trio.run_process(
            [sys.executable, "-m", "nyzhi", "run", "--output-format", "stream-json", "hi"],
            cwd=workspace, env=nyz_env(home), capture_stdout=True, capture_stderr=True,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr.decode()
    start = json.loads(proc.stdout.decode().splitlines()[0])
    assert start["type"] == "session_start"
    info = start["prompt"]
    system = next(text for role, text in server.requests[0].transcript() if role == "system")
    assert info["chars"] == len(system) and info["tokens"] == -(-len(system) // 4)
    assert info["sections"][:3] == ["identity", "environment", "reading_the_request"]
    assert "safety" in info["sections"] and "delegation" in info["sections"]  # spawn_agent
    assert info["tools_chars"] > 10_000 and info["tools_tokens"] == -(-info["tools_chars"] // 4)
    assert info["environment"]["in_git"] is True
