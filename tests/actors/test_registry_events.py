"""Registry (unique paths, lookup) and the lifecycle event stream."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import actors
from actors import EventKind


class Echo(actors.Actor):
    async def receive(self, message: object) -> object:
        if message == "crash":
            raise RuntimeError("boom")
        if isinstance(message, tuple) and message[0] == "spawn":
            return self.context.spawn(Echo, name=message[1])
        return message


async def test_paths_names_and_lookup():
    async with actors.open_system() as system:
        agents = system.spawn(Echo, name="agents")
        main = await agents.ask(("spawn", "main"))
        sub = await main.ask(("spawn", "sub-1"))
        assert (agents.path, main.path, sub.path) == (
            "/agents",
            "/agents/main",
            "/agents/main/sub-1",
        )
        assert sub.name == "sub-1"
        assert sub.parent is main and main.parent is agents and agents.parent is None
        assert system.lookup("/agents/main/sub-1") is sub
        assert system.lookup("agents/main") is main  # leading slash optional
        assert system.lookup("/nope") is None
        assert system.children == (agents,)
        assert system.actors() == [agents, main, sub]
        await sub.stop()
        assert system.lookup("/agents/main/sub-1") is None
        again = await main.ask(("spawn", "sub-1"))  # the name is free again
        assert again is not sub


async def test_duplicate_sibling_name_is_refused():
    async with actors.open_system() as system:
        system.spawn(Echo, name="x")
        with pytest.raises(actors.NameTaken, match="/x"):
            system.spawn(Echo, name="x")
        with pytest.raises(ValueError, match="no '/'"):
            system.spawn(Echo, name="a/b")


async def test_default_names_are_unique_per_parent():
    async with actors.open_system() as system:
        a, b = system.spawn(Echo), system.spawn(Echo)
        assert (a.name, b.name) == ("echo-1", "echo-2")


async def test_event_stream_reports_lifecycle_in_order():
    async with actors.open_system() as system:
        with system.events() as events:
            ref = system.spawn(Echo, name="e", restart=actors.Restart.PERMANENT)
            await ref.wait_running()
            ref.tell_nowait("crash")
            await trio.testing.wait_all_tasks_blocked()
            await ref.stop()
            seen = []
            for _ in range(6):
                event = await events.__anext__()
                seen.append((event.kind, event.path, event.restarts))
            assert seen == [
                (EventKind.SPAWNED, "/e", 0),
                (EventKind.STARTED, "/e", 0),
                (EventKind.CRASHED, "/e", 0),
                (EventKind.RESTARTED, "/e", 1),
                (EventKind.STARTED, "/e", 1),
                (EventKind.STOPPED, "/e", 1),
            ]
            assert events.dropped == 0


async def test_crashed_event_carries_reason_and_stopped_carries_status():
    async with actors.open_system() as system:
        sup = system.spawn(actors.Supervisor, name="sup")
        async with system.events() as events:
            spec = actors.ChildSpec(Echo, name="t", restart=actors.Restart.TEMPORARY)
            ref = await sup.ask(actors.StartChild(spec))
            ref.tell_nowait("crash")
            await ref.join()
            kinds = {}
            while True:
                try:
                    event = events.receive_nowait()
                except trio.WouldBlock:
                    break
                kinds[event.kind] = event
        assert isinstance(kinds[EventKind.CRASHED].reason, RuntimeError)
        assert kinds[EventKind.STOPPED].status is actors.Status.ERRORED
        assert kinds[EventKind.STOPPED].ref is ref
        assert kinds[EventKind.STOPPED].actor_type == "Echo"


async def test_slow_subscriber_drops_and_counts_without_blocking():
    async with actors.open_system() as system:
        with system.events(buffer=3) as slow, system.events() as fast:
            for i in range(10):
                system.spawn(Echo, name=f"a{i}")
            await trio.testing.wait_all_tasks_blocked()  # nobody reads `slow`: still progresses
            assert len(system.children) == 10
            assert slow.dropped == 17  # 20 events, 3 kept
            first = [slow.receive_nowait().path for _ in range(3)]
            assert first == ["/a0", "/a1", "/a2"]
            assert fast.dropped == 0


async def test_stream_ends_when_the_system_closes():
    received = []
    async with trio.open_nursery() as nursery:
        async with actors.open_system() as system:
            events = system.events()

            async def observe() -> None:
                async for event in events:
                    received.append(event.kind)

            nursery.start_soon(observe)
            ref = system.spawn(Echo)
            await ref.wait_running()
    # the observer's loop ended by itself (the nursery could exit)
    assert received == [EventKind.SPAWNED, EventKind.STARTED, EventKind.STOPPED]
