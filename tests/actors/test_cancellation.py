"""Cooperative cancellation: stop requests, grace periods, subtrees, background work."""

from __future__ import annotations

import functools
import os
import signal

import pytest
import trio
import trio.testing

import actors
from actors.testing import no_leaked_tasks


class Slow(actors.Actor):
    """Each message takes ``seconds`` of (trio) time; stopping() takes ``stop_seconds``."""

    def __init__(self, log: list, seconds: float = 1.0, stop_seconds: float = 0.0) -> None:
        self.log, self.seconds, self.stop_seconds = log, seconds, stop_seconds

    async def receive(self, message: object) -> object:
        self.log.append(("begin", message))
        await trio.sleep(self.seconds)
        self.log.append(("end", message))
        return message

    async def stopping(self) -> None:
        await trio.sleep(self.stop_seconds)
        self.log.append(("stopping", self.context.name))


async def test_stop_lets_the_current_message_finish(autojump_clock):
    log: list = []
    async with actors.open_system() as system:
        ref = system.spawn(Slow, log, 1.0, name="slow", grace=5)
        ref.tell_nowait("m1")
        ref.tell_nowait("m2")  # queued: discarded by the stop
        await trio.testing.wait_all_tasks_blocked()
        t0 = trio.current_time()
        outcome = await ref.stop()
        assert trio.current_time() - t0 == pytest.approx(1.0)
        assert outcome == actors.Outcome(actors.Status.STOPPED)
        assert await ref.join() == outcome
        assert ref.status is actors.Status.STOPPED
    assert log == [("begin", "m1"), ("end", "m1"), ("stopping", "slow")]


async def test_grace_expiry_cancels_a_long_receive(autojump_clock):
    log: list = []
    async with actors.open_system() as system:
        ref = system.spawn(Slow, log, 3600.0, name="stream")
        ref.tell_nowait("model stream")
        await trio.testing.wait_all_tasks_blocked()
        t0 = trio.current_time()
        outcome = await ref.stop(grace=2.0)
        assert trio.current_time() - t0 == pytest.approx(2.0)
        assert outcome.status is actors.Status.STOPPED  # requested: not an error
    assert log == [("begin", "model stream")]  # cancelled: no end, no stopping()


async def test_grace_bounds_a_slow_stopping_hook(autojump_clock):
    log: list = []
    async with actors.open_system() as system:
        ref = system.spawn(Slow, log, 0, 100.0)
        await ref.wait_running()
        t0 = trio.current_time()
        assert (await ref.stop(grace=3)).status is actors.Status.STOPPED
        assert trio.current_time() - t0 == pytest.approx(3)
    assert log == []


class Tree(actors.Actor):
    """Spawns ``depth`` levels of ``width`` children; logs its stop."""

    def __init__(self, log: list, depth: int, width: int) -> None:
        self.log, self.depth, self.width = log, depth, width

    async def started(self) -> None:
        if self.depth:
            for i in range(self.width):
                self.context.spawn(Tree, self.log, self.depth - 1, self.width, name=f"n{i}")

    async def stopping(self) -> None:
        self.log.append(self.context.path)

    async def receive(self, message: object) -> object:
        return message


async def test_stopping_an_actor_stops_its_subtree_children_first():
    log: list = []
    async with actors.open_system() as system:
        root = system.spawn(Tree, log, 2, 2, name="r")
        await trio.testing.wait_all_tasks_blocked()
        assert len(system.actors()) == 7
        await root.stop()
        assert system.actors() == []
    assert log == [
        "/r/n1/n1", "/r/n1/n0", "/r/n1",
        "/r/n0/n1", "/r/n0/n0", "/r/n0",
        "/r",
    ]  # fmt: skip


async def test_hard_cancel_reaches_the_whole_subtree(autojump_clock):
    log: list = []

    class Stuck(Tree):
        async def stopping(self) -> None:
            await trio.sleep_forever()

    async with actors.open_system() as system:
        root = system.spawn(Stuck, log, 2, 2, name="r", grace=1)
        await trio.testing.wait_all_tasks_blocked()
        refs = system.actors()
        await root.stop()
        assert system.actors() == []
        assert all(ref.status is actors.Status.STOPPED for ref in refs)


class Owner(actors.Actor):
    """Owns long-lived background work started with context.start_soon."""

    def __init__(self, log: list) -> None:
        self.log = log

    async def started(self) -> None:
        self.context.start_soon(self.pump)

    async def pump(self) -> None:
        try:
            await trio.sleep_forever()
        finally:
            self.log.append("pump cancelled")

    async def receive(self, message: object) -> object:
        if message == "fail in background":

            async def boom() -> None:
                raise OSError("pipe broke")

            self.context.start_soon(boom)
        return message


async def test_background_work_is_cancelled_at_stop():
    log: list = []
    async with no_leaked_tasks():
        async with actors.open_system() as system:
            ref = system.spawn(Owner, log)
            await trio.testing.wait_all_tasks_blocked()
            await ref.stop()
            assert log == ["pump cancelled"]


async def test_background_failure_crashes_the_actor():
    log: list = []
    async with actors.open_system() as system:
        sup = system.spawn(actors.Supervisor, name="sup")
        spec = actors.ChildSpec(Owner, (log,), name="o", restart=actors.Restart.TEMPORARY)
        ref = await sup.ask(actors.StartChild(spec))
        ref.tell_nowait("fail in background")
        outcome = await ref.join()
        assert isinstance(outcome.exception, OSError)
        assert log == ["pump cancelled"]


class ProcessOwner(actors.Actor):
    def __init__(self, procs: list, ready: trio.Event) -> None:
        self.procs, self.ready = procs, ready

    async def started(self) -> None:
        self.context.start_soon(self.run)

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            run = functools.partial(trio.run_process, ["sleep", "3600"], check=False)
            self.procs.append(await nursery.start(run))
            self.ready.set()

    async def receive(self, message: object) -> object:
        return message


async def test_stop_kills_an_owned_subprocess():
    procs: list = []
    ready = trio.Event()
    async with actors.open_system() as system:
        ref = system.spawn(ProcessOwner, procs, ready)
        await ready.wait()
        (proc,) = procs
        assert proc.returncode is None
        await ref.stop()
        assert proc.returncode == -signal.SIGTERM
        with pytest.raises(ProcessLookupError):
            os.kill(proc.pid, 0)


async def test_self_stop_completes():
    class Once(actors.Actor):
        async def receive(self, message: object) -> object:
            self.context.stop()
            try:
                await self.context.self_ref.stop()
            except actors.ActorError as exc:
                return str(exc)

    async with actors.open_system() as system:
        ref = system.spawn(Once)
        assert "cannot await its own stop" in await ref.ask("x")
        assert (await ref.join()).status is actors.Status.COMPLETED


async def test_stop_of_a_dead_actor_returns_its_outcome():
    async with actors.open_system() as system:
        ref = system.spawn(actors.Actor)
        first = await ref.stop()
        assert await ref.stop() is first


async def test_cancelled_stopper_leaves_the_stop_in_force(autojump_clock):
    log: list = []
    async with actors.open_system() as system:
        ref = system.spawn(Slow, log, 10.0, name="s", grace=100)
        ref.tell_nowait("m")
        await trio.testing.wait_all_tasks_blocked()
        with trio.move_on_after(1):
            await ref.stop()
        assert ref.outcome is None
        assert (await ref.join()).status is actors.Status.STOPPED
        assert ("end", "m") in log


async def test_outer_cancellation_propagates_and_stops_everything(autojump_clock):
    log: list = []
    with trio.move_on_after(5) as scope:
        async with actors.open_system() as system:
            ref = system.spawn(Slow, log, 1.0, name="s")
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert ref.status is actors.Status.STOPPED
    assert log == [("stopping", "s")]


async def test_cancellation_inside_an_ask_is_not_swallowed(autojump_clock):
    log: list = []
    async with actors.open_system() as system:
        ref = system.spawn(Slow, log, 100.0)
        with trio.move_on_after(1) as scope:
            await ref.ask("x", timeout=None)
        assert scope.cancelled_caught
