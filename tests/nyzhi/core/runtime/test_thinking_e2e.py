"""Thinking end to end: ``nyz run --thinking`` against the scripted fake LLM in all five wire
formats. Each format must carry its own parameter for ``high`` and none for ``off``, send the
thinking state of step 1 back in step 2 as its API requires, and do the same after a resume."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from nyzhi.testing.cli import json_lines, read_until, run_nyz, start_chat
from nyzhi.testing.fake_llm import FakeUsage, open_fake_llm, reply, tool_call

THOUGHT = "the file list first, then the answer"
SIGNATURE = "sig-step-one"

# wire format -> a reasoning model of the table for it
MODELS = {
    "openai": "o4-mini",
    "openai-responses": "gpt-5",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-pro",
    "ollama": "qwen3",
}


def high_parameter(wire: str, request: Any) -> None:
    """The request carries the format's own parameter for ``--thinking high``."""
    body = request.json
    if wire == "openai":
        assert body["reasoning_effort"] == "high"
        assert "temperature" not in body
    elif wire == "openai-responses":
        assert body["reasoning"] == {"effort": "high", "summary": "auto"}
        assert body["include"] == ["reasoning.encrypted_content"] and body["store"] is False
    elif wire == "anthropic":
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 32_000}
        assert body["max_tokens"] > 32_000
        assert "interleaved-thinking-2025-05-14" in request.headers["anthropic-beta"]
    elif wire == "gemini":
        assert body["generationConfig"]["thinkingConfig"] == {
            "thinkingBudget": 32_000, "includeThoughts": True}
    else:
        assert body["think"] is True


def no_parameter(wire: str, body: dict[str, Any]) -> None:
    for key in ("reasoning_effort", "reasoning", "include", "thinking", "think", "output_config"):
        assert key not in body, key
    assert "thinkingConfig" not in (body.get("generationConfig") or {})


def step_one_state(wire: str, body: dict[str, Any]) -> None:
    """Step 1's thinking goes back the way the format's API asks for it."""
    if wire == "anthropic":
        turn = next(m for m in body["messages"] if m["role"] == "assistant")
        assert turn["content"][0] == {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE}
        assert turn["content"][1]["type"] == "tool_use"
    elif wire == "openai-responses":
        kinds = [item.get("type") for item in body["input"]]
        at = kinds.index("reasoning")
        item = body["input"][at]
        assert item["id"] == "rs_0" and item["encrypted_content"] == f"enc:{SIGNATURE}"
        assert item["summary"] == [{"type": "summary_text", "text": THOUGHT}]
        assert kinds[at + 1] == "function_call"  # before the call it led to
    elif wire == "gemini":
        turn = next(c for c in body["contents"] if c["role"] == "model")
        call = next(p for p in turn["parts"] if "functionCall" in p)
        assert call["thoughtSignature"] == SIGNATURE
    elif wire == "ollama":
        turn = next(m for m in body["messages"] if m["role"] == "assistant")
        assert turn["thinking"] == THOUGHT and turn["tool_calls"]
    else:  # Chat Completions has no field for it: only the calls go back, no reasoning
        turn = next(m for m in body["messages"] if m["role"] == "assistant")
        assert turn["tool_calls"] and set(turn) <= {"role", "content", "tool_calls"}


@pytest.mark.parametrize("wire", list(MODELS))
async def test_thinking_high_carried_across_steps_and_resume(wire, workspace, home, configure):
    usage = FakeUsage(output_tokens=30, thinking_tokens=20)
    script = [
        reply(thinking=THOUGHT, signature=SIGNATURE, usage=usage,
              tool_calls=[tool_call("think", {"thought": "list the files"})]),
        reply("done"),
        reply("again"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for(wire), api_style=wire)
        first = await run_nyz(workspace, home, "run", "--model", MODELS[wire], "--thinking", "high",
                              "--output-format", "stream-json", "go")
        assert first.returncode == 0, first.stderr.decode()
        resumed = await run_nyz(workspace, home, "run", "--continue", "--model", MODELS[wire],
                                "--thinking", "high", "--output-format", "json", "once more")
        assert resumed.returncode == 0, resumed.stderr.decode()
    step1, step2, after_resume = server.requests
    high_parameter(wire, step1)
    high_parameter(wire, step2)
    step_one_state(wire, step2.json)
    step_one_state(wire, after_resume.json)  # read back from the session log
    events = json_lines(first.stdout)
    shown = "".join(e["text"] for e in events if e["type"] == "thinking_delta")
    assert THOUGHT in shown
    result = events[-1]
    assert result["type"] == "result"
    if wire in ("openai", "openai-responses", "gemini"):  # the formats that count it apart
        assert result["usage"]["thinking_tokens"] == 20
        assert result["usage"]["output_tokens"] >= 30  # thinking is inside output tokens
        [step_usage, _] = [e for e in events if e["type"] == "usage"]
        assert step_usage["thinking_tokens"] == 20


@pytest.mark.parametrize("wire", list(MODELS))
async def test_thinking_off_sends_no_parameter(wire, workspace, home, configure):
    async with open_fake_llm(script=[reply("plain")]) as server:
        configure(workspace, server.url_for(wire), api_style=wire,
                  extra='\n[agent]\nthinking = "high"\n')
        proc = await run_nyz(workspace, home, "run", "--model", MODELS[wire], "--thinking", "off",
                             "plain please")
    assert proc.returncode == 0, proc.stderr.decode()
    no_parameter(wire, server.requests[0].json)


async def test_config_level_used_and_clamped_with_one_notice(workspace, home, configure):
    async with open_fake_llm(script=[reply("ok"), reply("ok")]) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic",
                  extra="\n[agent]\nthinking = 100000\n")
        clamped = await run_nyz(workspace, home, "run", "--model", "claude-opus-4-1", "hi")
        plain = await run_nyz(workspace, home, "run", "--model", "claude-3-5-haiku", "hi")
    assert clamped.returncode == 0 and plain.returncode == 0, clamped.stderr.decode()
    assert server.requests[0].json["thinking"] == {"type": "enabled", "budget_tokens": 27_904}
    notices = clamped.stderr.decode()
    assert notices.count("takes at most 27904 thinking tokens") == 1
    no_parameter("anthropic", server.requests[1].json)
    assert "claude-3-5-haiku does not reason" in plain.stderr.decode()


async def test_bad_thinking_level_is_one_line(workspace, home, configure):
    # not approved: a config that does not load cannot be (the run must say why, not approve)
    configure(workspace, "http://127.0.0.1:9/v1", extra='\n[agent]\nthinking = "hard"\n',
              approve=False)
    proc = await run_nyz(workspace, home, "run", "hi")
    err = proc.stderr.decode()
    assert proc.returncode != 0
    assert "agent.thinking" in err and "Traceback" not in err
    flag = await run_nyz(workspace, home, "run", "--thinking", "hard", "hi")
    assert flag.returncode == 2 and "--thinking" in flag.stderr.decode()


async def test_slash_thinking_in_the_line_chat(workspace, home, configure):
    """``/thinking`` sets the level from the next request; a model the table does not know
    (the fake's) gets it as asked."""
    async with open_fake_llm(script=[reply("one"), reply("two")]) as server:
        configure(workspace, server.url_for("openai"))
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"first\n")
        await read_until(proc.stdout, out, b"one")
        await proc.stdin.send_all(b"/thinking medium\n")
        await read_until(proc.stdout, out, b"thinking: medium on fake-model-1 (effort medium or budget 12288 tokens)")
        await proc.stdin.send_all(b"/thinking loads\n")
        await read_until(proc.stdout, out, b"/thinking: expected off, low, medium, high")
        await proc.stdin.send_all(b"second\n")
        await read_until(proc.stdout, out, b"two")
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            assert await proc.wait() == 0
    no_parameter("openai", server.requests[0].json)
    assert server.requests[1].json["reasoning_effort"] == "medium"


async def test_a_roles_thinking_applies_to_its_subagents(workspace, home, configure):
    from nyzhi.testing.fake_llm import PerAgent

    (workspace / ".nyzhi" / "agents").mkdir()
    (workspace / ".nyzhi" / "agents" / "deep.md").write_text(
        "---\nname: deep\ndescription: thinks hard\nthinking: high\n---\nThink, then answer.\n")
    agents = PerAgent({
        "MAIN": [reply(tool_calls=[tool_call("spawn_agent", {"message": "CHILD ponder",
                                                               "agent_type": "deep"})]),
                 reply(tool_calls=[tool_call("wait", {"ids": ["/agents/main/deep-1"],
                                                      "timeout_ms": 60000})]),
                 reply("parent done")],
        "CHILD": [reply("pondered")],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"),
                  extra='\n[agent]\nthinking = "low"\n\n[agent.agents.roles.quick]\n'
                        'thinking = "medium"\n')
        proc = await run_nyz(workspace, home, "run", "--trust", "full", "MAIN go")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == "parent done"
    [child] = agents.seen["CHILD"]
    assert child.json["reasoning_effort"] == "high"  # the role's level
    assert all(r.json["reasoning_effort"] == "low" for r in agents.seen["MAIN"])  # [agent]


def test_role_thinking_from_a_file_and_a_config_table(tmp_path):
    from nyzhi.config.schema_agent import RoleConfig
    from nyzhi.config.thinking import ThinkingLevel
    from nyzhi.core.runtime import roles as r

    (tmp_path / ".nyzhi" / "agents").mkdir(parents=True)
    good = tmp_path / ".nyzhi" / "agents" / "budgeted.md"
    good.write_text("---\nthinking: 9000\n---\nprompt\n")
    assert r.load_role_file(good)[0].thinking == 9000
    bad = tmp_path / "bad.md"
    bad.write_text("---\nthinking: hard\n---\nprompt\n")
    with pytest.raises(r.RoleError, match=r"bad\.md: thinking: expected off, low"):
        r.load_role_file(bad)
    catalog = r.RoleCatalog.load({"explorer": RoleConfig(thinking=ThinkingLevel("low"))}, tmp_path)
    assert catalog.resolve("explorer").thinking == "low"
    assert catalog.resolve("budgeted").thinking == 9000
    assert catalog.resolve("worker").thinking is None
