"""Supervision: restart types, strategies, intensity and escalation, backoff, dynamic children."""

from __future__ import annotations

import functools

import pytest
import trio
import trio.testing

import actors
from actors import ChildSpec, Restart, Strategy


class Worker(actors.Actor):
    """Logs its lifecycle to a shared list; crashes on "crash", completes on "done"."""

    def __init__(self, log: list[tuple[str, str]]) -> None:
        self.log = log

    async def started(self) -> None:
        self.log.append(("start", self.context.name))

    async def restarted(self, reason: BaseException | None) -> None:
        self.log.append(("restarted", repr(reason)))

    async def stopping(self) -> None:
        self.log.append(("stop", self.context.name))

    async def receive(self, message: object) -> object:
        if message == "crash":
            raise RuntimeError(f"{self.context.name} crashed")
        if message == "done":
            self.context.stop()
        return message


def specs(log: list, names: str, restart: Restart = Restart.PERMANENT) -> list[ChildSpec]:
    return [ChildSpec(Worker, (log,), name=n, restart=restart) for n in names]


async def start_sup(system, log, names="abc", **policy) -> actors.ActorRef:
    factory = functools.partial(actors.Supervisor, specs(log, names), **policy)
    sup = system.spawn(factory, name="sup")
    await sup.wait_running()
    for child in sup.children:
        await child.wait_running()
    log.clear()
    return sup


async def settle(sup: actors.ActorRef) -> None:
    await trio.testing.wait_all_tasks_blocked()
    for child in sup.children:
        await child.wait_running()


async def test_one_for_one_restarts_only_the_crashed_child():
    log: list = []
    async with actors.open_system() as system:
        sup = await start_sup(system, log)
        b = system.lookup("/sup/b")
        b.tell_nowait("crash")
        await settle(sup)
        assert log == [("stop", "b"), ("restarted", "RuntimeError('b crashed')"), ("start", "b")]
        assert [c.restarts for c in sup.children] == [0, 1, 0]
        assert system.lookup("/sup/b") is b  # same ref across the restart


async def test_one_for_all_restarts_everyone_in_order():
    log: list = []
    async with actors.open_system() as system:
        sup = await start_sup(system, log, strategy=Strategy.ONE_FOR_ALL)
        system.lookup("/sup/b").tell_nowait("crash")
        await settle(sup)
        stops = [name for kind, name in log if kind == "stop"]
        starts = [name for kind, name in log if kind == "start"]
        assert stops == ["b", "c", "a"]  # the crashed one, then the others in reverse order
        assert sorted(starts) == ["a", "b", "c"]
        assert [c.restarts for c in sup.children] == [1, 1, 1]


async def test_rest_for_one_restarts_the_child_and_later_ones():
    log: list = []
    async with actors.open_system() as system:
        sup = await start_sup(system, log, "abcd", strategy=Strategy.REST_FOR_ONE)
        system.lookup("/sup/b").tell_nowait("crash")
        await settle(sup)
        stops = [name for kind, name in log if kind == "stop"]
        assert stops == ["b", "d", "c"]
        assert [c.restarts for c in sup.children] == [0, 1, 1, 1]
        assert [c.name for c in sup.children] == ["a", "b", "c", "d"]  # positions kept


async def test_temporary_siblings_are_not_restarted_by_group_restart():
    log: list = []
    children = specs(log, "a") + specs(log, "t", Restart.TEMPORARY) + specs(log, "c")
    async with actors.open_system() as system:
        sup = system.spawn(actors.Supervisor, children, Strategy.ONE_FOR_ALL, name="sup")
        await sup.wait_running()
        t = system.lookup("/sup/t")
        await t.wait_running()
        system.lookup("/sup/a").tell_nowait("crash")
        await settle(sup)
        assert (await t.join()).status is actors.Status.STOPPED
        assert [c.name for c in sup.children] == ["a", "c"]


@pytest.mark.parametrize(
    ("restart", "message", "restarted", "final"),
    [
        (Restart.PERMANENT, "crash", True, None),
        (Restart.PERMANENT, "done", True, None),
        (Restart.TRANSIENT, "crash", True, None),
        (Restart.TRANSIENT, "done", False, actors.Status.COMPLETED),
        (Restart.TEMPORARY, "crash", False, actors.Status.ERRORED),
        (Restart.TEMPORARY, "done", False, actors.Status.COMPLETED),
    ],
)
async def test_restart_types(restart, message, restarted, final):
    log: list = []
    async with actors.open_system() as system:
        sup = system.spawn(actors.Supervisor, specs(log, "w", restart), name="sup")
        await sup.wait_running()
        w = system.lookup("/sup/w")
        await w.wait_running()
        w.tell_nowait(message)
        await trio.testing.wait_all_tasks_blocked()
        if restarted:
            assert w.restarts == 1
            assert w.status is actors.Status.RUNNING
        else:
            outcome = await w.join()
            assert outcome.status is final
            assert w.restarts == 0
            assert sup.status is actors.Status.RUNNING  # absorbed, nothing escalated


async def test_explicit_stop_is_never_restarted():
    log: list = []
    async with actors.open_system() as system:
        sup = await start_sup(system, log, "a")
        a = system.lookup("/sup/a")
        assert (await a.stop()).status is actors.Status.STOPPED
        await trio.testing.wait_all_tasks_blocked()
        assert a.restarts == 0
        assert sup.children == ()


async def test_intensity_exceeded_escalates_to_parent_supervisor(autojump_clock):
    log: list = []
    inner = ChildSpec(
        functools.partial(actors.Supervisor, specs(log, "w"), max_restarts=2, within=10),
        name="inner",
    )
    async with actors.open_system() as system:
        with system.events() as events:
            outer = system.spawn(actors.Supervisor, [inner], name="outer")
            for expected_inner_restarts in (0, 0, 0, 1):
                async for event in events:  # wait for (a fresh incarnation of) the worker
                    if event.kind is actors.EventKind.STARTED and event.path == "/outer/inner/w":
                        w = event.ref
                        break
                assert system.lookup("/outer/inner").restarts == expected_inner_restarts
                w.tell_nowait("crash")
                await trio.testing.wait_all_tasks_blocked()
        inner_ref = system.lookup("/outer/inner")
        assert inner_ref.restarts == 1  # the third crash in 10 s made `inner` give up
        assert outer.status is actors.Status.RUNNING


async def test_restarts_outside_the_window_do_not_count(autojump_clock):
    log: list = []
    async with actors.open_system() as system:
        sup = await start_sup(system, log, "w", max_restarts=1, within=5)
        w = system.lookup("/sup/w")
        for _ in range(4):
            w.tell_nowait("crash")
            await settle(sup)
            await trio.sleep(6)  # each crash is alone in its window
        assert w.restarts == 4
        assert sup.restarts == 0


async def test_top_level_intensity_exceeded_ends_the_system(autojump_clock):
    log: list = []
    with pytest.raises(actors.RestartIntensityExceeded) as info:
        async with actors.open_system(max_restarts=2, within=5) as system:
            w = system.spawn(Worker, log, name="w", restart=Restart.PERMANENT)
            for _ in range(3):
                await w.wait_running()
                w.tell_nowait("crash")
                await trio.testing.wait_all_tasks_blocked()
            await trio.sleep_forever()  # cancelled by the escalation
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "exceeded 2 restart(s) within 5 s" in str(info.value)


async def test_backoff_delays_restarts(autojump_clock):
    log: list = []
    backoff = actors.Backoff(initial=1.0, factor=2.0, maximum=3.0)
    async with actors.open_system() as system:
        sup = await start_sup(system, log, "w", max_restarts=10, within=100, backoff=backoff)
        w = system.lookup("/sup/w")
        delays = []
        for _ in range(4):
            t0 = trio.current_time()
            w.tell_nowait("crash")
            await trio.testing.wait_all_tasks_blocked()
            await w.wait_running()
            delays.append(trio.current_time() - t0)
        assert delays == pytest.approx([1.0, 2.0, 3.0, 3.0])
        assert sup.status is actors.Status.RUNNING


async def test_stop_during_backoff_cancels_the_restart(autojump_clock):
    log: list = []
    async with actors.open_system() as system:
        sup = await start_sup(system, log, "w", backoff=actors.Backoff(initial=60))
        w = system.lookup("/sup/w")
        w.tell_nowait("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert w.status is actors.Status.PENDING_INIT
        t0 = trio.current_time()
        assert (await sup.stop()).status is actors.Status.STOPPED
        assert trio.current_time() - t0 < 1
        assert w.outcome is not None


async def test_dynamic_children():
    log: list = []
    async with actors.open_system() as system:
        sup = system.spawn(actors.Supervisor, name="sup")
        ref = await sup.ask(actors.StartChild(ChildSpec(Worker, (log,), name="dyn")))
        assert ref.path == "/sup/dyn"
        assert await ref.ask("hi") == "hi"
        assert await sup.ask(actors.WhichChildren()) == (ref,)
        outcome = await sup.ask(actors.StopChild("dyn"))
        assert outcome.status is actors.Status.STOPPED
        assert await sup.ask(actors.StopChild("dyn")) is None
        assert await sup.ask(actors.WhichChildren()) == ()


class Parent(actors.Actor):
    """A plain actor supervising children it spawns at run time."""

    supervision = actors.Supervision(strategy=Strategy.ONE_FOR_ONE, max_restarts=5)

    def __init__(self, log: list) -> None:
        self.log = log

    async def receive(self, message: object) -> object:
        if message == "spawn":
            return self.context.spawn(Worker, self.log, restart=Restart.TRANSIENT)
        return None


async def test_any_actor_supervises_the_children_it_spawns():
    log: list = []
    async with actors.open_system() as system:
        parent = system.spawn(Parent, log, name="p")
        child = await parent.ask("spawn")
        assert child.path == "/p/worker-1"
        assert child.parent is parent
        child.tell_nowait("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert child.restarts == 1
        assert parent.children == (child,)


async def test_spec_and_options_are_exclusive():
    async with actors.open_system() as system:
        with pytest.raises(TypeError, match="ChildSpec"):
            system.spawn(ChildSpec(Worker, ([],)), name="x")


class BusyParent(actors.Actor):
    """Spawns a permanent child, then sits in a long receive (like a model stream)."""

    def __init__(self, log: list, release: trio.Event) -> None:
        self.log, self.release = log, release

    async def started(self) -> None:
        self.context.spawn(Worker, self.log, name="mcp", restart=Restart.PERMANENT)

    async def receive(self, message: object) -> object:
        await self.release.wait()
        return message


async def test_busy_parent_does_not_delay_child_restarts():
    log: list = []
    release = trio.Event()
    async with actors.open_system() as system:
        parent = system.spawn(BusyParent, log, release, name="agent")
        await parent.wait_running()
        parent.tell_nowait("stream")
        await trio.testing.wait_all_tasks_blocked()
        child = system.lookup("/agent/mcp")
        child.tell_nowait("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert child.restarts == 1  # restarted while the parent is still busy
        assert child.status is actors.Status.RUNNING
        release.set()


async def test_wait_running_raises_if_the_actor_dies_first():
    class FailsToStart(actors.Actor):
        async def started(self) -> None:
            raise OSError("no such device")

    async with actors.open_system() as system:
        sup = system.spawn(actors.Supervisor, name="sup")
        spec = ChildSpec(FailsToStart, name="f", restart=Restart.TEMPORARY)
        ref = await sup.ask(actors.StartChild(spec))
        with pytest.raises(actors.ActorDead):
            await ref.wait_running()
        outcome = await ref.join()
        assert not outcome.ok and outcome.status.terminal
        assert isinstance(outcome.exception, OSError)
