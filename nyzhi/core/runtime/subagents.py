"""The subagent manager: the agent tree plus the five lifecycle tools' operations.

``spawn_agent`` / ``send_input`` / ``wait`` / ``close_agent`` / ``resume_agent``
(``nyzhi.tools.builtin.agents``) call it with the calling agent's path. It is the runtime's
``AgentTree`` (``nyzhi.core.runtime.placement``: limits, budgets, journal, one record per child), and
the only place that decides a subagent's status, so ``agent_status`` events and ``wait``
always agree:

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
(``nyzhi.core.runtime.sessions``), so a resumed session can ``resume_agent`` them too.

Every agent runs one turn at a time in its own actor; the manager awaits each turn's handle in
a watcher task of its own nursery, which is also where the wall-time budget is watched.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import trio

import actors
from nyzhi.core import events as ev
from nyzhi.core.errors import describe_error
from nyzhi.core.loop.agent import Cancel, TurnHandle, UserInput
from nyzhi.core.runtime.agent_factory import Agent, AgentFactory, AgentSpec
from nyzhi.core.runtime.briefing import briefing_from_context
from nyzhi.core.runtime.budget import Budget, Limits
from nyzhi.core.runtime.placement import (
    ACTIVE,
    FINAL,
    AgentRecord,
    AgentTree,
    Journal,
    PlacementError,
    depth_of,
    nickname_base,
)
from nyzhi.core.runtime.roles import Role, RoleCatalog, RoleError, RoleModels, subagent_prompt

WAIT_MIN_MS = 10_000
WAIT_MAX_MS = 300_000
WAIT_DEFAULT_MS = 30_000
# The error the lifecycle tools answer with: the tree's (a limit, an unknown id).
SubagentError = PlacementError


def clamp_wait_ms(timeout_ms: int | None) -> int:
    """``wait``'s timeout: default 30 s, clamped to 10 s–300 s (the original's bounds)."""
    return min(max(int(timeout_ms or WAIT_DEFAULT_MS), WAIT_MIN_MS), WAIT_MAX_MS)


class SubagentManager(AgentTree):
    """The agent tree (``nyzhi.core.runtime.placement``) and the five lifecycle operations on it;
    see the module docstring."""

    def __init__(
        self,
        *,
        system: actors.ActorSystem,
        factory: AgentFactory,
        catalog: RoleCatalog,
        models: RoleModels,
        root_budget: Budget,
        emit: Callable[[ev.Event], Awaitable[None]],
        max_threads: int = 4,
        max_depth: int = 2,
        journal: Journal | None = None,
    ) -> None:
        super().__init__(system=system, factory=factory, root_budget=root_budget, emit=emit,
                         max_threads=max_threads, max_depth=max_depth, journal=journal)
        self.catalog = catalog
        self.models = models
        self.nursery: trio.Nursery | None = None

    # ---- plumbing --------------------------------------------------------------------------

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """The manager's nursery (watchers); runs until the runtime closes."""
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    def _get(self, ident: str) -> AgentRecord:
        rec = self.lookup(ident)
        if rec is None:
            raise SubagentError(f"no agent {ident!r} (status not_found): use an agent_id "
                                "that spawn_agent returned")
        return rec

    # ---- the five operations ---------------------------------------------------------------

    async def spawn(
        self, caller: str, message: str, agent_type: str | None = None, model: str | None = None
    ) -> dict[str, Any]:
        if not message.strip():
            raise SubagentError("spawn_agent needs a non-empty 'message' (the child's task)")
        self.check_room(depth_of(caller) + 1)
        try:
            role = self.catalog.resolve(agent_type)
        except RoleError as exc:
            raise SubagentError(str(exc)) from None
        parent = self.agent_at(caller)
        if self.system.lookup(caller) is None:
            raise SubagentError(f"the calling agent {caller} is not running")
        nickname = self.free_nickname(caller, nickname_base(role.name))
        choice = self.models.resolve(role, parent.loop.model or self.factory.provider.model,
                                     requested=model or None)
        budget = self.budget_of(caller).carve(Limits.from_config(role.budget))
        rec = AgentRecord(path=f"{caller}/{nickname}", nickname=nickname, role=role.name,
                          model=choice.model, agent=None, budget=budget)
        briefing = briefing_from_context(parent.tooling.context, parent.loop.messages)
        agent = self._build(rec, role, parent.spec, subagent_prompt(role, briefing))
        detail = "; ".join((f"role {role.name}, model {choice.model}", *agent.notices))
        await self.set_status(rec, ev.AgentState.PENDING_INIT, detail)
        await self.start_child(rec)
        await self._start_turn(rec, message)
        return rec.summary()

    def _build(self, rec: AgentRecord, role: Role, parent_spec: AgentSpec,
               role_prompt: str) -> Agent:
        spec = parent_spec.child(
            rec.nickname, role=role.name, role_prompt=role_prompt, model=rec.model,
            max_steps=role.max_steps, fence=role,
            **({"thinking": role.thinking} if role.thinking is not None else {}),
        )
        info = {"role": rec.role, "model": rec.model, "role_prompt": role_prompt}
        return self.build_child(rec, spec, journal=info)

    async def _start_turn(self, rec: AgentRecord, text: str) -> None:
        assert rec.ref is not None and self.nursery is not None
        handle: TurnHandle = await rec.ref.ask(UserInput(text))
        rec.pending += 1
        rec.final, rec.reason, rec.forced = "", "", ""
        await self.set_status(rec, ev.AgentState.RUNNING)
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
            await self.set_status(rec, ev.AgentState.ERRORED, rec.reason)
        elif handle.error is not None:
            rec.reason = describe_error(handle.error)
            await self.set_status(rec, ev.AgentState.ERRORED, rec.reason)
        elif handle.cancelled or outcome is None:
            rec.reason = "interrupted: send_input or resume_agent continues it"
            await self.set_status(rec, ev.AgentState.SHUTDOWN, "interrupted")
        elif outcome.is_error:
            rec.reason = outcome.reason or f"stopped: {outcome.stop_reason}"
            rec.final = outcome.text
            await self.set_status(rec, ev.AgentState.ERRORED, rec.reason)
        else:
            rec.final = outcome.text
            await self.set_status(rec, ev.AgentState.COMPLETED)
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
            await self.set_status(r, ev.AgentState.SHUTDOWN, "closed")
        self.main.tooling.context.leases.release_all(rec.path)
        return rec.summary()

    async def resume(self, ident: str) -> dict[str, Any]:
        rec = self._get(ident)
        if not rec.closed:
            if rec.status not in ACTIVE:
                rec.reason = ""
                await self.set_status(rec, ev.AgentState.IDLE, "resumed")
            return rec.summary()
        if self.system.lookup(rec.parent) is None:
            raise SubagentError(f"the parent of {rec.path} is shut down: "
                                f"resume_agent {rec.parent} first")
        if rec.agent is None:  # restored from the session log
            try:
                role = self.catalog.resolve(rec.role)
            except RoleError as exc:
                raise SubagentError(str(exc)) from None
            parent = self.agent_at(rec.parent)
            self._build(rec, role, parent.spec, rec.prompt or subagent_prompt(role))
            assert rec.agent is not None
            rec.agent.loop.messages.extend(rec.saved)
            rec.saved = []
        await self.start_child(rec)
        rec.reason = ""
        await self.set_status(rec, ev.AgentState.IDLE, "resumed")
        return rec.summary()

    # ---- runtime-level control -------------------------------------------------------------

    def list_roles(self, query: str = "") -> dict[str, Any]:
        """The roles spawn_agent accepts (``list_roles``), filtered by ``query``."""
        roles = self.catalog.matching(query)
        return {"roles": roles, "count": len(roles)}

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
