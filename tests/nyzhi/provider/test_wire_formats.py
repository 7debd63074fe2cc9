"""Every wire format over real HTTP against the fake server: what comes back out of the stream."""

from __future__ import annotations

import json

import trio
from provider_helpers import (
    READ_TOOL,
    collect,
    ends,
    make_spec,
    simple_request,
    text_of,
    thinking_of,
)

from nyzhi.provider import parse_tool_arguments
from nyzhi.provider.arguments import ToolArgumentError
from nyzhi.provider.types import (
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStart,
    Usage,
)
from nyzhi.testing.fake_llm import FakeUsage, open_fake_llm, reply, tool_call


async def test_text_stream_is_chunked_and_ends_with_usage_then_stop(style: str) -> None:
    answer = "The quick brown fox jumps over the lazy dog."
    usage = FakeUsage(input_tokens=31, output_tokens=9)
    async with open_fake_llm(None, script=[reply(answer, usage=usage)]) as server:
        events = await collect(make_spec(server, style))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 5, "text should arrive as several deltas, not one block"
    assert text_of(events) == answer
    assert events[-2] == Usage(input_tokens=31, output_tokens=9)
    assert events[-1] == Stop("end_turn", events[-1].raw)
    assert sum(isinstance(e, Stop) for e in events) == 1


async def test_thinking_comes_before_text(style: str) -> None:
    async with open_fake_llm(None, script=[reply("42", thinking="Let me add six and seven times...")]) as server:
        events = await collect(make_spec(server, style))
    assert thinking_of(events) == "Let me add six and seven times..."
    assert text_of(events) == "42"
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert all(not isinstance(e, ThinkingDelta) or not e.text for e in events[first_text:])


async def test_signed_thinking_signature_is_surfaced() -> None:
    for style in ("anthropic", "gemini"):
        script = [reply("", thinking="pondering", signature="SIG-123", tool_calls=[tool_call("read_file", {"path": "x"})])]
        async with open_fake_llm(None, script=script) as server:
            events = await collect(make_spec(server, style))
        sigs = [e.signature for e in events if isinstance(e, ThinkingDelta) and e.signature]
        assert sigs == ["SIG-123"], style


async def test_parallel_tool_calls(style: str) -> None:
    calls = [
        tool_call("read_file", {"path": "src/app.py", "lines": [1, 2, 3]}, id="call_a"),
        tool_call("grep", {"pattern": "def main", "glob": "**/*.py"}, id="call_b"),
        tool_call("list_dir", {}, id="call_c"),
    ]
    async with open_fake_llm(None, script=[reply("Looking.", tool_calls=calls)]) as server:
        events = await collect(make_spec(server, style), simple_request(tools=(READ_TOOL,)))
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [(s.index, s.id, s.name) for s in starts] == [
        (0, "call_a", "read_file"), (1, "call_b", "grep"), (2, "call_c", "list_dir")]
    done = ends(events)
    assert [e.index for e in done] == [0, 1, 2]
    assert [json.loads(e.arguments) for e in done] == [c.arguments for c in calls]
    # the deltas of each call add up to its final arguments
    for end in done:
        parts = "".join(e.arguments_delta for e in events if isinstance(e, ToolCallDelta) and e.index == end.index)
        assert parts in (end.arguments, "") or json.loads(parts) == json.loads(end.arguments)
    assert text_of(events) == "Looking."
    assert events[-1].reason == "tool_use"


async def test_malformed_tool_arguments_do_not_crash(style: str) -> None:
    broken = '{"path": "a.py", '  # cut off, as at max_tokens
    async with open_fake_llm(None, script=[reply(tool_calls=[tool_call("read_file", broken)])]) as server:
        events = await collect(make_spec(server, style))
    (end,) = ends(events)
    assert end.arguments == broken
    parsed = parse_tool_arguments(end.arguments)
    assert isinstance(parsed, ToolArgumentError)
    assert "not valid JSON" in str(parsed) and "a.py" in str(parsed)


async def test_unknown_event_types_are_skipped(style: str) -> None:
    script = [reply("still fine", thinking="hm", tool_calls=[tool_call("t", {"a": 1})], unknown_events=True)]
    async with open_fake_llm(None, script=script) as server:
        events = await collect(make_spec(server, style))
    assert text_of(events) == "still fine"
    assert [e.name for e in ends(events)] == ["t"]
    assert isinstance(events[-1], Stop)


async def test_cache_usage_is_reported(style: str) -> None:
    usage = FakeUsage(input_tokens=100, output_tokens=20, cache_read_tokens=900, cache_write_tokens=50)
    async with open_fake_llm(None, script=[reply("ok", usage=usage)]) as server:
        events = await collect(make_spec(server, style))
    got = next(e for e in events if isinstance(e, Usage))
    if style == "ollama":  # Ollama has no prompt cache counters
        assert (got.input_tokens, got.output_tokens) == (100, 20)
    elif style == "anthropic":
        assert got == Usage(100, 20, 900, 50)
    else:  # OpenAI and Gemini report cache reads inside the prompt count; we split them out
        assert got == Usage(100, 20, 900, 0)


async def test_max_tokens_stop_reason(style: str) -> None:
    async with open_fake_llm(None, script=[reply("truncated answ", stop="max_tokens")]) as server:
        events = await collect(make_spec(server, style))
    assert events[-1].reason == "max_tokens"


async def test_server_delays_are_virtual_under_mock_clock(style: str, autojump_clock: object) -> None:
    start = trio.current_time()
    async with open_fake_llm(None, script=[reply("abcdefgh", chunk_size=2, delay=10.0)]) as server:
        events = await collect(make_spec(server, style))
    assert text_of(events) == "abcdefgh"
    assert trio.current_time() - start >= 40.0  # at least four delayed text frames
