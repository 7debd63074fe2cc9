"""The tool executor actor: one worker per agent, cancellable steps, no step left waiting."""

from __future__ import annotations

import trio
import trio.lowlevel
import trio.testing

import actors
from nyzhi.core.tool_executor import CallsHandle, RunCalls, ToolExecutorActor, run_on_executor


async def test_steps_run_in_order_and_report_errors():
    ran = []

    async def step(into):
        await trio.lowlevel.checkpoint()
        ran.append(len(ran))

    async def broken(into):
        raise ValueError("bad step")

    async with actors.open_system() as system:
        ref = system.spawn(ToolExecutorActor, name="tools")
        await run_on_executor(ref, step, [])
        await run_on_executor(ref, step, [])
        try:
            await run_on_executor(ref, broken, [])
        except ValueError as exc:
            assert "bad step" in str(exc)
        else:
            raise AssertionError("the step's error must reach the caller")
        await run_on_executor(ref, step, [])  # the executor survived
    assert ran == [0, 1, 2]


async def test_a_step_cancelled_before_it_starts_does_not_run():
    ran = []

    async def step(into):
        await trio.lowlevel.checkpoint()
        ran.append("ran")

    async with actors.open_system() as system:
        ref = system.spawn(ToolExecutorActor, name="tools")
        handle = CallsHandle([])
        await ref.tell(RunCalls(step, handle))
        handle.cancel()  # before the worker has picked it up
        await handle.done.wait()
    assert ran == [] and handle.error is None


async def test_stopping_answers_every_queued_step():
    started = trio.Event()

    async def forever(into):
        started.set()
        await trio.sleep_forever()

    async with actors.open_system() as system:
        ref = system.spawn(ToolExecutorActor, name="tools")
        first, second = CallsHandle([]), CallsHandle([])
        await ref.tell(RunCalls(forever, first))
        await ref.tell(RunCalls(forever, second))
        await started.wait()
        await ref.stop()
        with trio.fail_after(5):
            await first.done.wait()
            await second.done.wait()
    assert first.error is None  # cancelled while running
    assert isinstance(second.error, actors.ActorDead)
