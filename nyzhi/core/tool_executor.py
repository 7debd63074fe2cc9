"""The tool executor actor: runs an agent's tool calls, as a child of that agent.

Each agent has one at ``<agent path>/tools``. Its mailbox takes ``RunCalls`` (a step's calls;
the reply is a handle to wait on) and ``CancelCalls``. The calls run in a background task
the actor owns, inside a cancel scope, so a cancel is heard while tools run; and because the
executor is in the agent's subtree, stopping the agent (or anything above it) cancels running
tools and kills their process groups too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

import actors
from nyzhi.tools.execution import ToolCallOutcome


@attrs.define(eq=False)
class CallsHandle:
    outcomes: list[ToolCallOutcome] = attrs.field(factory=list)
    done: trio.Event = attrs.field(factory=trio.Event)
    error: BaseException | None = None


@attrs.frozen
class RunCalls:
    """``run(into)`` executes the calls, appending every outcome to ``into``."""

    run: Callable[[list[ToolCallOutcome]], Awaitable[Any]]
    into: list[ToolCallOutcome]


@attrs.frozen
class CancelCalls:
    pass


class ToolExecutorActor(actors.Actor):
    crash_on_ask_error = False

    def __init__(self) -> None:
        self.scope: trio.CancelScope | None = None

    async def receive(self, message: Any) -> Any:
        if isinstance(message, RunCalls):
            handle = CallsHandle(message.into)
            self.context.start_soon(self._run, message, handle, name=f"{self.context.path}:step")
            return handle
        if isinstance(message, CancelCalls):
            if self.scope is not None:
                self.scope.cancel()
            return None
        return await super().receive(message)

    async def _run(self, message: RunCalls, handle: CallsHandle) -> None:
        try:
            with trio.CancelScope() as self.scope:
                await message.run(handle.outcomes)
        except Exception as exc:  # reported to the waiting agent, never a crash of the actor
            handle.error = exc
        finally:
            self.scope = None
            handle.done.set()


async def run_on_executor(
    ref: actors.ActorRef,
    run: Callable[[list[ToolCallOutcome]], Awaitable[Any]],
    into: list[ToolCallOutcome],
) -> list[ToolCallOutcome]:
    """Run a step on the executor actor and wait. If the caller is cancelled, the executor's
    calls are cancelled too and their outcomes (every started call gets one) still arrive in
    ``into`` before the cancellation propagates."""
    handle: CallsHandle = await ref.ask(RunCalls(run, into))
    try:
        await handle.done.wait()
    except trio.Cancelled:
        with trio.CancelScope(shield=True):
            await ref.tell(CancelCalls())
            await handle.done.wait()
        raise
    if handle.error is not None:
        raise handle.error
    return handle.outcomes
