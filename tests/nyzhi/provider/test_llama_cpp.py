"""The llama.cpp adapter's guards for a small local model: the default output cap and the
repetition guard (issue 14 §10). The real model is exercised in tests/nyzhi/test_local_model.py."""

from __future__ import annotations

import json
import re

import pytest
import trio
from provider_helpers import READ_TOOL, collect, make_spec, simple_request

from nyzhi.provider.llama_cpp import (
    DEFAULT_MAX_TOKENS,
    REPEATED_OUTPUT,
    LlamaCppDecoder,
    RepetitionGuard,
)
from nyzhi.provider.types import Stop, TextDelta, ToolCallEnd
from nyzhi.testing.fake_llm import hang, open_fake_llm, reply

LOOP = "I can list the files for you. "  # 30 characters, as SmolLM2 repeats itself


async def _sent(request, **spec_kw) -> dict:
    async with open_fake_llm(None, script=[reply("ok")]) as server:
        await collect(make_spec(server, "llama-cpp", key=None, **spec_kw), request)
        (req,) = server.requests
    return req.json


# --- the output cap -----------------------------------------------------------------------------


async def test_an_uncapped_request_gets_the_default_cap() -> None:
    assert (await _sent(simple_request()))["max_tokens"] == DEFAULT_MAX_TOKENS


async def test_a_configured_or_requested_cap_wins() -> None:
    assert (await _sent(simple_request(), max_tokens=2048))["max_tokens"] == 2048
    assert (await _sent(simple_request(max_tokens=64), max_tokens=2048))["max_tokens"] == 64


async def test_tools_with_automatic_choice_ask_for_a_complete_capped_answer() -> None:
    body = await _sent(simple_request(tools=(READ_TOOL,)))
    assert body["stream"] is False and "stream_options" not in body
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS


# --- the repetition guard -----------------------------------------------------------------------


def test_the_guard_finds_a_looping_tail_and_its_period() -> None:
    guard = RepetitionGuard()
    assert guard.period("Here are the files. " + LOOP * 12) == len(LOOP)
    assert guard.period("ab" * 200) == 2


def test_the_guard_lets_real_text_pass() -> None:
    guard = RepetitionGuard()
    prose = " ".join(f"Line {i}: the value of item {i} is {i * i}." for i in range(60))
    assert guard.period(prose) is None
    assert guard.period("-" * 120) is None, "a markdown rule is not a loop"
    assert guard.period("| --- " * 20) is None, "a table separator is not a loop"
    assert guard.period(LOOP * 3) is None, "three copies are allowed"


def test_trim_keeps_the_text_before_the_loop_and_one_copy() -> None:
    guard = RepetitionGuard()
    text = "Here are the files. " + LOOP * 20 + "and then something else entirely"
    # The repeating starts at the ". " before the loop; the cut still keeps the whole copy.
    assert guard.trim(text) == "Here are the files. I can list the files for you."
    assert guard.trim("x = 1\n" + 'print("hello")\n' * 40) == 'x = 1\nprint("hello")'
    assert guard.trim("Nothing repeats here.") is None


async def test_a_looping_stream_ends_and_the_client_hangs_up() -> None:
    """The fake server sends the loop and then stays open forever: only the guard ends the
    answer, and the provider closes the connection (which stops a real server generating)."""
    looping = reply("Sure. " + LOOP * 200, chunk_size=8)
    async with open_fake_llm(None, script=[hang(looping, after_frames=10_000)]) as server:
        with trio.fail_after(30):
            events = await collect(make_spec(server, "llama-cpp", key=None))
            (req,) = server.requests
            await req.disconnected.wait()
    assert events[-1] == Stop("other", REPEATED_OUTPUT)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text.startswith("Sure. " + LOOP)
    assert len(text) < 600, "stopped soon after the loop set in"


async def test_a_normal_stream_is_untouched() -> None:
    answer = "Three colours: red, green and blue. " * 2
    async with open_fake_llm(None, script=[reply(answer)]) as server:
        events = await collect(make_spec(server, "llama-cpp", key=None))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == answer
    assert events[-1].reason == "end_turn"


def _complete(content: str | None, tool_calls: list | None = None) -> str:
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    reason = "tool_calls" if tool_calls else "stop"
    return json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "smollm2-135m-instruct",
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 512, "total_tokens": 1412},
    })  # fmt: skip


def test_a_looping_complete_answer_is_cut_after_the_first_copy() -> None:
    decoder = LlamaCppDecoder()
    events = decoder.feed("", _complete("Hello! " + LOOP * 15)) + decoder.finish()
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Hello! I can list the files for you."
    assert events[-1] == Stop("other", REPEATED_OUTPUT)


def test_a_complete_tool_call_passes_through() -> None:
    call = {"id": "call_0", "type": "function",
            "function": {"name": "list_dir", "arguments": '{"path": "."}'}}  # fmt: skip
    decoder = LlamaCppDecoder()
    events = decoder.feed("", _complete(None, [call])) + decoder.finish()
    (end,) = [e for e in events if isinstance(e, ToolCallEnd)]
    assert (end.name, json.loads(end.arguments)) == ("list_dir", {"path": "."})
    assert events[-1].reason == "tool_use"


# --- the offline model's request -------------------------------------------------------------


def _tool(name: str):
    from nyzhi.provider.types import ToolSchema

    return ToolSchema(name, f"the {name} tool", {"type": "object", "properties": {}})


async def test_the_offline_model_is_offered_a_few_tools_and_a_low_temperature() -> None:
    from nyzhi.provider.llama_cpp import OFFLINE_MODEL, OFFLINE_TEMPERATURE, OFFLINE_TOOLS

    everything = tuple(_tool(n) for n in ("read", "write", "bash", "list_dir", "git_log", "grep"))
    body = await _sent(simple_request(tools=everything, model=OFFLINE_MODEL))
    offered = _json_offered(body)  # in a grammar-constrained decision (test_offline_calls.py)
    assert offered == ["list_dir", "read", "grep"] and set(offered) <= set(OFFLINE_TOOLS)
    assert body["temperature"] == OFFLINE_TEMPERATURE
    # A tool the request names stays (and is called the named way), and a caller's own tools
    # are left alone.
    named = await _sent(simple_request(tools=everything, tool_choice="bash", model=OFFLINE_MODEL))
    assert [t["function"]["name"] for t in named["tools"]] == ["list_dir", "read", "grep", "bash"]
    own = await _sent(simple_request(tools=(_tool("get_weather"),), model=OFFLINE_MODEL))
    assert _json_offered(own) == ["get_weather"]


def _json_offered(body: dict) -> list[str]:
    """The tools a decision's grammar lets the model call, in order."""
    return re.findall(r'^call\d+ ::= "\{\\"name\\": \\"(\w+)', body["grammar"], re.M)


async def test_another_llama_cpp_model_gets_every_tool_and_its_own_temperature() -> None:
    everything = tuple(_tool(n) for n in ("read", "write", "bash"))
    body = await _sent(simple_request(tools=everything, model="qwen2.5-coder-7b"))
    assert [t["function"]["name"] for t in body["tools"]] == ["read", "write", "bash"]
    assert "temperature" not in body


def test_the_server_is_started_so_a_second_request_does_not_cut_the_first() -> None:
    """llama_cpp.server interrupts a streaming answer when another request arrives unless
    ``interrupt_requests`` is off (issue 54: two agents on the offline model)."""
    from pathlib import Path

    from nyzhi.provider.llama_server import server_command

    argv = server_command(Path("m.gguf"), port=1, n_ctx=4096, n_threads=1,
                          chat_format="chatml-function-calling")  # fmt: skip
    at = argv.index("--interrupt_requests")
    assert argv[at + 1] == "false"


def test_done_without_a_finish_reason_is_a_cut_stream_not_a_whole_answer() -> None:
    """llama_cpp.server ends an interrupted stream with [DONE] and no finish reason."""
    from nyzhi.provider.errors import StreamEndedEarly
    from nyzhi.provider.llama_cpp import LlamaCppDecoder

    decoder = LlamaCppDecoder()
    chunk = {"choices": [{"index": 0, "delta": {"content": "Half an"}, "finish_reason": None}]}
    assert decoder.feed("", "data: " + json.dumps(chunk))
    with pytest.raises(StreamEndedEarly):
        decoder.feed("", "data: [DONE]")
    whole = LlamaCppDecoder()
    done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    whole.feed("", "data: " + json.dumps(done))
    assert isinstance(whole.feed("", "data: [DONE]")[-1], Stop)
