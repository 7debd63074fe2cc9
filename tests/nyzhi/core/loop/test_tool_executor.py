"""The tool executor actor: an agent's steps run under its book, in order, each cancelled when
the executor stops, none begun while it is down."""

from __future__ import annotations

import pytest
import trio
import trio.lowlevel

import actors
from nyzhi.core.loop.tool_executor import StepBook, ToolExecutorActor, run_on_executor


async def _nothing(into):
    await trio.lowlevel.checkpoint()


async def test_steps_run_in_order_and_report_errors():
    ran = []

    async def step(into):
        await trio.lowlevel.checkpoint()
        ran.append(len(ran))
        into.append(len(ran))

    async def broken(into):
        raise ValueError("bad step")

    async with actors.open_system() as system:
        book = StepBook()
        system.spawn(ToolExecutorActor, book, name="tools")
        assert await run_on_executor(book, step, []) == [1]
        await run_on_executor(book, step, [])
        with pytest.raises(ValueError, match="bad step"):
            await run_on_executor(book, broken, [])
        await run_on_executor(book, step, [])  # the executor survived
    assert ran == [0, 1, 2]


async def test_stopping_the_executor_cancels_the_running_step_and_refuses_new_ones():
    started = trio.Event()
    finished: list[str] = []

    async def forever(into):
        into.append("started")
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            finished.append("cleaned up")  # a tool's own cleanup (a process group killed)

    async with actors.open_system() as system:
        book = StepBook()
        ref = system.spawn(ToolExecutorActor, book, name="tools")
        async with trio.open_nursery() as nursery:
            outcomes: list[list[str]] = []

            async def agent_step() -> None:
                outcomes.append(await run_on_executor(book, forever, []))

            nursery.start_soon(agent_step)
            await started.wait()
            with trio.fail_after(60):
                await ref.stop()
        # cancelled while running: the step returned what it had, after the tool cleaned up
        assert outcomes == [["started"]] and finished == ["cleaned up"]
        with pytest.raises(actors.ActorDead):
            await run_on_executor(book, forever, [])


async def test_a_cancelled_caller_gets_its_outcomes_then_one_plain_cancellation():
    """A tool running tasks of its own (bash's readers) fails with a group of Cancelled when
    its caller is cancelled; the caller still gets a plain ``trio.Cancelled`` (which the turn
    loop settles the thread on), after the outcomes arrived."""
    started = trio.Event()
    into: list[str] = []
    caught: list[str] = []

    async def step(into):
        into.append("outcome")
        async with trio.open_nursery() as tool_tasks:
            tool_tasks.start_soon(trio.sleep_forever)
            tool_tasks.start_soon(trio.sleep_forever)
            started.set()

    async with actors.open_system() as system:
        book = StepBook()
        system.spawn(ToolExecutorActor, book, name="tools")
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:

                async def cancel_when_started() -> None:
                    await started.wait()
                    scope.cancel()

                nursery.start_soon(cancel_when_started)
                try:
                    await run_on_executor(book, step, into)
                except trio.Cancelled:
                    caught.append("plain Cancelled")
                    raise
        assert scope.cancelled_caught and into == ["outcome"]
        assert caught == ["plain Cancelled"]
        assert await run_on_executor(book, _nothing, []) == []  # the book is still open
