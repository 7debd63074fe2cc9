"""ask: replies, the handler's exceptions, timeouts, withdrawn requests, dead targets."""

from __future__ import annotations

import functools

import attrs
import pytest
import trio
import trio.testing

import actors


class Calc(actors.Actor):
    crashes = 0

    async def receive(self, message: object) -> object:
        match message:
            case ("add", a, b):
                return a + b
            case ("div", a, b):
                return a / b
            case ("slow", seconds):
                await trio.sleep(seconds)
                return "slow done"
            case _:
                return await super().receive(message)


async def test_ask_returns_the_reply():
    async with actors.open_system() as system:
        ref = system.spawn(Calc, name="calc")
        assert await ref.ask(("add", 2, 3)) == 5
        assert await ref.ask(("add", "a", "b"), timeout=None) == "ab"


async def test_handler_exception_is_raised_in_asker_and_crashes_actor():
    async with actors.open_system() as system:
        ref = system.spawn(Calc, restart=actors.Restart.PERMANENT)
        with pytest.raises(ZeroDivisionError):
            await ref.ask(("div", 1, 0))
        await ref.wait_running()
        assert ref.restarts == 1  # the crash was supervised: restarted
        assert await ref.ask(("div", 6, 3)) == 2


class Tolerant(Calc):
    crash_on_ask_error = False


async def test_crash_on_ask_error_false_keeps_actor_running():
    async with actors.open_system() as system:
        ref = system.spawn(Tolerant)  # TEMPORARY at top level: a crash would end the system
        with pytest.raises(ZeroDivisionError):
            await ref.ask(("div", 1, 0))
        assert ref.status is actors.Status.RUNNING
        assert ref.restarts == 0
        assert await ref.ask(("add", 1, 1)) == 2


async def test_unhandled_message_names_actor_and_type():
    async with actors.open_system() as system:
        ref = system.spawn(Tolerant, name="calc")
        with pytest.raises(actors.UnhandledMessage, match=r"/calc has no handler for float"):
            await ref.ask(1.5)


async def test_ask_timeout_names_target_and_message_type(autojump_clock):
    async with actors.open_system() as system:
        ref = system.spawn(Calc, name="calc")
        t0 = trio.current_time()
        with pytest.raises(actors.AskTimeout) as info:
            await ref.ask(("slow", 60), timeout=2.5)
        assert trio.current_time() - t0 == pytest.approx(2.5)
        assert info.value.path == "/calc"
        assert info.value.message_type is tuple
        assert "/calc did not reply to a tuple message within 2.5 s" in str(info.value)
        assert isinstance(info.value, TimeoutError)
        # the late reply is discarded; the next ask gets its own answer
        assert await ref.ask(("add", 1, 2), timeout=None) == 3


async def test_default_timeout_is_five_seconds(autojump_clock):
    async with actors.open_system() as system:
        ref = system.spawn(Calc)
        t0 = trio.current_time()
        with pytest.raises(actors.AskTimeout):
            await ref.ask(("slow", 60))
        assert trio.current_time() - t0 == pytest.approx(actors.DEFAULT_ASK_TIMEOUT)


class Recorder(actors.Actor):
    def __init__(self, gate: trio.Event, handled: list[object]) -> None:
        self.gate, self.handled = gate, handled

    async def receive(self, message: object) -> object:
        await self.gate.wait()
        self.handled.append(message)
        return message


async def test_timed_out_ask_is_withdrawn_before_handling(autojump_clock):
    gate, handled = trio.Event(), []
    async with actors.open_system() as system:
        ref = system.spawn(Recorder, gate, handled)
        ref.tell_nowait("first")  # blocks the actor
        with pytest.raises(actors.AskTimeout):
            await ref.ask("withdrawn", timeout=1)
        with trio.move_on_after(1):  # a cancelled asker withdraws its request too
            await ref.ask("cancelled", timeout=None)
        gate.set()
        assert await ref.ask("after") == "after"
    assert handled == ["first", "after"]


async def test_ask_full_mailbox_with_wait_policy_times_out(autojump_clock):
    gate, handled = trio.Event(), []
    async with actors.open_system() as system:
        ref = system.spawn(Recorder, gate, handled, mailbox_size=1)
        ref.tell_nowait("first")
        await trio.testing.wait_all_tasks_blocked()
        ref.tell_nowait("second")
        with pytest.raises(actors.AskTimeout):
            await ref.ask("third", timeout=1)
        gate.set()


async def test_ask_dead_actor_raises_actor_dead():
    async with actors.open_system() as system:
        ref = system.spawn(Calc, name="calc")
        outcome = await ref.stop()
        with pytest.raises(actors.ActorDead) as info:
            await ref.ask(("add", 1, 1))
        assert info.value.outcome == outcome
        assert "/calc is not running (it stopped)" in str(info.value)


async def test_pending_asks_fail_when_actor_stops(autojump_clock):
    gate, handled = trio.Event(), []
    results: list[object] = []
    async with actors.open_system() as system:
        ref = system.spawn(Recorder, gate, handled, grace=1)

        async def asker(message: str) -> None:
            try:
                results.append(await ref.ask(message, timeout=None))
            except actors.ActorDead as exc:
                results.append(type(exc))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(asker, "in-hand")
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(asker, "queued")
            await trio.testing.wait_all_tasks_blocked()
            await ref.stop()  # grace expires: the in-hand request is cancelled
    assert results == [actors.ActorDead, actors.ActorDead]
    assert handled == []


class SelfAsker(actors.Actor):
    async def receive(self, message: object) -> object:
        if message == "go":
            try:
                await self.context.self_ref.ask("x")
            except actors.ActorError as exc:
                return str(exc)
        return message


async def test_actor_asking_itself_is_refused():
    async with actors.open_system() as system:
        ref = system.spawn(SelfAsker, name="me")
        assert "asked itself" in await ref.ask("go")


@attrs.frozen
class Deposit:
    amount: int


@attrs.frozen
class Balance:
    pass


class Account(actors.Actor):
    """Typed dispatch with functools.singledispatchmethod, as the docs recommend."""

    def __init__(self) -> None:
        self.balance = 0

    @functools.singledispatchmethod
    async def receive(self, message: object) -> object:
        return await super().receive(message)

    @receive.register
    async def _(self, message: Deposit) -> int:
        self.balance += message.amount
        return self.balance

    @receive.register
    async def _(self, message: Balance) -> int:
        return self.balance


async def test_typed_dispatch_with_singledispatchmethod():
    async with actors.open_system() as system:
        ref = system.spawn(Account)
        await ref.tell(Deposit(5))
        assert await ref.ask(Deposit(7)) == 12
        assert await ref.ask(Balance()) == 12
        with pytest.raises(actors.UnhandledMessage):
            await ref.ask("nope")
