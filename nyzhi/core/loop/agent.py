"""The agent actor: a mailbox of user input, cancel and close in front of a ``TurnLoop``.

The actor's ``receive`` never runs a turn itself (it would then not hear ``Cancel`` until the
turn ended). Input is queued and a background task owned by the actor runs the turns one at
a time, each inside its own cancel scope; ``Cancel`` cancels the running turn's scope, the
loop settles the thread (see ``nyzhi.core.loop.turn``) and the agent is ready for the next input.
The ``TurnLoop`` is created outside the actor (by ``nyzhi.core.runtime.agent_factory``) and passed
in, so a restarted agent keeps its thread. The loop, not the actor, reports how each turn ended.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

import actors
from nyzhi import records
from nyzhi.core import events as ev
from nyzhi.core.event_bus import Emit
from nyzhi.core.loop.turn import TurnLoop, TurnOutcome


@records.frozen
class UserInput:
    text: str
    images: tuple[Any, ...] = ()  # provider.types.ImagePart: ``-i``, ``@shot.png``


@records.frozen
class Cancel:
    """Cancel the running turn (if any); queued inputs are kept."""


@records.frozen
class Close:
    """Finish: cancel the running turn, then stop the agent (and its subtree)."""


@records.frozen
class GetStatus:
    pass


@records.frozen
class SpawnSubagent:
    """Start a child agent (its own ``TurnLoop``) under this one; replies with its ref.

    Stopping this agent stops the child and everything under it."""

    name: str
    loop: TurnLoop
    # False when someone else reports the child's status (the subagent manager, which knows
    # completed from errored); the actor then emits no agent_status of its own.
    report_status: bool = True


Lifecycle = Callable[[str, str, str], Awaitable[None]]  # (hook event, agent path, status)


@records.define(eq=False)
class TurnHandle:
    """Returned by an ``ask(UserInput(...))``: await ``wait()`` for the turn's outcome, or
    ``wait_started()`` to learn whether the turn started at all (an input queued when the
    agent stopped or crashed ends cancelled without ever starting: whoever submitted it may
    then have to submit it again, as a team member's driver does with its messages)."""

    text: str
    images: tuple[Any, ...] = ()
    done: trio.Event = attrs.field(factory=trio.Event)
    outcome: TurnOutcome | None = None
    error: BaseException | None = None
    cancelled: bool = False
    started: bool = False  # the agent began running it (its turn_start is the next event)
    settled: trio.Event = attrs.field(factory=trio.Event)  # started, or done without starting

    def start(self) -> None:
        self.started = True
        self.settled.set()

    def finish(self, *, cancelled: bool) -> None:
        self.cancelled = cancelled
        self.settled.set()
        self.done.set()

    async def wait(self) -> TurnOutcome | None:
        await self.done.wait()
        return self.outcome

    async def wait_started(self) -> bool:
        """Until the turn starts (True) or ends without having started (False)."""
        await self.settled.wait()
        return self.started


class AgentActor(actors.Actor):
    # A failing ask (bad message) is the asker's problem, not a reason to kill the agent.
    crash_on_ask_error = False

    def __init__(
        self, loop: TurnLoop, emit: Emit, lifecycle: Lifecycle | None = None,
        report_status: bool = True,
    ) -> None:
        self.loop = loop
        self.report_status = report_status
        self.emit = emit
        self.lifecycle = lifecycle
        self.queue: deque[TurnHandle] = deque()
        self.wake = trio.Event()
        self.current: TurnHandle | None = None
        self.scope: trio.CancelScope | None = None
        self.status = ev.AgentState.IDLE

    async def started(self) -> None:
        from nyzhi.core.loop.tool_executor import StepBook, ToolExecutorActor
        from nyzhi.core.loop.tool_step import GatedToolStep

        step = self.loop.tool_step
        if isinstance(step, GatedToolStep):  # tools run under a child actor: <path>/tools
            book = StepBook(f"{self.context.path}/tools")
            tooling = getattr(step, "tooling", None)
            shells = getattr(getattr(tooling, "context", None), "shells", None)
            self.context.spawn(
                ToolExecutorActor, book, shells, self.context.path, name="tools",
                restart=actors.Restart.PERMANENT,
            )
            step.executor = book
        self.context.start_soon(self._run_turns, name=f"{self.context.path}:turns")
        await self._set_status(ev.AgentState.IDLE)

    async def receive(self, message: Any) -> Any:
        if isinstance(message, UserInput):
            handle = TurnHandle(message.text, message.images)
            self.queue.append(handle)
            self.wake.set()
            return handle
        if isinstance(message, Cancel):
            return self._cancel_current()
        if isinstance(message, Close):
            self._cancel_current()
            for handle in self.queue:
                handle.finish(cancelled=True)
            self.queue.clear()
            self.context.stop()
            return None
        if isinstance(message, GetStatus):
            return self.status
        if isinstance(message, SpawnSubagent):
            ref = self.context.spawn(
                AgentActor, message.loop, self.emit, self.lifecycle, message.report_status,
                name=message.name, restart=actors.Restart.TEMPORARY,
            )
            if self.lifecycle is not None:
                await self.lifecycle("subagent_start", ref.path, ev.AgentState.RUNNING)
            return ref
        return await super().receive(message)

    def _cancel_current(self) -> bool:
        if self.scope is not None:
            self.scope.cancel()
            return True
        return False

    async def stopping(self) -> None:
        # Runs before join() returns, so whoever stops a subagent sees its hook fired.
        self._cancel_current()
        for handle in (self.current, *self.queue):
            if handle is not None and not handle.done.is_set():
                handle.finish(cancelled=True)
        self.queue.clear()
        await self._set_status(ev.AgentState.SHUTDOWN)
        parent = self.context.parent
        if self.lifecycle is not None and parent is not None and parent.name != "agents":
            await self.lifecycle("subagent_stop", self.context.path, ev.AgentState.SHUTDOWN)

    async def _set_status(self, status: str, detail: str = "") -> None:
        self.status = status
        if not self.report_status:
            return
        totals = self.loop.totals
        await self.emit(ev.AgentStatus(
            agent=self.context.path, status=status, detail=detail, step=totals.steps,
            tokens=totals.input_tokens + totals.output_tokens,
            cost_usd=round(totals.cost_usd, 6),
        ))

    async def _run_turns(self) -> None:
        while True:
            while not self.queue:
                self.wake = trio.Event()
                await self.wake.wait()
            handle = self.queue.popleft()
            self.current = handle
            await self._set_status(ev.AgentState.RUNNING)
            with trio.CancelScope() as scope:
                self.scope = scope
                handle.start()  # no await before the loop's turn_start
                try:
                    handle.outcome = await self.loop.run(handle.text, handle.images)
                except Exception as exc:  # reported by the loop (error, turn_complete)
                    handle.error = exc  # a failed turn is the asker's; the agent lives on
            self.scope = None
            self.current = None
            handle.finish(cancelled=scope.cancelled_caught)
            await self._set_status(ev.AgentState.IDLE)

