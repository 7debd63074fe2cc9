"""The subagent manager: one per runtime, behind the five lifecycle tools and ``Runtime``.

``spawn_agent`` / ``send_input`` / ``wait`` / ``close_agent`` / ``resume_agent``
(``nyzhi.tools.builtin.agents``) call it with the calling agent's path. It keeps a record per
subagent (path, nickname, role, model, status, final message, budget) and is the only place
that decides a subagent's status, so ``agent_status`` events and ``wait`` always agree:

* ``pending_init`` — built, its actor starting; ``running`` — a turn is queued or running;
* ``completed`` — its last turn answered (``final`` is the answer); ``errored`` — its turn
  failed or was stopped by its budget (``reason``: ``budget: tokens 20000/20000``);
* ``shutdown`` — closed (``close_agent``: its actor and whole subtree stopped, subprocesses
  included) or interrupted (its turn cancelled, ``detail`` "interrupted"); ``idle`` — reopened
  by ``resume_agent`` and waiting for ``send_input``. ``not_found`` is what ``wait`` says of an
  id nobody has.

A child's failure only ever reaches its parent as a status. Its thread (the ``TurnLoop``)
outlives its actor, so ``resume_agent`` starts a new actor on the same thread; a session's
subagent threads are journaled in the session's log under their path
(``nyzhi.core.sessions``), so a resumed session can ``resume_agent`` them too.

Every agent runs one turn at a time in its own actor; the manager awaits each turn's handle in
a watcher task of its own nursery, which is also where the wall-time budget is watched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

import actors
from nyzhi import records
from nyzhi.core import events as ev
from nyzhi.core.agent import Cancel, SpawnSubagent, TurnHandle, UserInput
from nyzhi.core.agent_factory import Agent, AgentFactory, AgentSpec
from nyzhi.core.briefing import briefing_from_context
from nyzhi.core.budget import Budget, Limits
from nyzhi.core.errors import describe_error
from nyzhi.core.roles import Role, RoleCatalog, RoleError, RoleModels, subagent_prompt
from nyzhi.provider import types as pt
from nyzhi.tools.builtin.agents import AgentControlError

WAIT_MIN_MS = 10_000
WAIT_MAX_MS = 300_000
WAIT_DEFAULT_MS = 30_000
ACTIVE = (ev.AgentState.PENDING_INIT, ev.AgentState.RUNNING)
FINAL = (ev.AgentState.COMPLETED, ev.AgentState.ERRORED, ev.AgentState.SHUTDOWN,
         ev.AgentState.IDLE)


class SubagentError(AgentControlError):
    """A lifecycle call that cannot be done; the text goes back to the model as a tool error."""


@records.define(eq=False)
class AgentJournal:
    """A subagent's ``SessionSink``: its thread goes to the session's log under its path."""

    writer: Any  # nyzhi.core.sessions.SessionWriter
    path: str

    def append_message(self, message: pt.Message) -> None:
        self.writer.append_message(message, agent=self.path)

    def replace_thread(
        self, messages: list[pt.Message], state: dict[str, object] | None = None
    ) -> None:
        self.writer.replace_thread(messages, state, agent=self.path)


def journal_to(writer: Any) -> Callable[[str, dict[str, Any]], AgentJournal]:
    """``SubagentManager.journal`` for a session writer: records the agent, then its thread."""

    def journal(path: str, info: dict[str, Any]) -> AgentJournal:
        writer.append_agent(path, info)
        return AgentJournal(writer, path)

    return journal


@records.define(eq=False)
class AgentRecord:
    path: str
    nickname: str
    role: str
    model: str
    agent: Agent | None  # None: restored from a session log, built on resume
    budget: Budget
    ref: actors.ActorRef | None = None
    status: str = ev.AgentState.PENDING_INIT
    final: str = ""
    reason: str = ""
    pending: int = 0  # turns queued or running
    closed: bool = False  # no actor (closed, or restored from a log)
    forced: str = ""  # a reason the manager stopped the running turn for (wall-time budget)
    saved: list[pt.Message] = attrs.field(factory=list)  # a restored thread, until resumed
    prompt: str = ""  # a restored agent's role prompt (with its original briefing)

    @property
    def parent(self) -> str:
        return self.path.rsplit("/", 1)[0]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent_id": self.path, "agent_nickname": self.nickname, "role": self.role,
            "status": self.status,
        }
        if self.status == ev.AgentState.COMPLETED:
            out["message"] = self.final
        elif self.status == ev.AgentState.ERRORED:
            out["reason"] = self.reason
        elif self.status == ev.AgentState.SHUTDOWN and self.reason:
            out["reason"] = self.reason
        return out


def clamp_wait_ms(timeout_ms: int | None) -> int:
    """``wait``'s timeout: default 30 s, clamped to 10 s–300 s (the original's bounds)."""
    return min(max(int(timeout_ms or WAIT_DEFAULT_MS), WAIT_MIN_MS), WAIT_MAX_MS)


def depth_of(path: str) -> int:
    """0 for the main agent, 1 for its children, …"""
    return path[len(ev.root_of(path)):].count("/")


def _nickname_base(role: str) -> str:
    return (re.sub(r"[^A-Za-z0-9_.-]+", "-", role).strip("-.") or "agent")[:50]


class SubagentManager:
    """See the module docstring. ``journal(path, info)`` returns the ``SessionSink`` a
    subagent's thread is recorded to (None: not recorded)."""

    def __init__(
        self,
        *,
        system: actors.ActorSystem,
        factory: AgentFactory,
        main: Agent,
        catalog: RoleCatalog,
        models: RoleModels,
        root_budget: Budget,
        emit: Callable[[ev.Event], Awaitable[None]],
        max_threads: int = 4,
        max_depth: int = 2,
        journal: Callable[[str, dict[str, Any]], Any] | None = None,
    ) -> None:
        self.system = system
        self.factory = factory
        self.main = main
        self.catalog = catalog
        self.models = models
        self.root_budget = root_budget
        self.emit = emit
        self.max_threads = max_threads
        self.max_depth = max_depth
        self.journal = journal
        self.records: dict[str, AgentRecord] = {}
        # Other root agents whose subagents this manager runs: in-process teammates
        # (``/team/<team>/<member>``, added by nyzhi.core.teams).
        self.roots: dict[str, Agent] = {}
        self.budgets: dict[str, Budget] = {ev.MAIN_AGENT: root_budget}
        self.changed = trio.Event()
        self._counters: dict[str, int] = {}
        self.nursery: trio.Nursery | None = None
        # Fires the subagent_stop hook when a subagent's work ends (completed, errored or
        # interrupted); its actor fires subagent_start, and subagent_stop again when it stops.
        self.lifecycle: Callable[[str, str, str], Awaitable[None]] | None = None

    # ---- plumbing --------------------------------------------------------------------------

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """The manager's nursery (watchers); runs until the runtime closes."""
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    async def on_event(self, event: ev.Event) -> None:
        """A bus listener: every model call's tokens and cost are charged to the agent's
        budget and its ancestors'."""
        if isinstance(event, ev.Usage):
            budget = self.budgets.get(event.agent)
            if budget is not None:
                budget.charge(tokens=event.input_tokens + event.output_tokens,
                              usd=event.cost_usd)

    def restore(self, threads: dict[str, Any]) -> None:
        """Records for the subagents of a resumed session (``Session.agents``): shut down,
        their threads kept until ``resume_agent``."""
        for path, thread in threads.items():
            info = thread.info
            nickname = path.rsplit("/", 1)[-1]
            self.records[path] = AgentRecord(
                path=path, nickname=nickname, role=str(info.get("role", "default")),
                model=str(info.get("model") or self.factory.provider.model), agent=None,
                budget=Budget(parent=self.root_budget), status=ev.AgentState.SHUTDOWN, closed=True,
                reason="from the resumed session: resume_agent reopens it",
                saved=list(thread.messages), prompt=str(info.get("role_prompt") or ""),
            )
            base, _, n = nickname.rpartition("-")
            if n.isdigit():
                self._counters[base] = max(self._counters.get(base, 0), int(n))

    async def _set(self, rec: AgentRecord, status: str, detail: str = "") -> None:
        rec.status = status
        await self.emit(ev.AgentStatus(
            agent=rec.path, status=status, detail=detail, step=rec.budget.own_steps,
            tokens=rec.budget.own_tokens, cost_usd=round(rec.budget.own_usd, 6),
        ))
        self.changed.set()
        self.changed = trio.Event()

    def lookup(self, ident: str) -> AgentRecord | None:
        """By path (the ``agent_id``) or by nickname (unique in the tree)."""
        ident = (ident or "").strip()
        if ident in self.records:
            return self.records[ident]
        return next((r for r in self.records.values() if r.nickname == ident), None)

    def _get(self, ident: str) -> AgentRecord:
        rec = self.lookup(ident)
        if rec is None:
            raise SubagentError(f"no agent {ident!r} (status not_found): use an agent_id "
                                "that spawn_agent returned")
        return rec

    def agent_at(self, path: str) -> Agent:
        if path == ev.MAIN_AGENT:
            return self.main
        if path in self.roots:
            return self.roots[path]
        rec = self.records.get(path)
        if rec is None or rec.agent is None:
            raise SubagentError(f"no running agent at {path}")
        return rec.agent

    def active(self) -> int:
        return sum(1 for r in self.records.values() if r.status in ACTIVE)

    # ---- the five operations ---------------------------------------------------------------

    async def spawn(
        self, caller: str, message: str, agent_type: str | None = None, model: str | None = None
    ) -> dict[str, Any]:
        if not message.strip():
            raise SubagentError("spawn_agent needs a non-empty 'message' (the child's task)")
        depth = depth_of(caller) + 1
        if depth > self.max_depth:
            raise SubagentError(
                f"Agent depth limit ({self.max_depth}) reached. Solve the task yourself.")
        if self.active() >= self.max_threads:
            raise SubagentError(
                f"Agent limit ({self.max_threads}) reached. Wait for an agent to finish "
                "(wait) or close one (close_agent) before spawning another.")
        try:
            role = self.catalog.resolve(agent_type)
        except RoleError as exc:
            raise SubagentError(str(exc)) from None
        parent = self.agent_at(caller)
        parent_ref = self.system.lookup(caller)
        if parent_ref is None:
            raise SubagentError(f"the calling agent {caller} is not running")
        base = _nickname_base(role.name)
        self._counters[base] = self._counters.get(base, 0) + 1
        nickname = f"{base}-{self._counters[base]}"
        path = f"{caller}/{nickname}"
        choice = self.models.resolve(role, parent.loop.model or self.factory.provider.model,
                                     requested=model or None)
        parent_budget = self.budgets.get(caller, self.root_budget)
        budget = parent_budget.carve(Limits.from_config(role.budget))
        rec = AgentRecord(path=path, nickname=nickname, role=role.name, model=choice.model,
                          agent=None, budget=budget)
        briefing = briefing_from_context(parent.tooling.context, parent.loop.messages)
        rec.agent = self._build(rec, role, parent.spec, subagent_prompt(role, briefing))
        self.records[path] = rec
        self.budgets[path] = budget
        await self._set(rec, ev.AgentState.PENDING_INIT, f"role {role.name}, model {choice.model}")
        rec.ref = await parent_ref.ask(SpawnSubagent(nickname, rec.agent.loop, False))
        await self._start_turn(rec, message)
        return rec.summary()

    def _build(self, rec: AgentRecord, role: Role, parent_spec: AgentSpec,
               role_prompt: str) -> Agent:
        info = {"role": rec.role, "model": rec.model, "role_prompt": role_prompt}
        sink = self.journal(rec.path, info) if self.journal is not None else None
        spec = parent_spec.child(
            rec.nickname, role=role.name, role_prompt=role_prompt, model=rec.model,
            max_steps=role.max_steps, fence=role, budget=rec.budget, session=sink,
        )
        return self.factory.build(spec)

    async def _start_turn(self, rec: AgentRecord, text: str) -> None:
        assert rec.ref is not None and self.nursery is not None
        handle: TurnHandle = await rec.ref.ask(UserInput(text))
        rec.pending += 1
        rec.final, rec.reason, rec.forced = "", "", ""
        await self._set(rec, ev.AgentState.RUNNING)
        self.nursery.start_soon(self._watch, rec, handle)

    async def _watch(self, rec: AgentRecord, handle: TurnHandle) -> None:
        with trio.move_on_at(rec.budget.deadline) as clock:
            await handle.done.wait()
        if clock.cancelled_caught:
            rec.forced = rec.budget.over() or "budget: time"
            await self.cancel(rec.path, "subtree")
            await handle.done.wait()
        rec.pending -= 1
        if rec.pending > 0 or rec.closed:
            return
        outcome = handle.outcome
        if rec.forced:
            rec.reason = rec.forced
            await self.emit(ev.Error(agent=rec.path, message=rec.forced, kind="budget"))
            await self._set(rec, ev.AgentState.ERRORED, rec.reason)
        elif handle.error is not None:
            rec.reason = describe_error(handle.error)
            await self._set(rec, ev.AgentState.ERRORED, rec.reason)
        elif handle.cancelled or outcome is None:
            rec.reason = "interrupted: send_input or resume_agent continues it"
            await self._set(rec, ev.AgentState.SHUTDOWN, "interrupted")
        elif outcome.is_error:
            rec.reason = outcome.reason or f"stopped: {outcome.stop_reason}"
            rec.final = outcome.text
            await self._set(rec, ev.AgentState.ERRORED, rec.reason)
        else:
            rec.final = outcome.text
            await self._set(rec, ev.AgentState.COMPLETED)
        if self.lifecycle is not None:
            await self.lifecycle("subagent_stop", rec.path, rec.status)

    async def send(self, ident: str, message: str, interrupt: bool = False) -> dict[str, Any]:
        rec = self._get(ident)
        if rec.closed or rec.ref is None:
            raise SubagentError(f"agent {rec.path} is shut down: resume_agent it first")
        if not message.strip():
            raise SubagentError("send_input needs a non-empty 'message'")
        if interrupt and rec.status in ACTIVE:
            await rec.ref.ask(Cancel())
        await self._start_turn(rec, message)
        return rec.summary()

    async def wait(self, idents: list[str], timeout_ms: int | None = None) -> dict[str, Any]:
        timeout = clamp_wait_ms(timeout_ms) / 1000

        def report() -> tuple[list[dict[str, Any]], bool]:
            out, any_final = [], False
            for ident in idents:
                rec = self.lookup(ident)
                if rec is None:
                    out.append({"agent_id": ident, "status": "not_found"})
                    any_final = True
                else:
                    out.append(rec.summary())
                    any_final = any_final or rec.status in FINAL
            return out, any_final

        with trio.move_on_after(timeout):
            while not report()[1]:
                await self.changed.wait()
        agents, done = report()
        return {"agents": agents, "timed_out": not done}

    async def close(self, ident: str) -> dict[str, Any]:
        rec = self._get(ident)
        subtree = [r for r in self.records.values()
                   if r.path == rec.path or r.path.startswith(rec.path + "/")]
        fresh = [r for r in subtree if not r.closed]
        for r in subtree:  # before stopping, so their watchers see them closed
            r.closed = True
        if rec.ref is not None:
            ref = rec.ref
            with trio.CancelScope(shield=True):
                await ref.stop()  # the actor and its subtree: turns cancelled, tools killed
        for r in fresh:
            r.ref = None
            r.reason = "closed: resume_agent reopens it"
            await self._set(r, ev.AgentState.SHUTDOWN, "closed")
        self.main.tooling.context.leases.release_all(rec.path)
        return rec.summary()

    async def resume(self, ident: str) -> dict[str, Any]:
        rec = self._get(ident)
        if not rec.closed:
            if rec.status not in ACTIVE:
                rec.reason = ""
                await self._set(rec, ev.AgentState.IDLE, "resumed")
            return rec.summary()
        parent_ref = self.system.lookup(rec.parent)
        if parent_ref is None:
            raise SubagentError(f"the parent of {rec.path} is shut down: "
                                f"resume_agent {rec.parent} first")
        if rec.agent is None:  # restored from the session log
            try:
                role = self.catalog.resolve(rec.role)
            except RoleError as exc:
                raise SubagentError(str(exc)) from None
            parent = self.agent_at(rec.parent)
            rec.agent = self._build(rec, role, parent.spec,
                                    rec.prompt or subagent_prompt(role))
            rec.agent.loop.messages.extend(rec.saved)
            rec.saved = []
        self.budgets[rec.path] = rec.budget
        rec.ref = await parent_ref.ask(SpawnSubagent(rec.nickname, rec.agent.loop, False))
        rec.closed = False
        rec.reason = ""
        await self._set(rec, ev.AgentState.IDLE, "resumed")
        return rec.summary()

    # ---- runtime-level control -------------------------------------------------------------

    async def cancel(self, path: str, scope: str = "turn") -> bool:
        """Cancel the running turn of the agent at ``path`` ("turn") or of it and every agent
        under it ("subtree"). Threads are kept."""
        if scope not in ("turn", "subtree"):
            raise ValueError(f"scope must be 'turn' or 'subtree', not {scope!r}")
        targets = [path]
        if scope == "subtree":
            targets += [p for p, r in self.records.items()
                        if p.startswith(path + "/") and not r.closed]
        cancelled = False
        for target in targets:
            ref = self.system.lookup(target)
            if ref is not None:
                try:
                    cancelled = bool(await ref.ask(Cancel())) or cancelled
                except actors.ActorError:
                    pass
        return cancelled

    async def watch_main(self, handle: TurnHandle) -> None:
        """The wall-time budget of the main agent's turn (other limits are per step)."""
        deadline = self.root_budget.deadline
        if deadline == float("inf") or self.nursery is None:
            return

        async def watch() -> None:
            with trio.move_on_at(deadline) as clock:
                await handle.done.wait()
            if clock.cancelled_caught:
                reason = self.root_budget.over() or "budget: time"
                await self.emit(ev.Error(agent=ev.MAIN_AGENT, message=reason, kind="budget"))
                await self.cancel(ev.MAIN_AGENT, "subtree")

        self.nursery.start_soon(watch)


def as_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False)
