"""A faulty event listener cannot stop the agent: in-process through ``nyzhi.open_runtime``
and ``Runtime.add_listener`` (an embedding program's view), over real HTTP to the fake LLM."""

from __future__ import annotations

import pytest
import trio

import nyzhi
from nyzhi.core import events as ev
from nyzhi.core.event_bus import LISTENER_FAILED, EventBus
from nyzhi.core.runtime.runtime import RuntimeOptions
from nyzhi.core.runtime.sessions.store import SessionStore
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


async def until_turn_complete(channel) -> list[ev.Event]:
    seen = []
    async for event in channel:
        seen.append(event)
        if isinstance(event, ev.TurnComplete) and event.agent == ev.MAIN_AGENT:
            return seen
    raise AssertionError("the event stream ended before the turn did")


async def test_an_embedding_programs_faulty_listener_cannot_stop_the_agent(
    workspace, configure
):
    script = [
        reply(tool_calls=[tool_call("think", {"thought": "plan"})]),
        reply("first answer"),
        reply("second answer"),
    ]
    calls: list[str] = []

    async def faulty(event: ev.Event) -> None:
        calls.append(event.type)
        if event.type in ("tool_done", "turn_complete"):
            raise ValueError(f"cannot handle {event.type}")

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with nyzhi.open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            rt.add_listener(faulty, name="metrics exporter")
            async with rt.subscribe() as channel:
                first = await rt.submit("go")
                events = await until_turn_complete(channel)
                await first.wait()
                second = await rt.submit("again")  # the agent is alive and takes more work
                events += await until_turn_complete(channel)
                await second.wait()
            session_id = rt.session_id
    assert first.outcome.text == "first answer" and second.outcome.text == "second answer"
    errors = [e for e in events if isinstance(e, ev.Error)]
    assert [e.kind for e in errors] == [LISTENER_FAILED] * 3
    assert all(e.message.startswith("metrics exporter: ") for e in errors)
    assert "ValueError: cannot handle tool_done" in errors[0].message
    # each report comes right before the event the listener failed on
    kinds = [e.type for e in events]
    assert kinds[kinds.index("error") + 1] == "tool_done"
    assert calls.count("turn_complete") == 2 and "error" not in calls  # not fed its own failure
    # the other listeners went on: the session log has both turns and the reports
    session = SessionStore().load(session_id)
    assert [m.content for m in session.history if m.role == "assistant" and m.content] == [
        "first answer", "second answer"
    ]
    assert sum(1 for e in session.events if isinstance(e, ev.Error)) == 3


async def test_a_listener_that_is_not_async_is_refused_when_added(workspace, configure):
    def sync_listener(event):  # returns None: awaiting it would fail on every event
        pass

    class SyncCallable:
        def __call__(self, event):
            pass

    class AsyncCallable:
        async def __call__(self, event):
            pass

    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with nyzhi.open_runtime(RuntimeOptions(cwd=workspace, ephemeral=True)) as rt:
            with pytest.raises(TypeError, match=r"sync_listener is not async.*async def"):
                rt.add_listener(sync_listener)
            with pytest.raises(TypeError, match="my hook is not async"):
                rt.add_listener(SyncCallable(), name="my hook")
            rt.add_listener(AsyncCallable())  # an object with async __call__ is fine


async def test_every_listener_runs_when_one_fails_and_hears_the_report():
    bus = EventBus()
    heard: list[tuple[str, str]] = []

    async def first(event):
        heard.append(("first", event.type))
        raise RuntimeError("boom")

    async def second(event):
        heard.append(("second", event.type))

    bus.add_listener(first)
    bus.add_listener(second, name="second")
    async with bus.subscribe() as channel:
        await bus.publish(ev.TurnStart(turn_id="t", prompt="p"))
        report = channel.receive_nowait()
        event = channel.receive_nowait()
        with pytest.raises(trio.WouldBlock):
            channel.receive_nowait()
    assert event.type == "turn_start"
    assert report.kind == LISTENER_FAILED and "boom" in report.message
    assert report.message.startswith("event listener ")
    assert "test_every_listener_runs_when_one_fails_and_hears_the_report.<locals>.first" in (
        report.message
    )
    assert heard == [("first", "turn_start"), ("second", "error"), ("second", "turn_start")]


async def test_cancellation_passes_through_a_listener():
    """Only exceptions are isolated: a cancelled publish still cancels."""
    bus = EventBus()
    entered = trio.Event()

    async def slow(event):
        entered.set()
        await trio.sleep_forever()

    bus.add_listener(slow)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(bus.publish, ev.TurnStart(turn_id="t", prompt="p"))
        await entered.wait()
        nursery.cancel_scope.cancel()
    assert entered.is_set()
