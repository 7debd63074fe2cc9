"""The agent tree: the one place that puts an agent into a runtime (``AgentTree``).

Agents are *built* by one factory (``nyzhi.core.runtime.agent_factory``) and *placed* here, whoever
asks: ``open_runtime`` for the main agent, the lifecycle tools for subagents
(``nyzhi.core.runtime.subagents.SubagentManager``, which is this tree plus the five operations),
``TeamRuntime`` for teammates, and ``Runtime.spawn`` / ``Runtime.spawn_agent`` for an
embedding program. Placing an agent is what makes it count, so the tree alone holds:

* **limits** — ``max_depth`` levels below a root agent and ``max_threads`` subagents running
  at once, checked for every child placed (a tool's ``spawn_agent`` and the embedding API
  alike); a refusal is a ``PlacementError`` whose text the model can act on;
* **budgets** — every placed agent's ``Budget``: a root's is the runtime's root budget (the
  main agent) or carved from it (a teammate), a child's is carved from its parent's; each
  ``usage`` event is charged to the agent's budget and up the tree;
* **the journal** — where a placed agent's thread is recorded in the session log;
* **statuses** — one ``AgentRecord`` per child agent (its status, final message, budget), and
  the last reported status of every root.

``placed()`` lists every placed agent with what it has used (for a front end's usage view
and a run's result). Nothing outside the tree writes its fields: teams and front ends ask.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

import actors
from nyzhi import records
from nyzhi.core import events as ev
from nyzhi.core.loop.agent import AgentActor, SpawnSubagent
from nyzhi.core.runtime.agent_factory import Agent, AgentFactory, AgentSpec
from nyzhi.core.runtime.budget import Budget, Limits
from nyzhi.provider import types as pt
from nyzhi.tools.base import AgentControlError

ACTIVE = (ev.AgentState.PENDING_INIT, ev.AgentState.RUNNING)
FINAL = (ev.AgentState.COMPLETED, ev.AgentState.ERRORED, ev.AgentState.SHUTDOWN,
         ev.AgentState.IDLE)

Journal = Callable[[str, dict[str, Any]], Any]  # (path, info) -> the agent's SessionSink


class PlacementError(AgentControlError):
    """An agent the tree will not place (a limit, a busy path), or an operation on an agent it
    does not have; the text goes back to the model as a tool error."""


@records.define(eq=False)
class AgentJournal:
    """A placed agent's ``SessionSink``: its thread goes to the session's log under its path."""

    writer: Any  # nyzhi.core.runtime.sessions.SessionWriter
    path: str

    def append_message(self, message: pt.Message) -> None:
        self.writer.append_message(message, agent=self.path)

    def replace_thread(
        self, messages: list[pt.Message], state: dict[str, object] | None = None
    ) -> None:
        self.writer.replace_thread(messages, state, agent=self.path)


def journal_to(writer: Any) -> Journal:
    """The tree's journal for a session writer: records the agent, then its thread."""

    def journal(path: str, info: dict[str, Any]) -> AgentJournal:
        writer.append_agent(path, info)
        return AgentJournal(writer, path)

    return journal


@records.define(eq=False)
class AgentRecord:
    """A child agent of the tree (a subagent, or one an embedding program placed)."""

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
    # Placed by an embedding program (``Runtime.spawn``), which drives its turns itself: its
    # actor reports its own statuses and the tree mirrors them.
    external: bool = False

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


@records.frozen
class Placed:
    """One placed agent and what it has used itself (``AgentTree.placed``)."""

    path: str
    kind: str  # "main", "teammate", "process" (a process teammate), "subagent", "embedded"
    status: str
    tokens: int
    usd: float
    steps: int


def depth_of(path: str) -> int:
    """0 for a root agent (the main agent, a teammate), 1 for its children, …"""
    return path[len(ev.root_of(path)):].count("/")


def nickname_base(role: str) -> str:
    return (re.sub(r"[^A-Za-z0-9_.-]+", "-", role).strip("-.") or "agent")[:50]


class AgentTree:
    """See the module docstring. ``journal(path, info)`` returns the ``SessionSink`` a placed
    agent's thread is recorded to (None: nothing is recorded)."""

    def __init__(
        self,
        *,
        system: actors.ActorSystem,
        factory: AgentFactory,
        root_budget: Budget,
        emit: Callable[[ev.Event], Awaitable[None]],
        max_threads: int = 4,
        max_depth: int = 2,
        journal: Journal | None = None,
    ) -> None:
        self.system = system
        self.factory = factory
        self.root_budget = root_budget
        self.emit = emit
        self.max_threads = max_threads
        self.max_depth = max_depth
        self._journal = journal
        self.records: dict[str, AgentRecord] = {}
        self._roots: dict[str, Agent] = {}  # the main agent, in-process teammates
        self._kinds: dict[str, str] = {}  # root path -> its Placed.kind
        self._root_status: dict[str, str] = {}  # root path -> its last agent_status
        self._budgets: dict[str, Budget] = {ev.MAIN_AGENT: root_budget}
        self._counters: dict[str, int] = {}  # nickname base -> the last number given
        self.changed = trio.Event()
        # Fires the subagent_stop hook when a subagent's work ends; set by open_runtime.
        self.lifecycle: Callable[[str, str, str], Awaitable[None]] | None = None

    # ---- what the tree knows ---------------------------------------------------------------

    @property
    def main(self) -> Agent:
        return self._roots[ev.MAIN_AGENT]

    def lookup(self, ident: str) -> AgentRecord | None:
        """By path (the ``agent_id``) or by nickname (unique in the tree)."""
        ident = (ident or "").strip()
        if ident in self.records:
            return self.records[ident]
        return next((r for r in self.records.values() if r.nickname == ident), None)

    def agent_at(self, path: str) -> Agent:
        if path in self._roots:
            return self._roots[path]
        rec = self.records.get(path)
        if rec is None or rec.agent is None:
            raise PlacementError(f"no running agent at {path}")
        return rec.agent

    def budget_of(self, path: str) -> Budget:
        """The budget of the placed agent at ``path``, else of its nearest placed ancestor
        (a process teammate's own subagents are placed in its process), else the root's."""
        while path:
            if path in self._budgets:
                return self._budgets[path]
            path = path.rpartition("/")[0]
        return self.root_budget

    def active(self) -> int:
        return sum(1 for r in self.records.values() if r.status in ACTIVE)

    def placed(self) -> list[Placed]:
        """Every agent placed in this runtime, roots first, with its own tokens, dollars and
        steps (a parent's figures leave out its children's; ``root_budget`` has the sum)."""
        out = []
        for path, kind in self._kinds.items():
            b = self._budgets[path]
            out.append(Placed(path, kind, self._root_status.get(path, ev.AgentState.IDLE), b.own_tokens,
                              round(b.own_usd, 6), b.own_steps))
        for rec in self.records.values():
            b = rec.budget
            out.append(Placed(rec.path, "embedded" if rec.external else "subagent", rec.status,
                              b.own_tokens, round(b.own_usd, 6), b.own_steps))
        return out

    # ---- placing ---------------------------------------------------------------------------

    def check_room(self, depth: int) -> None:
        """Refuse a child at ``depth`` (``depth_of`` its path) past ``max_depth``, or while
        ``max_threads`` run."""
        if depth > self.max_depth:
            raise PlacementError(
                f"Agent depth limit ({self.max_depth}) reached. Solve the task yourself.")
        if self.active() >= self.max_threads:
            raise PlacementError(
                f"Agent limit ({self.max_threads}) reached. Wait for an agent to finish "
                "(wait) or close one (close_agent) before spawning another.")

    def free_nickname(self, parent: str, base: str) -> str:
        """``<base>-<n>`` for a child of ``parent``, numbered across the tree (so a nickname
        names one agent), skipping a path already taken."""
        counters = self._counters
        while True:
            counters[base] = counters.get(base, 0) + 1
            nickname = f"{base}-{counters[base]}"
            if f"{parent}/{nickname}" not in self.records:
                return nickname

    def build_root(self, spec: AgentSpec, *, kind: str = "main", limits: Limits | None = None,
                   journal: dict[str, Any] | None = None) -> Agent:
        """Build a root agent (the main agent: the root budget; a teammate: a budget carved
        from it with ``limits``; ``journal``: its thread goes to the session log)."""
        path = spec.path
        if path == ev.MAIN_AGENT:
            budget = self.root_budget
        else:
            budget = self.root_budget.carve(limits or Limits())
        changes: dict[str, Any] = {"budget": budget}
        if journal is not None and self._journal is not None:
            changes["session"] = self._journal(path, journal)
        agent = self.factory.build(attrs.evolve(spec, **changes))
        self._roots[path] = agent
        self._kinds[path] = kind
        self._budgets[path] = budget
        return agent

    async def start_root(self, agent: Agent, under: actors.ActorRef) -> actors.ActorRef:
        """Start a built root agent's actor under the supervisor ``under``."""
        return await under.ask(actors.StartChild(actors.ChildSpec(
            AgentActor, (agent.loop, self.emit, self.lifecycle), name=agent.spec.name,
            restart=actors.Restart.TRANSIENT)))

    def reserve(self, path: str, kind: str = "process") -> Budget:
        """A budget for a root whose agent runs elsewhere (a process teammate: its usage
        comes back as events), carved from the root budget."""
        budget = self.root_budget.carve(Limits())
        self._budgets[path] = budget
        self._kinds[path] = kind
        return budget

    def build_child(self, rec: AgentRecord, spec: AgentSpec,
                    journal: dict[str, Any] | None = None) -> Agent:
        """Build the agent of ``rec`` from ``spec`` with its budget and journal, and record
        it (not yet started: ``start_child``)."""
        changes: dict[str, Any] = {"budget": rec.budget}
        if journal is not None and self._journal is not None:
            changes["session"] = self._journal(rec.path, journal)
        rec.agent = self.factory.build(attrs.evolve(spec, **changes))
        self.records[rec.path] = rec
        self._budgets[rec.path] = rec.budget
        return rec.agent

    async def start_child(self, rec: AgentRecord) -> actors.ActorRef:
        """Start ``rec``'s actor under its parent's (stopping the parent stops it)."""
        parent_ref = self.system.lookup(rec.parent)
        if parent_ref is None:
            raise PlacementError(f"the parent of {rec.path} is shut down: "
                                 f"resume_agent {rec.parent} first")
        assert rec.agent is not None
        self._budgets[rec.path] = rec.budget
        rec.ref = await parent_ref.ask(
            SpawnSubagent(rec.nickname, rec.agent.loop, rec.external))
        rec.closed = False
        return rec.ref

    async def place(self, spec: AgentSpec) -> actors.ActorRef:
        """The embedding API's placement (``Runtime.spawn``): ``spec`` under the agent one level
        up its path, within the tree's limits, on a budget carved from its parent's (with
        ``spec.budget``'s limits, if it has one). Its thread is journaled only if the spec
        names a session sink; its caller drives its turns (``ref.ask(UserInput(...))``)."""
        parent_path, _, name = spec.path.rpartition("/")
        if self.system.lookup(parent_path) is None:
            raise LookupError(f"cannot start {spec.path}: no running agent at {parent_path}")
        held = self.records.get(spec.path)
        if held is not None and not held.closed:
            raise PlacementError(f"an agent is already placed at {spec.path}")
        self.check_room(depth_of(spec.path))
        limits = spec.budget.limits if isinstance(spec.budget, Budget) else Limits()
        rec = AgentRecord(
            path=spec.path, nickname=name, role=spec.role,
            model=spec.model or self.factory.provider.model, agent=None,
            budget=self.budget_of(parent_path).carve(limits), status=ev.AgentState.IDLE, external=True,
        )
        self.build_child(rec, spec)
        return await self.start_child(rec)

    # ---- statuses --------------------------------------------------------------------------

    async def set_status(self, rec: AgentRecord, status: str, detail: str = "") -> None:
        """The one place a child's status changes: recorded, then its ``agent_status`` event
        (with its own step, tokens and cost)."""
        rec.status = status
        await self.emit(ev.AgentStatus(
            agent=rec.path, status=status, detail=detail, step=rec.budget.own_steps,
            tokens=rec.budget.own_tokens, cost_usd=round(rec.budget.own_usd, 6),
        ))
        self._changed()

    def _changed(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def on_event(self, event: ev.Event) -> None:
        """A bus listener: every model call's tokens and cost are charged to the agent's
        budget and its ancestors'; statuses the actors report themselves (roots, agents an
        embedding program placed) are mirrored."""
        if isinstance(event, ev.Usage):
            self.budget_of(event.agent).charge(
                tokens=event.input_tokens + event.output_tokens, usd=event.cost_usd)
        elif isinstance(event, ev.AgentStatus):
            if event.agent in self._kinds:
                self._root_status[event.agent] = event.status
            elif (rec := self.records.get(event.agent)) is not None and rec.external:
                rec.status = event.status
                self._changed()

    def restore(self, threads: dict[str, Any]) -> None:
        """Records for the subagents of a resumed session (``Session.agents``): shut down,
        their threads kept until ``resume_agent``; new nicknames are numbered after theirs."""
        counters = self._counters
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
                counters[base] = max(counters.get(base, 0), int(n))
