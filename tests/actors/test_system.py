"""The system: embedding, shutdown order, what escapes supervision, no leaked tasks."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import actors
from actors.testing import Probe, live_tasks, no_leaked_tasks


class Logged(actors.Actor):
    def __init__(self, log: list) -> None:
        self.log = log

    async def started(self) -> None:
        if self.context.name == "parent":
            self.context.spawn(Logged, self.log, name="c1")
            self.context.spawn(Logged, self.log, name="c2")

    async def stopping(self) -> None:
        self.log.append(self.context.path)

    async def receive(self, message: object) -> object:
        if message == "crash":
            raise KeyError("lost")
        return message


async def test_exit_stops_everything_in_reverse_start_order():
    log: list = []
    async with no_leaked_tasks():
        async with actors.open_system() as system:
            for name in ("first", "parent", "last"):
                system.spawn(Logged, log, name=name)
            await trio.testing.wait_all_tasks_blocked()
    assert log == ["/last", "/parent/c2", "/parent/c1", "/parent", "/first"]


class Quiet(actors.Actor):
    """No hooks, no children: stopping it while it waits for a message has nothing to run."""

    async def receive(self, message: object) -> object:
        return message


class QuietParent(actors.Actor):
    async def started(self) -> None:
        self.context.spawn(Quiet, name="k")


class Observer(actors.Actor):
    def __init__(self, seen: list) -> None:
        self.seen = seen

    async def receive(self, message: object) -> object:
        if isinstance(message, actors.ActorRef):
            self.context.watch(message)
        elif isinstance(message, actors.Terminated):
            self.seen.append((message.ref.path, message.status))
        return message


async def test_idle_and_busy_actors_stop_in_one_order():
    """Idle actors are finished by the stopper itself (no round trip through their task);
    mixed with actors that have a stop sequence, the order is still reverse start order,
    children first, and every task is gone when the system is."""
    log: list = []
    async with no_leaked_tasks():
        async with actors.open_system() as system:
            with system.events() as events:
                system.spawn(Quiet, name="a")
                system.spawn(QuietParent, name="p")
                system.spawn(Logged, log, name="hooked")
                system.spawn(Quiet, name="d")
                await trio.testing.wait_all_tasks_blocked()
                await system.shutdown()
                stopped = []
                while True:
                    try:
                        event = events.receive_nowait()
                    except trio.WouldBlock:
                        break
                    if event.kind is actors.EventKind.STOPPED:
                        stopped.append((event.path, event.status))
    assert [path for path, _ in stopped] == ["/d", "/hooked", "/p/k", "/p", "/a"]
    assert {status for _, status in stopped} == {actors.Status.STOPPED}
    assert log == ["/hooked"]


async def test_stopping_an_idle_actor_notifies_watchers_and_ends_its_task():
    seen: list = []
    async with actors.open_system() as system:
        observer = system.spawn(Observer, seen, name="observer")
        idle = system.spawn(Quiet, name="idle")
        await observer.ask(idle)  # watch it
        await trio.testing.wait_all_tasks_blocked()
        outcome = await idle.stop()
        assert outcome == actors.Outcome(actors.Status.STOPPED)
        assert idle.status is actors.Status.STOPPED
        assert system.lookup("/idle") is None
        with pytest.raises(actors.ActorDead):
            idle.tell_nowait("too late")
        await trio.testing.wait_all_tasks_blocked()
        assert seen == [("/idle", actors.Status.STOPPED)]
        assert "/idle" not in {task.name for task in live_tasks()}
        assert "/observer" in {task.name for task in live_tasks()}


async def test_an_idle_parent_with_children_stops_them_first():
    async with actors.open_system() as system:
        parent = system.spawn(QuietParent, name="p")
        await trio.testing.wait_all_tasks_blocked()
        (child,) = parent.children
        with system.events() as events:
            await parent.stop()
            paths = [events.receive_nowait().path for _ in range(2)]
        assert paths == ["/p/k", "/p"]
        assert child.status is parent.status is actors.Status.STOPPED


async def test_embedded_in_an_existing_trio_program():
    results = []

    async def existing_work(send: trio.MemorySendChannel[int]) -> None:
        async with send:
            for i in range(3):
                await send.send(i)

    async with trio.open_nursery() as nursery:
        send, receive = trio.open_memory_channel[int](0)
        nursery.start_soon(existing_work, send)
        async with actors.open_system(name="embedded") as system:
            probe = Probe(system, reply=lambda m: m * 10)
            async for item in receive:
                results.append(await probe.ref.ask(item))
    assert results == [0, 10, 20]


async def test_body_exception_propagates_unchanged():
    log: list = []
    with pytest.raises(ZeroDivisionError):
        async with actors.open_system() as system:
            await system.spawn(Logged, log, name="a").wait_running()
            1 / 0  # noqa: B018
    assert log == ["/a"]


async def test_unsupervised_top_level_crash_ends_the_system():
    log: list = []
    with pytest.raises(KeyError) as info:
        async with actors.open_system() as system:
            system.spawn(Logged, log, name="other")
            ref = system.spawn(Logged, log, name="crasher")
            await ref.tell("crash")
            await trio.sleep_forever()  # cancelled when the crash escapes
    assert "raised in actor /crasher" in info.value.__notes__[0]
    assert log == ["/crasher", "/other"]


async def test_body_error_and_escaped_crash_are_both_raised():
    with pytest.RaisesGroup(ValueError, KeyError):
        async with actors.open_system() as system:
            ref = system.spawn(Logged, [], name="crasher")
            await ref.tell("crash")
            try:
                await trio.sleep_forever()
            finally:
                raise ValueError("body failed too")


async def test_spawn_after_shutdown_is_refused():
    async with actors.open_system() as system:
        await system.shutdown()
        with pytest.raises(actors.SystemClosed):
            system.spawn(actors.Actor)


async def test_no_actor_task_outlives_the_system():
    before = live_tasks()
    async with actors.open_system() as system:
        for _ in range(20):
            system.spawn(Logged, [])
        await trio.testing.wait_all_tasks_blocked()
        assert len(live_tasks() - before) >= 21  # 20 actors + the timer
    assert live_tasks() <= before


async def test_no_leaked_tasks_detects_a_leak():
    async with trio.open_nursery() as nursery:
        with pytest.raises(AssertionError, match=r"1 task\(s\) left behind: \['leaky'\]"):
            async with no_leaked_tasks():
                nursery.start_soon(trio.sleep_forever, name="leaky")
        nursery.cancel_scope.cancel()


async def test_probe_helpers(autojump_clock):
    async with actors.open_system() as system:
        probe = Probe(system, name="p")
        probe.ref.tell_nowait(1)
        probe.ref.tell_nowait("two")
        assert await probe.expect(int) == 1
        with pytest.raises(AssertionError, match="expected a int"):
            await probe.expect(int)
        with pytest.raises(AssertionError, match="no message within 2 s"):
            await probe.expect(timeout=2)
        for m in ("a", "b", 3):
            probe.ref.tell_nowait(m)
        assert await probe.wait_for(lambda m: m == 3) == 3
        probe.ref.tell_nowait("late")
        with pytest.raises(AssertionError, match="expected no message"):
            await probe.expect_nothing(1)
        assert probe.received == [1, "two", "a", "b", 3, "late"]
