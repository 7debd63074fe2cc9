"""The one signal-stop loop (``nyzhi.signals.stop_on_signal``) in process, with real signals
sent to this process: what each front end passes it decides what a signal does."""

from __future__ import annotations

import signal

import trio
import trio.lowlevel
import trio.testing

from nyzhi.signals import STOP_SIGNALS, exit_code, stop_on_signal


async def test_a_signal_that_only_interrupts_lets_the_wait_go_on_and_the_next_stops():
    """The line chat's Ctrl-C mid-turn: ``interrupts`` takes it and the loop goes on; the
    SIGTERM after it reaches ``stop`` (awaited before the loop returns the signal)."""
    seen: list[tuple[str, int]] = []
    stopped = trio.Event()

    async def interrupts(signum: int) -> bool:
        seen.append(("interrupts", signum))
        return signum == signal.SIGINT

    async def stop(signum: int) -> None:
        await trio.lowlevel.checkpoint()
        seen.append(("stop", signum))
        stopped.set()

    got: list[int] = []

    async def run() -> None:
        got.append(await stop_on_signal(stop, interrupts=interrupts))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await trio.testing.wait_all_tasks_blocked()  # the receiver is open
            signal.raise_signal(signal.SIGINT)
            while seen != [("interrupts", signal.SIGINT)]:
                await trio.lowlevel.checkpoint()
            signal.raise_signal(signal.SIGTERM)
            await stopped.wait()
    assert seen == [("interrupts", signal.SIGINT), ("interrupts", signal.SIGTERM),
                    ("stop", signal.SIGTERM)]
    assert got == [signal.SIGTERM]


async def test_without_a_stop_it_returns_the_signal_and_a_plain_stop_is_called():
    calls: list[int] = []
    got: list[int] = []

    async def run() -> None:
        got.append(await stop_on_signal(calls.append))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await trio.testing.wait_all_tasks_blocked()
            signal.raise_signal(signal.SIGHUP)
    assert calls == [signal.SIGHUP] and got == [signal.SIGHUP]
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stop_on_signal)
            await trio.testing.wait_all_tasks_blocked()
            signal.raise_signal(signal.SIGTERM)  # caught: the test process goes on


def test_the_exit_codes_are_the_shell_s():
    assert [exit_code(s) for s in STOP_SIGNALS] == [130, 143, 129]
