"""The turn loop on its own: steps, tool results, cancellation settling, compaction.

The provider here is an in-process script (the loop's contract is the Provider protocol);
end-to-end tests over real HTTP live in test_run_e2e.py.
"""

from __future__ import annotations

import trio
import trio.testing

import actors
from nyzhi.core.loop.agent import AgentActor, Cancel, UserInput
from nyzhi.core.loop.turn import CANCELLED_TEXT, TurnLoop, TurnSettings
from nyzhi.provider import types as pt


class ScriptedProvider:
    name = "scripted"
    model = "scripted-model"

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests: list[pt.ChatRequest] = []
        self.hang = trio.Event()  # set by a test to let a hanging reply finish

    async def stream(self, request):
        self.requests.append(request)
        reply = self.replies.pop(0)
        for item in reply:
            if item == "HANG":
                await trio.sleep_forever()
            yield item


def text(t):
    return [pt.TextDelta(t), pt.Usage(10, 5), pt.Stop("end_turn")]


def call(i, name, args="{}"):
    return [
        pt.ToolCallStart(i, f"c{i}", name),
        pt.ToolCallEnd(i, f"c{i}", name, args),
    ]


def make_loop(provider, tool_step=None, **settings):
    events = []

    async def emit(e):
        events.append(e)

    async def default_step(calls, results):
        for c in calls:
            results[c.id] = pt.Message("tool", f"ran {c.name}", tool_call_id=c.id, name=c.name)

    loop = TurnLoop(
        agent_path="/agents/main",
        provider=provider,
        tool_schemas=lambda: [],
        tool_step=tool_step or default_step,
        system_prompt=lambda: "sys",
        emit=emit,
        settings=TurnSettings(**settings),
    )
    return loop, events


async def test_multi_step_tool_use_feeds_results_back():
    provider = ScriptedProvider([[*call(0, "read"), *call(1, "glob"), pt.Stop("tool_use")], text("done")])
    loop, events = make_loop(provider)
    outcome = await loop.run("hi")
    assert outcome.text == "done" and outcome.steps == 2
    roles = [m.role for m in loop.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]
    # the second request carried both tool results, answering each call id
    second = provider.requests[1].messages
    assert [m.tool_call_id for m in second if m.role == "tool"] == ["c0", "c1"]
    kinds = [e.type for e in events]
    assert kinds[0] == "turn_start" and kinds[-1] == "turn_complete"
    assert "usage" in kinds


async def test_max_steps_stops_with_error():
    provider = ScriptedProvider([[*call(0, "think")] for _ in range(3)])
    loop, events = make_loop(provider, max_steps=3)
    outcome = await loop.run("loop forever")
    assert outcome.is_error and outcome.stop_reason == "max_steps"
    assert any(e.type == "error" and "maximum" in e.message for e in events)


async def test_cancel_mid_stream_keeps_thread_valid(autojump_clock):
    provider = ScriptedProvider([[*call(0, "read"), pt.TextDelta("partial"), "HANG"], text("next")])
    loop, _ = make_loop(provider)
    with trio.move_on_after(1) as scope:
        await loop.run("go")
    assert scope.cancelled_caught
    # the call the model made got a "cancelled" result, so the thread is valid
    assert loop.messages[-2].tool_calls[0].id == "c0"
    assert loop.messages[-1].role == "tool" and loop.messages[-1].content == CANCELLED_TEXT
    outcome = await loop.run("again")
    assert outcome.text == "next"


async def test_cancel_mid_tool_gives_every_started_call_a_result():
    started = trio.Event()

    async def slow_step(calls, results):
        results[calls[0].id] = pt.Message("tool", "fast done", tool_call_id=calls[0].id)
        started.set()
        await trio.sleep_forever()

    provider = ScriptedProvider([[*call(0, "read"), *call(1, "bash"), pt.Stop("tool_use")]])
    loop, _ = make_loop(provider, tool_step=slow_step)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(loop.run, "go")
        await started.wait()
        nursery.cancel_scope.cancel()
    tools = [m for m in loop.messages if m.role == "tool"]
    assert [m.content for m in tools] == ["fast done", CANCELLED_TEXT]


async def test_auto_compaction_summarises_and_archives(tmp_path):
    big = "x" * 4000
    provider = ScriptedProvider([text("SUMMARY"), text("a4")])
    loop, events = make_loop(provider, context_window=2000, archive_dir=tmp_path, keep_recent=2)
    for prompt in (big, big, big):
        loop.messages.append(pt.Message("user", prompt))
        loop.messages.append(pt.Message("assistant", "ok"))
    outcome = await loop.run("small")  # over the threshold: compacts before the model call
    assert outcome.text == "a4"
    comp = [e for e in events if e.type == "compaction"]
    assert comp and comp[0].after_tokens < comp[0].before_tokens
    assert "SUMMARY" in loop.messages[0].content
    archived = list(tmp_path.glob("*.jsonl"))
    assert archived and len(archived[0].read_text().splitlines()) >= 7


async def test_agent_actor_cancel_then_next_input():
    provider = ScriptedProvider([[pt.TextDelta("x"), "HANG"], text("second")])
    loop, events = make_loop(provider)

    async def emit(e):
        events.append(e)

    async with actors.open_system() as system:
        agent = system.spawn(AgentActor, loop, emit, name="main")
        first = await agent.ask(UserInput("one"))
        await trio.testing.wait_all_tasks_blocked()
        assert await agent.ask(Cancel()) is True
        await first.wait()
        assert first.cancelled
        second = await agent.ask(UserInput("two"))
        outcome = await second.wait()
        assert outcome.text == "second"
        await agent.stop()
    statuses = [e.status for e in events if e.type == "agent_status"]
    assert statuses[:3] == ["idle", "running", "idle"]


class Flaky(Exception):
    retryable = True


async def test_a_failed_turn_reports_error_then_turn_complete_with_its_id():
    class Failing(ScriptedProvider):
        async def stream(self, request):
            raise Flaky("upstream went away")
            yield  # an async generator

    loop, events = make_loop(Failing([]))
    try:
        await loop.run("hi")
    except Flaky:
        pass
    else:
        raise AssertionError("the failure must reach the caller")
    start, error, end = events
    assert start.type == "turn_start" and end.type == "turn_complete"
    assert error.type == "error" and error.kind == "turn" and error.retryable
    assert "Flaky: upstream went away" in error.message
    assert end.turn_id == start.turn_id and end.stop_reason == "error"


async def test_every_turn_end_pairs_with_its_start_even_when_cancelled():
    provider = ScriptedProvider([[pt.TextDelta("x"), "HANG"], text("second")])
    loop, events = make_loop(provider)
    async with actors.open_system() as system:
        agent = system.spawn(AgentActor, loop, events_sink(events), name="main")
        first = await agent.ask(UserInput("one"))
        await trio.testing.wait_all_tasks_blocked()
        await agent.ask(Cancel())
        await first.wait()
        await (await agent.ask(UserInput("two"))).wait()
        await agent.stop()
    starts = [e for e in events if e.type == "turn_start"]
    ends = [e for e in events if e.type == "turn_complete"]
    assert [e.turn_id for e in ends] == [e.turn_id for e in starts] and len(set(
        e.turn_id for e in starts)) == 2
    assert [e.stop_reason for e in ends] == ["cancelled", "end_turn"]


def events_sink(events):
    async def emit(e):
        events.append(e)

    return emit
