"""A model answer is bounded (``[agent.stream]``, ``StreamLimits``): text and thinking per
answer, arguments per tool call and per answer, one framed record; in every wire format,
against the fake LLM over real HTTP. Past a bound the answer stops with one
``ProviderStreamError`` naming the key, the connection is dropped (nothing more is read) and
nothing is retried. A control at the bound goes through."""

from __future__ import annotations

import pytest
from provider_helpers import STYLES, collect, make_spec, text_of

from nyzhi.provider import ProviderStreamError, StreamLimits
from nyzhi.provider.framing import LineParser, RecordTooLarge, SSEParser
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

SMALL = StreamLimits(max_answer_chars=2_000, max_tool_argument_chars=1_000,
                     max_step_tool_argument_chars=1_500)


@pytest.fixture(params=STYLES)
def style(request: pytest.FixtureRequest) -> str:
    return request.param


async def stopped(style: str, answer, key: str, big: bool = True) -> None:
    """``answer`` stops with the error naming ``key``; when ``big`` (hundreds of KB past the
    bound), the server never got to send it all: the client stopped reading."""
    async with open_fake_llm(None, script=[answer, reply("never")]) as server:
        with pytest.raises(ProviderStreamError) as info:
            await collect(make_spec(server, style, limits=SMALL))
        assert len(server.requests) == 1  # not retried
        assert not (big and server.requests[0].completed)  # the rest was never read
    assert f"[agent.stream] {key}" in str(info.value)
    assert not info.value.retryable


async def test_text_past_the_bound_stops_the_answer(style: str) -> None:
    await stopped(style, reply("x" * 400_000, chunk_size=100), "max_answer_chars")


async def test_thinking_counts_with_the_text(style: str) -> None:
    if style == "ollama":
        pytest.skip("the fake's Ollama stream carries no thinking")
    await stopped(style, reply("y" * 1_500, thinking="t" * 400_000, chunk_size=100),
                  "max_answer_chars")


async def test_one_tool_calls_arguments_past_the_bound(style: str) -> None:
    # far more than loopback's socket buffers hold (they took a 300 KB answer whole under
    # load, and "the client stopped reading" was then not seen): 16 MB
    call = tool_call("read_file", {"path": "p" * 16_000_000})
    await stopped(style, reply(tool_calls=[call], chunk_size=65_536), "max_tool_argument_chars")


async def test_all_tool_arguments_of_an_answer_past_the_bound(style: str) -> None:
    calls = [tool_call("read_file", {"path": "q" * 700}) for _ in range(3)]
    await stopped(style, reply(tool_calls=calls, chunk_size=50), "max_step_tool_argument_chars",
                  big=False)


async def test_one_record_past_the_bound() -> None:
    # a single text delta far bigger than the record bound (6 x 2,000 + 64 KiB)
    async with open_fake_llm(None, script=[reply("z" * 300_000, chunk_size=300_000)]) as server:
        with pytest.raises(ProviderStreamError, match="one stream record exceeded"):
            await collect(make_spec(server, "openai", limits=SMALL))


async def test_control_at_the_bounds_goes_through(style: str) -> None:
    calls = [tool_call("read_file", {"path": "r" * 600}), tool_call("read_file", {"path": "s"})]
    async with open_fake_llm(None, script=[reply("w" * 2_000, chunk_size=100,
                                                 tool_calls=calls)]) as server:
        events = await collect(make_spec(server, style, limits=SMALL))
    assert text_of(events) == "w" * 2_000


@pytest.mark.parametrize("parser", [SSEParser, LineParser])
def test_framing_bounds_a_record_without_an_end(parser) -> None:
    p = parser(1_000)
    prefix = b"data: " if parser is SSEParser else b""
    p.feed(prefix + b"a" * 900)
    with pytest.raises(RecordTooLarge):
        p.feed(b"a" * 200)  # no line end yet: still one record
    q = parser(1_000)
    assert q.feed(prefix + b"b" * 900 + b"\n\n") == [("", "b" * 900)]  # within: parsed


def test_sse_bounds_the_data_lines_of_one_event() -> None:
    p = SSEParser(1_000)
    with pytest.raises(RecordTooLarge):
        for _ in range(20):
            p.feed(b"data: " + b"c" * 99 + b"\n")  # lines end, the event does not
