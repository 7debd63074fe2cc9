"""Fitting one thinking level to each model (``nyzhi.provider.thinking``), and the wire forms
the model table chooses (adaptive Claude, Gemini levels), as recorded by the fake server."""

from __future__ import annotations

import pytest
from provider_helpers import collect, make_spec, simple_request

from nyzhi.config.thinking import parse_level
from nyzhi.provider.models import ModelInfo
from nyzhi.provider.thinking import resolve_thinking
from nyzhi.testing.fake_llm import open_fake_llm, reply


def test_parse_level_names_numbers_and_errors() -> None:
    assert parse_level(" High ") == "high"
    assert parse_level("8000") == 8000 and parse_level(8000) == 8000
    for bad in ("hard", "", 0, -3, True, 1.5, "12k"):
        with pytest.raises(ValueError, match="agent.thinking"):
            parse_level(bad, "agent.thinking")


def test_named_levels_fit_each_model_silently() -> None:
    config, notice = resolve_thinking("high", "gemini-2.5-flash")
    assert (config.budget_tokens, config.mode, notice) == (24_576, "budget", None)
    config, notice = resolve_thinking("low", "gemini-2.5-pro")
    assert (config.budget_tokens, notice) == (4_096, None)
    config, notice = resolve_thinking("medium", "o3")
    assert (config.effort, config.mode, config.budget_tokens, notice) == ("medium", "effort", None, None)
    config, _ = resolve_thinking("high", "claude-opus-4-6")
    assert (config.mode, config.effort) == ("adaptive", "high")
    assert resolve_thinking("off", "claude-sonnet-4-5") == (None, None)
    assert resolve_thinking(None, "o3") == (None, None)


def test_budgets_are_clamped_with_a_notice() -> None:
    config, notice = resolve_thinking(200_000, "claude-sonnet-4-5")
    assert config.budget_tokens == 64_000 - 4_096
    assert notice == "thinking: claude-sonnet-4-5 takes at most 59904 thinking tokens; using 59904"
    config, notice = resolve_thinking(100, "claude-haiku-4-5")
    assert config.budget_tokens == 1024 and "at least 1024" in notice
    config, notice = resolve_thinking(600, "gemini-2.5-flash-lite")
    assert config.budget_tokens == 600 and notice is None
    config, notice = resolve_thinking(20_000, "o4-mini")  # an effort model: the nearest effort
    assert (config.effort, notice) == ("high", None)


def test_models_that_do_not_reason_and_unknown_models() -> None:
    config, notice = resolve_thinking("high", "gpt-4.1")
    assert config is None and "gpt-4.1 does not reason" in notice
    config, notice = resolve_thinking("high", "some-new-model")
    assert config.enabled and config.mode is None and notice is None
    levels = ModelInfo("lvl", thinking="level", efforts=("low", "high"))
    config, notice = resolve_thinking("medium", levels)
    assert config.effort == "high" and "takes low, high; using high" in notice


async def test_adaptive_claude_and_gemini_levels_on_the_wire() -> None:
    adaptive, _ = resolve_thinking("low", "claude-sonnet-4-6")
    levels, _ = resolve_thinking("low", ModelInfo("gemini-3-pro", thinking="level",
                                                  efforts=("low", "high")))
    async with open_fake_llm(None, script=[reply("a"), reply("b")]) as server:
        await collect(make_spec(server, "anthropic"), simple_request(thinking=adaptive))
        await collect(make_spec(server, "gemini"), simple_request(thinking=levels))
    claude, gemini = (r.json for r in server.requests)
    assert claude["thinking"] == {"type": "adaptive"} and claude["output_config"] == {"effort": "low"}
    assert "anthropic-beta" not in server.requests[0].headers  # adaptive interleaves by itself
    assert gemini["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "low", "includeThoughts": True}


async def test_a_responses_signature_is_not_sent_to_other_formats() -> None:
    """A session resumed on another provider: the Responses API's reasoning items (kept as
    the step's signature) must not reach Anthropic or Gemini as their own signatures."""
    from nyzhi.provider.types import Message, ToolCall

    items = '{"reasoning": [{"type": "reasoning", "id": "rs_1", "summary": []}]}'
    thread = (Message("user", "go"),
              Message("assistant", "", tool_calls=(ToolCall("c1", "think", "{}"),),
                      thinking="plan", thinking_signature=items),
              Message("tool", "ok", tool_call_id="c1", name="think"),
              Message("user", "next"))
    async with open_fake_llm(None, script=[reply("a"), reply("b"), reply("c")]) as server:
        for style in ("anthropic", "gemini", "openai-responses"):
            await collect(make_spec(server, style), simple_request(messages=thread))
    claude, gemini, responses = (r.json for r in server.requests)
    assert all(b["type"] != "thinking" for m in claude["messages"] for b in m["content"])
    assert "thoughtSignature" not in str(gemini["contents"])
    assert {"type": "reasoning", "id": "rs_1", "summary": []} in responses["input"]
