from contextlib import aclosing

import pytest

from nyzhi.core import events as ev
from nyzhi.core.runtime.sessions import RecordedProvider, RecordingExhausted, SessionStore
from nyzhi.provider import types as pt

CALLS = (pt.ToolCall("c1", "read", '{"path": "a"}'), pt.ToolCall("c2", "glob", '{"pattern": "*"}'))


async def collect(provider, request):
    async with aclosing(provider.stream(request)) as stream:
        return [e async for e in stream]


def recorded_session(tmp_path, with_usage=True):
    store = SessionStore(tmp_path)
    with store.create(provider="anthropic", model="claude-x") as w:
        w.append_message(pt.Message("user", "go"))
        w.append_message(pt.Message("assistant", "Looking.", tool_calls=CALLS,
                                    thinking="think", thinking_signature="sig"))
        if with_usage:
            w.append_event(ev.Usage(10, 2))
        w.append_message(pt.Message("tool", "A", tool_call_id="c1"))
        w.append_message(pt.Message("tool", "B", tool_call_id="c2"))
        w.append_message(pt.Message("assistant", "Done: A and B"))
        if with_usage:
            w.append_event(ev.Usage(20, 4))
        sid = w.id
    return store.load(sid)


async def test_replays_recorded_turns_as_stream_events(tmp_path):
    p = RecordedProvider.from_session(recorded_session(tmp_path))
    assert isinstance(p, pt.Provider)
    assert (p.name, p.model, p.remaining) == ("anthropic", "claude-x", 2)
    req = pt.ChatRequest(messages=(pt.Message("user", "go"),))
    first = await collect(p, req)
    assert first == [
        pt.ThinkingDelta("think", "sig"),
        pt.TextDelta("Looking."),
        pt.ToolCallStart(0, "c1", "read"),
        pt.ToolCallDelta(0, '{"path": "a"}'),
        pt.ToolCallEnd(0, "c1", "read", '{"path": "a"}'),
        pt.ToolCallStart(1, "c2", "glob"),
        pt.ToolCallDelta(1, '{"pattern": "*"}'),
        pt.ToolCallEnd(1, "c2", "glob", '{"pattern": "*"}'),
        pt.Usage(10, 2),
        pt.Stop("tool_use"),
    ]
    second = await collect(p, req)
    assert second == [pt.TextDelta("Done: A and B"), pt.Usage(20, 4), pt.Stop("end_turn")]
    assert p.remaining == 0 and len(p.requests) == 2
    with pytest.raises(RecordingExhausted, match="only 2 model turns"):
        await collect(p, req)


async def test_chunked_text_and_unpaired_usage(tmp_path):
    p = RecordedProvider.from_session(recorded_session(tmp_path, with_usage=False), chunk_size=4)
    await collect(p, pt.ChatRequest(messages=()))
    out = await collect(p, pt.ChatRequest(messages=()))
    assert [e.text for e in out if isinstance(e, pt.TextDelta)] == ["Done", ": A ", "and ", "B"]
    assert not any(isinstance(e, pt.Usage) for e in out)
