"""Monitors (watch -> Terminated) and links (crashes propagate both ways)."""

from __future__ import annotations

import trio
import trio.testing

import actors
from actors.testing import Probe


class Watcher(actors.Actor):
    """Watches whatever ref it is told, forwards Terminated notices to a probe."""

    def __init__(self, probe: actors.ActorRef) -> None:
        self.probe = probe

    async def receive(self, message: object) -> object:
        if isinstance(message, actors.ActorRef):
            self.context.watch(message)
        elif isinstance(message, tuple) and message[0] == "unwatch":
            self.context.unwatch(message[1])
        elif isinstance(message, tuple) and message[0] == "link":
            self.context.link(message[1])
        elif isinstance(message, actors.Terminated):
            await self.probe.tell(message)
        elif message == "crash":
            raise RuntimeError("watcher crashed")
        return "ok"


class Crashy(actors.Actor):
    async def receive(self, message: object) -> object:
        if message == "crash":
            raise ValueError("bad input")
        if message == "done":
            self.context.stop()
        return message


async def spawn_pair(system):
    probe = Probe(system, name="probe")
    watcher = system.spawn(Watcher, probe.ref, name="watcher", restart=actors.Restart.TRANSIENT)
    sup = system.spawn(actors.Supervisor, name="sup")
    target = await sup.ask(
        actors.StartChild(actors.ChildSpec(Crashy, name="t", restart=actors.Restart.TEMPORARY))
    )
    return probe, watcher, sup, target


async def test_watch_delivers_terminated_with_reason():
    async with actors.open_system() as system:
        probe, watcher, _, target = await spawn_pair(system)
        await watcher.ask(target)
        target.tell_nowait("crash")
        notice = await probe.expect(actors.Terminated)
        assert notice.ref is target
        assert notice.status is actors.Status.ERRORED
        assert isinstance(notice.exception, ValueError)


async def test_watch_reports_normal_completion_and_stop():
    async with actors.open_system() as system:
        probe, watcher, sup, target = await spawn_pair(system)
        other = await sup.ask(actors.StartChild(actors.ChildSpec(Crashy, name="o")))
        await watcher.ask(target)
        await watcher.ask(other)
        target.tell_nowait("done")
        assert (await probe.expect(actors.Terminated)).status is actors.Status.COMPLETED
        await sup.ask(actors.StopChild("o"))
        notice = await probe.expect(actors.Terminated)
        assert (notice.ref, notice.status) == (other, actors.Status.STOPPED)


async def test_watching_a_dead_actor_notifies_at_once():
    async with actors.open_system() as system:
        probe, watcher, _, target = await spawn_pair(system)
        outcome = await target.stop()
        await watcher.ask(target)
        notice = await probe.expect(actors.Terminated)
        assert notice.outcome == outcome


async def test_restarts_are_invisible_to_watchers():
    async with actors.open_system() as system:
        probe, watcher, sup, _ = await spawn_pair(system)
        perm = await sup.ask(actors.StartChild(actors.ChildSpec(Crashy, name="p")))
        await watcher.ask(perm)
        perm.tell_nowait("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert perm.restarts == 1
        await probe.expect_nothing()


async def test_unwatch_stops_notices():
    async with actors.open_system() as system:
        probe, watcher, _, target = await spawn_pair(system)
        await watcher.ask(target)
        await watcher.ask(("unwatch", target))
        await target.stop()
        await trio.testing.wait_all_tasks_blocked()
        await probe.expect_nothing()


async def test_link_propagates_crash_both_ways():
    async with actors.open_system() as system:
        sup = system.spawn(actors.Supervisor, name="sup")
        temp = actors.Restart.TEMPORARY
        a = await sup.ask(actors.StartChild(actors.ChildSpec(Watcher, (None,), "a", temp)))
        b = await sup.ask(actors.StartChild(actors.ChildSpec(Crashy, name="b", restart=temp)))
        c = await sup.ask(actors.StartChild(actors.ChildSpec(Watcher, (None,), "c", temp)))
        d = await sup.ask(actors.StartChild(actors.ChildSpec(Crashy, name="d", restart=temp)))
        await a.ask(("link", b))
        await c.ask(("link", d))
        b.tell_nowait("crash")  # b crashes -> a fails
        c.tell_nowait("crash")  # c crashes -> d fails (the other direction)
        for victim, culprit, cause in ((a, b, ValueError), (d, c, RuntimeError)):
            outcome = await victim.join()
            assert outcome.status is actors.Status.ERRORED
            assert isinstance(outcome.exception, actors.LinkedCrash)
            assert outcome.exception.path == culprit.path
            assert isinstance(outcome.exception.__cause__, cause)


async def test_link_ignores_normal_stops():
    async with actors.open_system() as system:
        a = system.spawn(Watcher, None, name="a")
        b = system.spawn(Crashy, name="b")
        await a.ask(("link", b))
        await b.stop()
        b2 = system.spawn(Crashy, name="b2")
        await a.ask(("link", b2))
        b2.tell_nowait("done")
        assert (await b2.join()).status is actors.Status.COMPLETED
        await trio.testing.wait_all_tasks_blocked()
        assert a.status is actors.Status.RUNNING


async def test_linking_to_a_crashed_actor_fails_at_once():
    async with actors.open_system() as system:
        sup = system.spawn(actors.Supervisor, name="sup")
        temp = actors.Restart.TEMPORARY
        a = await sup.ask(actors.StartChild(actors.ChildSpec(Watcher, (None,), "a", temp)))
        b = await sup.ask(actors.StartChild(actors.ChildSpec(Crashy, name="b", restart=temp)))
        b.tell_nowait("crash")
        await b.join()
        a.tell_nowait(("link", b))
        outcome = await a.join()
        assert isinstance(outcome.exception, actors.LinkedCrash)


async def test_link_interrupts_a_busy_actor(autojump_clock):
    class Busy(actors.Actor):
        async def receive(self, message: object) -> object:
            if isinstance(message, actors.ActorRef):
                self.context.link(message)
                return None
            await trio.sleep_forever()

    async with actors.open_system() as system:
        sup = system.spawn(actors.Supervisor, name="sup")
        temp = actors.Restart.TEMPORARY
        busy = await sup.ask(actors.StartChild(actors.ChildSpec(Busy, name="busy", restart=temp)))
        b = await sup.ask(actors.StartChild(actors.ChildSpec(Crashy, name="b", restart=temp)))
        await busy.ask(b)
        busy.tell_nowait("block")
        await trio.testing.wait_all_tasks_blocked()
        b.tell_nowait("crash")
        outcome = await busy.join()
        assert isinstance(outcome.exception, actors.LinkedCrash)
