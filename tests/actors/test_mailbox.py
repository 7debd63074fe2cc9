"""Mailbox: ordering, bounded capacity and the three overflow policies."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import actors
from actors.testing import Probe


class Gate(actors.Actor):
    """Records messages, but blocks on the first one until ``gate`` is set."""

    def __init__(self, gate: trio.Event, seen: list[object]) -> None:
        self.gate, self.seen = gate, seen

    async def receive(self, message: object) -> None:
        await self.gate.wait()
        self.seen.append(message)


async def test_messages_arrive_in_send_order():
    async with actors.open_system() as system:
        probe = Probe(system)
        for i in range(200):
            probe.ref.tell_nowait(i)
        for i in range(100):
            await probe.ref.tell(200 + i)
        for i in range(300):
            assert await probe.expect() == i


async def test_raise_policy_refuses_when_full():
    gate, seen = trio.Event(), []
    async with actors.open_system() as system:
        ref = system.spawn(Gate, gate, seen, mailbox_size=2, overflow=actors.Overflow.RAISE)
        ref.tell_nowait("in-hand")
        await trio.testing.wait_all_tasks_blocked()  # actor now blocked on the first message
        ref.tell_nowait(1)
        ref.tell_nowait(2)
        assert ref.queued == 2
        with pytest.raises(actors.MailboxFull, match="full"):
            ref.tell_nowait(3)
        with pytest.raises(actors.MailboxFull):
            await ref.tell(3)
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        await ref.stop()
    assert seen == ["in-hand", 1, 2]


async def test_drop_policy_discards_and_counts():
    gate, seen = trio.Event(), []
    async with actors.open_system() as system:
        ref = system.spawn(Gate, gate, seen, mailbox_size=2, overflow=actors.Overflow.DROP)
        ref.tell_nowait("in-hand")
        await trio.testing.wait_all_tasks_blocked()
        for i in range(5):
            ref.tell_nowait(i)
        await ref.tell("late")
        assert ref.dropped == 4
        with pytest.raises(actors.MailboxFull):  # an ask is never silently dropped
            await ref.ask("q")
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
    assert seen == ["in-hand", 0, 1]


async def test_wait_policy_applies_backpressure():
    gate, seen = trio.Event(), []
    async with actors.open_system() as system:
        ref = system.spawn(Gate, gate, seen, mailbox_size=1, overflow=actors.Overflow.WAIT)
        ref.tell_nowait("in-hand")
        await trio.testing.wait_all_tasks_blocked()
        ref.tell_nowait("queued")
        with pytest.raises(actors.MailboxFull):  # a sync call cannot wait
            ref.tell_nowait("nope")
        sent = trio.Event()

        async def producer() -> None:
            await ref.tell("waited")
            sent.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(producer)
            await trio.testing.wait_all_tasks_blocked()
            assert not sent.is_set()  # blocked: mailbox full
            gate.set()
        assert sent.is_set()
        await trio.testing.wait_all_tasks_blocked()
        await ref.stop()
    assert seen == ["in-hand", "queued", "waited"]


async def test_cancelled_tell_does_not_queue():
    gate, seen = trio.Event(), []
    async with actors.open_system() as system:
        ref = system.spawn(Gate, gate, seen, mailbox_size=1)
        ref.tell_nowait("in-hand")
        await trio.testing.wait_all_tasks_blocked()
        ref.tell_nowait("queued")
        with trio.move_on_after(0) as scope:
            await ref.tell("cancelled")
        assert scope.cancelled_caught
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        await ref.stop()
    assert seen == ["in-hand", "queued"]


class Busy(actors.Actor):
    def __init__(self, log: list[str], tag: str) -> None:
        self.log, self.tag = log, tag

    async def receive(self, message: object) -> None:
        self.log.append(self.tag)  # never checkpoints itself


async def test_busy_actor_does_not_starve_others():
    log: list[str] = []
    async with actors.open_system() as system:
        a = system.spawn(Busy, log, "a", mailbox_size=1000)
        b = system.spawn(Busy, log, "b", mailbox_size=1000)
        await a.wait_running()
        await b.wait_running()
        for i in range(1000):
            a.tell_nowait(i)
        for i in range(10):
            b.tell_nowait(i)
        await trio.testing.wait_all_tasks_blocked()
    # b's ten messages are handled long before a's thousand are done (batched draining).
    assert log.index("b") < 500
    assert log.count("a") == 1000


async def test_tell_to_dead_actor_raises():
    async with actors.open_system() as system:
        probe = Probe(system)
        await probe.ref.stop()
        with pytest.raises(actors.ActorDead, match="not running"):
            probe.ref.tell_nowait(1)
        with pytest.raises(actors.ActorDead):
            await probe.ref.tell(1)


async def test_invalid_mailbox_size_rejected():
    async with actors.open_system() as system:
        with pytest.raises(ValueError, match="mailbox_size"):
            system.spawn(actors.Actor, mailbox_size=0)


class Flaky(actors.Actor):
    def __init__(self, seen: list[object]) -> None:
        self.seen = seen

    async def receive(self, message: object) -> None:
        if message == "crash":
            raise RuntimeError("crash")
        self.seen.append(message)


async def test_mailbox_survives_restart(autojump_clock):
    seen: list[object] = []
    async with actors.open_system() as system:
        ref = system.spawn(Flaky, seen, restart=actors.Restart.PERMANENT)
        await ref.wait_running()
        for message in ("a", "crash", "b", "c"):
            ref.tell_nowait(message)
        await trio.testing.wait_all_tasks_blocked()
        assert ref.restarts == 1
        await ref.stop()
    assert seen == ["a", "b", "c"]


async def test_waiting_senders_get_room_in_turn_and_a_cancelled_one_leaves_the_queue():
    gate, seen = trio.Event(), []
    async with actors.open_system() as system:
        ref = system.spawn(Gate, gate, seen, mailbox_size=1, overflow=actors.Overflow.WAIT)
        ref.tell_nowait("in-hand")
        await trio.testing.wait_all_tasks_blocked()
        ref.tell_nowait("queued")
        async with trio.open_nursery() as nursery:
            scopes = {}

            async def sender(name: str) -> None:
                with trio.CancelScope() as scopes[name]:
                    await ref.tell(name)

            for name in ("first", "second", "third"):
                nursery.start_soon(sender, name)
                await trio.testing.wait_all_tasks_blocked()  # parked in this order
            scopes["second"].cancel()  # while parked waiting for room
            await trio.testing.wait_all_tasks_blocked()
            gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert scopes["second"].cancelled_caught
        await ref.stop()
    assert seen == ["in-hand", "queued", "first", "third"]


async def test_senders_waiting_for_room_when_the_actor_stops_get_actor_dead():
    gate, seen = trio.Event(), []
    async with actors.open_system() as system:
        ref = system.spawn(Gate, gate, seen, mailbox_size=1, overflow=actors.Overflow.WAIT,
                           grace=0)
        ref.tell_nowait("in-hand")
        await trio.testing.wait_all_tasks_blocked()
        ref.tell_nowait("queued")
        refused: list[str] = []

        async def sender(name: str) -> None:
            try:
                await ref.tell(name)
            except actors.ActorDead:
                refused.append(name)

        async with trio.open_nursery() as nursery:
            for name in ("a", "b"):
                nursery.start_soon(sender, name)
            await trio.testing.wait_all_tasks_blocked()
            await ref.stop()  # grace 0: cancelled mid-message, the mailbox closes
    assert sorted(refused) == ["a", "b"]
    assert seen == []
