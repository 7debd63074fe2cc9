"""The tool executor actor: runs an agent's tool calls, as a child of that agent.

Each agent has one at ``<agent path>/tools``. Its mailbox takes ``RunCalls`` (a step's calls
and the handle the agent waits on). One worker task the actor owns runs the steps in order,
each inside the handle's cancel scope, so a cancel (``CallsHandle.cancel``) is heard while
tools run, even before the step has started; and because the executor is in the agent's
subtree, stopping the agent (or anything above it) cancels running tools and kills their
process groups too. The worker lives as long as the actor, so a step costs one message, not
a new task.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

import actors
from nyzhi import records
from nyzhi.tools.execution import ToolCallOutcome

Run = Callable[[list[ToolCallOutcome]], Awaitable[Any]]


@records.define(eq=False)
class CallsHandle:
    outcomes: list[ToolCallOutcome]
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    done: trio.Event = attrs.field(factory=trio.Event)
    error: BaseException | None = None

    def cancel(self) -> None:
        """Cancel the step, whether it is running or still queued."""
        self.scope.cancel()


@records.frozen
class RunCalls:
    """``run(handle.outcomes)`` executes the calls, appending every outcome to the list."""

    run: Run
    handle: CallsHandle


class ToolExecutorActor(actors.Actor):
    crash_on_ask_error = False

    def __init__(self) -> None:
        self._queue, self._steps = trio.open_memory_channel[RunCalls](math.inf)

    async def started(self) -> None:
        self.context.start_soon(self._worker, name=f"{self.context.path}:steps")

    async def receive(self, message: Any) -> Any:
        if isinstance(message, RunCalls):
            try:
                self._queue.send_nowait(message)
            except trio.ClosedResourceError:  # the worker has ended: we are stopping
                self._refuse(message)
            return None
        return await super().receive(message)

    async def _worker(self) -> None:
        try:
            async for message in self._steps:
                handle = message.handle
                try:
                    with handle.scope:
                        await message.run(handle.outcomes)
                except Exception as exc:  # reported to the waiting agent, never a crash
                    handle.error = exc
                finally:
                    handle.done.set()
        finally:  # stopping: a step that never started must not leave its agent waiting
            self._queue.close()
            while True:
                try:
                    message = self._steps.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
                self._refuse(message)

    def _refuse(self, message: RunCalls) -> None:
        message.handle.error = actors.ActorDead(self.context.path, None)
        message.handle.done.set()


async def run_on_executor(
    ref: actors.ActorRef, run: Run, into: list[ToolCallOutcome]
) -> list[ToolCallOutcome]:
    """Run a step on the executor actor and wait. If the caller is cancelled, the executor's
    calls are cancelled too and their outcomes (every started call gets one) still arrive in
    ``into`` before the cancellation propagates."""
    handle = CallsHandle(into)
    await ref.tell(RunCalls(run, handle))
    try:
        await handle.done.wait()
    except trio.Cancelled:
        with trio.CancelScope(shield=True):
            handle.cancel()
            await handle.done.wait()
        raise
    if handle.error is not None:
        raise handle.error
    return handle.outcomes
