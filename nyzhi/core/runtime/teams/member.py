"""One team member's inbox, wired to its agent.

A ``MemberDriver`` runs next to each member's agent (the lead, an in-process teammate, or the
one agent of a ``nyz team member`` process):

* ``inject`` is the agent's ``before_step``: unread messages go into the thread before every
  model call, as one user message with a ``[message from <sender>]`` header per message;
* its loop waits for a poke on the member's FIFO (or a turn's end) and, when the agent is idle
  and a message waits, starts a turn with those messages. It *takes* them (``Inbox.take``):
  they stay taken until the turn has started, and a turn that never started (the agent
  crashed or was restarted while the turn waited in its queue, or the process was killed)
  leaves them taken, so the next turn, of the restarted agent or process, gets them again,
  first and once;
* when the agent has nothing left (no turn, no unread message) it writes ``idle`` to the
  member's status file; a teammate then fires the ``teammate_idle`` hook and notifies the lead
  with an ``idle_notification`` (which does not wake the lead: it is read with the lead's
  next model call).

The status file is how a headless lead knows the team has finished (``TeamRuntime.wait_quiet``),
across processes. So the order is fixed: a member writes ``running`` *before* it marks
messages read, and writes ``idle`` only *after* it found its inbox empty. A lead that reads
every inbox and then every status file can then never see "all idle, nothing unread" while a
message is still on its way into a turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from nyzhi.core import events as ev
from nyzhi.core.loop.agent import TurnHandle
from nyzhi.core.runtime.teams.prompt import IDLE_NOTICE, format_for_lead, format_inbox
from nyzhi.provider import types as pt
from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.inbox import Message, deliver
from nyzhi.team_files.names import LEAD
from nyzhi.team_files.store import TeamStore
from nyzhi.tools.offload import run_blocking

# How much of a teammate's last answer its idle notification carries to the lead.
NOTICE_CHARS = 2000


class MemberDriver:
    def __init__(
        self,
        *,
        store: TeamStore,
        team: str,
        member: str,
        path: str,
        submit: Callable[[str], Awaitable[TurnHandle]],
        emit: Callable[[ev.Event], Awaitable[None]],
        hooks: Any = None,
        session_id: str = "",
        fallback: float = 2.0,
        first_prompt: str | None = None,
    ) -> None:
        self.store = store
        self.team = team
        self.member = member
        self.path = path
        self.submit = submit
        self.emit = emit
        self.hooks = hooks
        self.session_id = session_id
        self.fallback = fallback
        # A turn to start before anything else (a restarted member told to continue): counted
        # as pending before the first look at the inbox, so the member never looks idle first.
        self.first_prompt = first_prompt
        self.inbox = store.inbox(team, member)
        self.running = 0  # turns of this agent between turn_start and turn_complete
        self.pending = 0  # turns this driver submitted that have not ended
        self.taking = False  # a turn with the taken messages is submitted and not ended
        self.state = ""
        self.last_answer = ""
        self.kick = trio.Event()
        self.nursery: trio.Nursery | None = None
        self.stopped = False
        self.worked = False  # a turn ran since the last idle notice

    @property
    def is_lead(self) -> bool:
        return self.member == LEAD

    @property
    def busy(self) -> bool:
        return self.running > 0 or self.pending > 0

    # ---- the agent's side ----------------------------------------------------------------

    def format(self, messages: list[Message]) -> str:
        """The lead's are batched into one summary (``format_for_lead``)."""
        return format_for_lead(messages) if self.is_lead else format_inbox(messages)

    async def inject(self) -> list[pt.Message]:
        """``before_step``: every unread message, marked read, as one user message (for the
        lead, one summary of its teammates' reports and idle notifications). Messages taken
        for a turn that never started come first, unless a turn with them is on its way."""
        messages = await run_blocking(lambda: self.inbox.read_unread(taken=not self.taking))
        if not messages:
            return []
        return [pt.Message("user", self.format(messages))]

    async def on_event(self, event: ev.Event) -> None:
        """A bus listener: this agent's turns starting and ending."""
        if event.agent != self.path:
            return
        if isinstance(event, ev.TurnStart):
            self.running += 1
            self.worked = True
            await self._set(ev.AgentState.RUNNING)
        elif isinstance(event, ev.TurnComplete):
            self.running = max(0, self.running - 1)
            self.last_answer = event.text or self.last_answer
            self.kick.set()

    # ---- the loop ------------------------------------------------------------------------

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            # the FIFO beside the inbox; on another host, the lead's pokes down the pipe
            async with self.store.watcher(self.team, self.member, self.fallback) as watch:
                nursery.start_soon(self._pokes, watch)
                task_status.started()
                if self.first_prompt:
                    await self._start_turn(self.first_prompt)
                self.kick.set()  # messages sent before we listened
                try:
                    while True:
                        await self.kick.wait()
                        self.kick = trio.Event()
                        try:
                            await self._step()
                        except Exception as exc:  # a bad file or hook: say so, keep serving
                            await self._report(exc)
                finally:
                    nursery.cancel_scope.cancel()

    async def _report(self, exc: Exception) -> None:
        await self.emit(ev.Error(agent=self.path, kind="team",
                                 message=f"team {self.team}, member {self.member}: {exc}"))

    async def _pokes(self, watch: Any) -> None:
        while True:
            await watch.wait()
            self.kick.set()

    async def _step(self) -> None:
        if self.busy or self.stopped:
            return
        # unread messages, and any taken for a turn that never started
        waiting = await run_blocking(self.inbox.undelivered)
        wake = [m for m in waiting if m.kind != IDLE_NOTICE or not self.is_lead]
        if wake:
            # before the messages are marked read (see above)
            await self._set(ev.AgentState.RUNNING)
            messages = await run_blocking(self.inbox.take)
            if messages:
                await self._start_turn(self.format(messages), taken=True)
                return
        if self.state != ev.AgentState.IDLE:
            await self._go_idle()

    async def _start_turn(self, text: str, *, taken: bool = False) -> None:
        """Submit a turn; ``taken``: its text is the messages taken from the inbox, delivered
        once the turn starts."""
        self.pending += 1
        self.taking = taken
        try:
            handle = await self.submit(text)
        except BaseException:
            self.pending -= 1
            self.taking = False
            raise
        assert self.nursery is not None
        self.nursery.start_soon(self._finish, handle, taken)

    async def _finish(self, handle: TurnHandle, taken: bool) -> None:
        try:
            # A turn that ends without having started leaves its messages taken: the kick
            # below finds them and starts a turn with them again.
            if taken and await handle.wait_started():
                try:
                    await run_blocking(self.inbox.started)
                except Exception as exc:  # they would be delivered once more: say so
                    await self._report(exc)
            await handle.wait()
        finally:
            self.taking = False
            self.pending -= 1
            self.kick.set()

    async def _go_idle(self) -> None:
        notify = self.worked and not self.is_lead  # not at start-up: nothing was done yet
        self.worked = False
        if notify and self.hooks is not None:
            outcome = await self.hooks.fire("teammate_idle", {
                "session_id": self.session_id, "team": self.team, "member": self.member,
                "agent": self.path, "last_answer": self.last_answer[:NOTICE_CHARS],
            })
            if outcome.blocked:  # exit 2: the hook's feedback is more work for the teammate
                feedback = outcome.message or "the teammate_idle hook asks you to keep working"
                await self._deliver(self.member, feedback, sender="hook")
                return  # the poke wakes this loop again
        if notify:
            notice = f"{self.member} is idle."
            if self.last_answer.strip():
                notice += f" Last answer:\n{self.last_answer.strip()[:NOTICE_CHARS]}"
            await self._deliver(LEAD, notice, kind=IDLE_NOTICE)
        await self._set(ev.AgentState.IDLE)
        await self.emit(ev.AgentStatus(agent=self.path, status=ev.AgentState.IDLE,
                                       detail="waiting for messages"))

    async def _deliver(self, to: str, text: str, *, kind: str = "message",
                       sender: str | None = None) -> list[Message]:
        messages = await run_blocking(
            deliver, self.store, self.team, sender or self.member, to, text, kind)
        for m in messages:
            await self.emit(ev.TeamMessage(
                agent=self.path, team=self.team, sender=m.sender, to=m.to, text=m.text,
                kind=m.kind, message_id=m.id))
        return messages

    async def _set(self, state: str) -> None:
        if state == self.state:
            return
        self.state = state
        await run_blocking(lambda: self.store.set_status(self.team, self.member, status=state))

    async def stop(self, status: str = "stopped") -> None:
        self.stopped = True
        with trio.CancelScope(shield=True):
            try:
                await self._set(status)
            except TeamError:  # a member on another host whose lead has gone: nobody to tell
                pass
        if self.nursery is not None:
            self.nursery.cancel_scope.cancel()

