"""The tool executor actor: the child of an agent that owns its running tool calls.

Each agent has one at ``<agent path>/tools``. The agent runs a step's calls in its own turn
task, inside a cancel scope entered in the executor's ``StepBook``: no message and no task
switch per step (handing each step to a worker task of the executor cost three scheduler
batches and ~20 us of every step). The executor still bounds them: when it stops (the agent
stopping, or anything above it; the executor's own stop or crash too), every step in its book
is cancelled, so running tools are cancelled and their process groups killed, and a step
begun while it is down is refused with ``ActorDead``. A step cancelled that way returns
normally with the outcomes its calls had (every started call gets one); a step whose caller
is cancelled raises ``trio.Cancelled`` after its outcomes arrived in ``into``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

import actors
from nyzhi.tools.execution import ToolCallOutcome

Run = Callable[[list[ToolCallOutcome]], Awaitable[Any]]


class StepBook:
    """The cancel scopes of the steps an agent is running, closed while its executor is down.

    Made by the agent and given to its ``ToolExecutorActor`` (and to each restarted
    incarnation of it); open from the start, so a step may begin before the executor's
    ``started()`` has run, as a message would have queued until then."""

    def __init__(self, path: str = "tools") -> None:
        self.path = path
        self.down = False
        self._running: set[trio.CancelScope] = set()
        self._idle: trio.Event | None = None

    def open(self) -> None:
        self.down = False

    def close(self) -> None:
        """The executor stopped: cancel every running step, refuse new ones until it is back."""
        self.down = True
        for scope in self._running:
            scope.cancel()

    async def drained(self) -> None:
        """Wait until no step is running (the cancelled ones have unwound: their tools'
        processes killed, their outcomes in the agent's hands)."""
        while self._running:
            self._idle = trio.Event()
            await self._idle.wait()

    async def run(self, run: Run, into: list[ToolCallOutcome]) -> list[ToolCallOutcome]:
        """``run(into)`` in the caller's task under a scope the executor cancels when it stops;
        the outcomes (``into``). Raises ``ActorDead`` when the executor is down, and whatever
        ``run`` raises."""
        if self.down:
            raise actors.ActorDead(self.path, None)
        scope = trio.CancelScope()
        self._running.add(scope)
        try:
            with scope:
                await run(into)
        except BaseExceptionGroup as group:
            if group.split(trio.Cancelled)[1] is not None:
                raise
            # Only cancellations (a tool's nursery cancelled with the caller): the caller
            # gets its own cancellation, one plain Cancelled, as it did waiting for a worker.
            await trio.lowlevel.checkpoint()
            raise
        finally:
            self._running.discard(scope)
            if not self._running and self._idle is not None:
                self._idle.set()
        return into


class ToolExecutorActor(actors.Actor):
    crash_on_ask_error = False

    def __init__(self, book: StepBook, shells: Any = None, agent_path: str = "") -> None:
        self.book = book
        # The agent tree's background shells (nyzhi.tools.background): this actor is the
        # parent of its agent's, so they stop with it (nyzhi.core.loop.background).
        self.shells = shells
        self.agent_path = agent_path
        self._release: Callable[[], None] = lambda: None

    async def started(self) -> None:
        from nyzhi.core.loop.background import host

        self.book.path = self.context.path
        self.book.open()
        self._release = host(self.shells, self.agent_path, self.context)
        self.context.start_soon(self._guard, name=f"{self.context.path}:guard")

    async def _guard(self) -> None:
        """Lives as long as this incarnation; its end (the actor's) closes the book, and the
        executor has stopped once its steps have unwound, as when it ran them itself: the
        agent, stopped after its children, then holds their outcomes (its record keeps them)."""
        try:
            await trio.sleep_forever()
        finally:
            self._release()
            self.book.close()
            with trio.CancelScope(shield=True):
                await self.book.drained()


async def run_on_executor(
    book: StepBook, run: Run, into: list[ToolCallOutcome]
) -> list[ToolCallOutcome]:
    """Run a step under the executor's book (see ``StepBook.run``)."""
    return await book.run(run, into)
