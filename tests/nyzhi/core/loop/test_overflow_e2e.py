"""Long sessions survive the provider's "prompt is too long" (issue 44): ``nyz run`` as a user
runs it, the scripted fake LLM answering with each wire format's own overflow error."""

from __future__ import annotations

import json

import pytest

from nyzhi.core.loop.context_window import Calibration
from nyzhi.core.runtime.sessions.store import SessionStore
from nyzhi.testing.cli import json_lines, run_nyz
from nyzhi.testing.fake_llm import (
    FakeUsage,
    PerAgent,
    context_overflow,
    open_fake_llm,
    reply,
    tool_call,
)

WIRES = ("openai", "openai-responses", "anthropic", "gemini", "ollama")


def is_summary(req) -> bool:
    return "Summarise the conversation" in req.last_user_text()


def overflow_once(reads: int = 4, overflows: int = 1):
    """``reads`` steps reading a file, then ``overflows`` "prompt is too long" answers (the
    first to the step, the next to its retry), then "done"; summaries answered apart."""
    state = {"n": 0, "overflowed": 0}

    def answer(req):
        if is_summary(req):
            return reply("SUMMARY OF THE READS")
        state["n"] += 1
        if state["n"] <= reads:
            return reply(tool_calls=[tool_call("read", {"file_path": f"f{state['n']}.txt"})])
        if state["overflowed"] < overflows:
            state["overflowed"] += 1
            return context_overflow(210_000, 200_000)
        return reply("done")

    return answer


def write_files(ws, n: int = 4) -> None:
    for i in range(1, n + 1):
        (ws / f"f{i}.txt").write_text(f"contents of file {i}\n" * 50)


@pytest.mark.parametrize("wire", WIRES)
async def test_an_overflow_compacts_once_and_the_turn_completes(workspace, home, configure, wire):
    write_files(workspace)
    async with open_fake_llm(script=overflow_once()) as server:
        configure(workspace, server.url_for(wire), api_style=wire)
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "read")
    assert proc.returncode == 0, proc.stderr.decode()
    events = json_lines(proc.stdout)
    assert events[-1]["result"] == "done" and not events[-1]["is_error"]
    compactions = [e for e in events if e["type"] == "compaction"]
    assert [c["reason"] for c in compactions] == ["overflow"]
    assert [e for e in events if e["type"] == "error"] == []
    model = [r for r in server.requests if not is_summary(r)]
    # the step that overflowed was sent again, on the compacted thread
    assert len(model) == 6 and "SUMMARY OF THE READS" in model[-1].first_user_text()
    assert "[Conversation summary]" not in model[-2].first_user_text()


async def test_a_second_overflow_stops_the_turn_and_the_session_resumes(workspace, home, configure):
    write_files(workspace)
    async with open_fake_llm(script=overflow_once(overflows=2)) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "read")
        assert proc.returncode == 1
        events = json_lines(proc.stdout)
        errors = [e for e in events if e["type"] == "error"]
        assert len(errors) == 1 and errors[0]["kind"] == "context"
        assert "210000 tokens > 200000 maximum" in errors[0]["message"]
        assert events[-1]["type"] == "result" and events[-1]["is_error"]
        session_id = events[0]["session_id"]
        # the session is whole: it resumes from the compacted thread and goes on
        server.push(reply("resumed fine"))
        server._dynamic = None
        again = await run_nyz(workspace, home, "run", "-s", session_id[:8], "go on")
    assert again.returncode == 0, again.stderr.decode()
    assert again.stdout.decode().strip() == "resumed fine"
    resumed = server.requests[-1]
    assert "SUMMARY OF THE READS" in resumed.first_user_text()
    assert resumed.last_user_text() == "go on"
    archives = list((workspace / ".nyzhi" / "context" / "history").glob("*.jsonl"))
    assert archives and "contents of file 1" in archives[0].read_text()  # nothing lost


async def test_an_overflow_that_shows_the_fixed_part_cannot_fit_stops_clearly(
        workspace, home, configure):
    async with open_fake_llm(script=[context_overflow(9000, 2000)]) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "hi")
    assert proc.returncode == 1
    errors = [e for e in json_lines(proc.stdout) if e["type"] == "error"]
    assert len(errors) == 1 and errors[0]["kind"] == "context"
    assert "system prompt and tool definitions" in errors[0]["message"]
    assert "2000-token context window" in errors[0]["message"]
    assert len(server.requests) == 1  # no compaction and no retry: they could not help


async def test_a_subagent_recovers_and_its_parent_is_not_failed(workspace, home, configure):
    write_files(workspace, 3)
    spawned: list[str] = []

    def spawn(_req):
        return reply(tool_calls=[tool_call(
            "spawn_agent", {"message": "SUBTASK read the files", "agent_type": "explorer"})])

    def wait(req):
        spawned[:] = [json.loads(t)["agent_id"] for t in req.tool_results()]
        return reply(tool_calls=[tool_call("wait", {"ids": spawned, "timeout_ms": 60000})])

    agents = PerAgent({
        "MAIN": [spawn, wait, lambda req: reply("main saw: " + req.tool_results()[-1])],
        "SUBTASK": [*(reply(tool_calls=[tool_call("read", {"file_path": f"f{i}.txt"})])
                      for i in (1, 2, 3)),
                    context_overflow(), reply("SUB SUMMARY"), reply("sub done")],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "MAIN go")
    assert proc.returncode == 0, proc.stderr.decode()
    events = json_lines(proc.stdout)
    assert events[-1]["result"].startswith("main saw:") and "sub done" in events[-1]["result"]
    sub = spawned[0]
    compactions = [e for e in events if e["type"] == "compaction"]
    assert [(c["agent"], c["reason"]) for c in compactions] == [(sub, "overflow")]
    assert not any(e["type"] == "error" for e in events)
    assert "errored" not in [e["status"] for e in events if e["type"] == "agent_status"]
    assert len(server.requests) == 3 + 6


def calibrated_script(factor: float, files: int):
    """Read file after file until compaction; report ``factor`` × (characters sent / 4) as
    the prompt's tokens (0: report nothing usable)."""
    state = {"n": 0}

    def answer(req):
        if is_summary(req):
            return reply("SUMMARY")
        state["n"] += 1
        chars = sum(len(text) for _role, text in req.transcript())
        chars += len(json.dumps(req.json.get("tools") or []))
        usage = FakeUsage(input_tokens=int(factor * chars / 4))
        if state["n"] <= files:
            return reply(tool_calls=[tool_call("read", {"file_path": f"g{state['n']}.txt"})],
                         usage=usage)
        return reply("end", usage=usage)

    return answer


def chars_at_first_compaction(server) -> int:
    """The characters of the last model request before the first summary request."""
    for before, req in zip(server.requests, server.requests[1:], strict=False):
        if is_summary(req):
            return sum(len(text) for _role, text in before.transcript())
    raise AssertionError("no compaction")


async def test_the_calibrated_ratio_moves_the_compaction_trigger(workspace, home, configure):
    files = 50
    for i in range(1, files + 1):  # 3.5 KB each: never micro-compacted
        (workspace / f"g{i}.txt").write_text("".join(
            f"file {i:03d} line {j:02d} of some text to read, padded to seventy\n"
            for j in range(56))[:3500])
    extra = '[provider.fake.models."fake-model-1"]\ncontext_window = 40000\n'
    at: dict[float, int] = {}
    for factor in (0.0, 2.0):
        async with open_fake_llm(script=calibrated_script(factor, files)) as server:
            configure(workspace, server.url_for("openai"), extra=extra)
            proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "go")
            assert proc.returncode == 0, proc.stderr.decode()
            at[factor] = chars_at_first_compaction(server)
    # twice the estimated tokens: compaction at about half the characters
    assert 0.35 < at[2.0] / at[0.0] < 0.65, at
    # and the session keeps the ratio, so a resume starts calibrated
    session_id = json_lines(proc.stdout)[0]["session_id"]
    ratios = Calibration.from_session(SessionStore().load(session_id)).ratios
    assert 0.4 < ratios["fake/fake-model-1"] < 0.6, ratios
