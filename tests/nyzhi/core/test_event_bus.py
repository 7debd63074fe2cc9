"""The event bus's fan-out to subscribers while front ends come and go.

A publisher holds its list of subscribers across ``await``s (every send is a checkpoint, and a
full buffer makes it wait), so a front end can unsubscribe under it. That must cost the publisher nothing: the publisher is an
agent, and an exception out of ``publish`` crashes it (its restart drops its queued input: a
teammate's job, already marked read in its inbox, was lost that way, and its lead waited
forever). The interleaving is forced with ``trio.testing.wait_all_tasks_blocked``, not timed.
"""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from nyzhi.core import events as ev
from nyzhi.core.event_bus import LISTENER_FAILED, EventBus


def _delta(text: str) -> ev.TextDelta:
    return ev.TextDelta(agent=ev.MAIN_AGENT, text=text)


async def _refuse_late(event: ev.Event) -> None:
    """A listener that fails on ``late``: its failure report is fanned out by the bus too."""
    if isinstance(event, ev.TextDelta) and event.text == "late":
        raise ValueError("no")


@pytest.mark.parametrize("path", ["event", "listener report"])
async def test_a_front_end_leaving_while_a_publisher_waits_does_not_fail_the_publisher(path):
    bus = EventBus(buffer=1)  # one unread event fills a subscriber's buffer
    if path == "listener report":
        bus.add_listener(_refuse_late, name="refuser")
    leave = trio.Event()
    left = trio.Event()

    async def front_end(*, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with bus.subscribe():  # never reads: it only leaves
            task_status.started()
            await leave.wait()
        left.set()

    async with trio.open_nursery() as nursery, bus.subscribe() as slow:
        await nursery.start(front_end)
        await bus.publish(_delta("first"))  # both buffers are full now
        published = trio.Event()

        async def publish_late() -> None:
            await bus.publish(_delta("late"))
            published.set()

        nursery.start_soon(publish_late)
        await wait_all_tasks_blocked()  # the publisher waits on `slow`, the front end listed
        assert not published.is_set()
        leave.set()
        await left.wait()  # the front end has unsubscribed and closed its end

        assert (await slow.receive()).text == "first"  # room: the publisher goes on
        got = await slow.receive()
        if path == "listener report":
            assert isinstance(got, ev.Error) and got.kind == LISTENER_FAILED
            assert got.message.startswith("refuser: ")
            got = await slow.receive()
        assert got.text == "late"
        await published.wait()  # publish returned normally (before the fix: a ValueError)

        await bus.publish(_delta("after"))  # the bus still serves the one that stayed
        assert (await slow.receive()).text == "after"


async def test_a_listener_asking_for_some_kinds_gets_only_those():
    """``only``: a listener that wants turn ends is not called for a text delta, nor for a
    failure report; one that wants everything is called for all three."""
    bus = EventBus()
    seen: dict[str, list[str]] = {"ends": [], "all": []}

    async def ends(event: ev.Event) -> None:
        seen["ends"].append(event.type)

    async def everything(event: ev.Event) -> None:
        seen["all"].append(event.type)

    async def failing(event: ev.Event) -> None:
        if isinstance(event, ev.TextDelta):
            raise ValueError("no")

    bus.add_listener(ends, name="ends", only=(ev.TurnComplete,))
    bus.add_listener(everything, name="everything")
    bus.add_listener(failing, name="failing", only=(ev.TextDelta,))
    await bus.publish(_delta("hi"))
    await bus.publish(ev.TurnComplete(agent=ev.MAIN_AGENT, turn_id="t1", text="done"))
    assert seen["ends"] == ["turn_complete"]
    assert seen["all"] == ["text_delta", "error", "turn_complete"]  # the report included
