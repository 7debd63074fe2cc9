"""``TeamRuntime``: teams inside one runtime (``Runtime.teams``).

It is what the team tools call (``ctx.teams``, the ``TeamControl`` protocol of
``nyzhi.tools.builtin.team``) and what ``nyz team start`` drives:

* **binding** — an agent that creates a team (``team_create``), or the main agent of a runtime
  opened with ``RuntimeOptions.team``, becomes a member (the lead, or a process teammate's own
  member): its team tools default to that team, and a ``MemberDriver`` feeds its inbox;
* **teammates** — ``start_member`` runs one member: ``in-process``, an agent at
  ``/team/<team>/<member>`` under the ``/team/<team>`` supervisor, placed by the runtime's
  agent tree (``nyzhi.core.runtime.placement``: its budget carved from the root budget, its thread
  journaled); or ``process``, a
  ``TeammateProcess`` actor in the same place that runs ``nyz team member`` and re-tags its
  events onto this bus;
* **events and hooks** — ``team_message`` and ``task_update`` events, the ``task_completed``
  hook;
* **quiescence** — ``wait_quiet``: the lead idle, every member idle, no unread message (how
  ``nyz team start --headless`` knows it is done).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
import trio

import actors
from nyzhi import records
from nyzhi.config.modes import TeammateMode, choices
from nyzhi.core import events as ev
from nyzhi.core.errors import describe_error
from nyzhi.core.loop.agent import UserInput
from nyzhi.core.runtime.agent_factory import Agent, AgentSpec
from nyzhi.core.runtime.budget import Limits
from nyzhi.core.runtime.roles import RoleError
from nyzhi.core.runtime.teams.prompt import teammate_prompt, teammate_role
from nyzhi.core.runtime.teams.quiescence import Ledger
from nyzhi.team_files.names import LEAD, TeamError
from nyzhi.tools.offload import run_blocking

if TYPE_CHECKING:  # imported when a team is first used: start-up builds none of their classes
    from nyzhi.core.runtime.teams.member import MemberDriver
    from nyzhi.team_files.store import Member, TeamConfig, TeamStore

MODES = choices(TeammateMode)
# A process teammate that dies more than MAX_RESTARTS times within RESTART_WINDOW seconds is
# given up on (its team's supervisor stops restarting it; its status says "failed").
MAX_RESTARTS = 3
RESTART_WINDOW = 60.0
# Member statuses that count as "done" for a headless lead (see wait_quiet).
SETTLED = frozenset({ev.AgentState.IDLE})
FAILED = frozenset({ev.AgentState.ERRORED, "failed"})


class TeamRuntimeError(Exception):
    """A team operation the runtime refused; the message is for the model or the user."""


@records.define(eq=False)
class Running:
    """A member this runtime runs (its driver, and its agent when in-process)."""

    team: str
    member: str
    path: str
    mode: str
    driver: MemberDriver | None = None
    agent: Agent | None = None
    ref: actors.ActorRef | None = None


class TeamRuntime:
    def __init__(
        self,
        *,
        system: actors.ActorSystem,
        factory: Any,  # AgentFactory
        tree: Any,  # nyzhi.core.runtime.placement.AgentTree (the runtime's SubagentManager)
        emit: Callable[[ev.Event], Awaitable[None]],
        hooks: Any,
        session_id: str,
        env: dict[str, str] | None = None,
        lifecycle: Any = None,
        member_command: list[str] | None = None,
        mode: str | None = None,
        interactive: bool = False,
        gate: Any = None,
        model_calls: int = 0,
        store: TeamStore | None = None,
        nodes: dict[str, Any] | None = None,
        proxy_model_calls: bool = False,
    ) -> None:
        self.system = system
        self.factory = factory
        self.tree = tree  # places members: budgets, journal, roles
        self.emit = emit
        self.hooks = hooks
        self.session_id = session_id
        self.env = env
        self.lifecycle = lifecycle
        self._store: TeamStore | None = store
        self.nodes = nodes or {}  # [[nodes]] name -> SshExecutor: where remote members run
        # [team] proxy_model_calls: this lead makes its remote members' model calls
        self.proxy_model_calls = proxy_model_calls
        self.member_command = member_command
        self.mode_override = mode
        self.interactive = interactive
        self.members: dict[str, Running] = {}  # by agent path
        self.changed = trio.Event()
        self.nursery: trio.Nursery | None = None
        self.processes: dict[str, Any] = {}  # path -> TeammateProcess (live incarnation)
        self.remote_requests: dict[str, str] = {}  # approval/question id -> member path
        # The team-wide limit on model calls (nyzhi.core.runtime.teams.model_gate): ``gate`` is the
        # runtime's provider when it can be limited, ``model_calls`` the configured limit.
        self.gate = gate
        self.model_calls = model_calls
        self.ledgers: dict[str, Ledger] = {}  # team -> quiescence counters (quiescence.py)

    @property
    def store(self) -> TeamStore:
        """The team files (``$XDG_DATA_HOME/nyzhi/teams``), opened on first use."""
        if self._store is None:
            from nyzhi.team_files.store import TeamStore

            self._store = TeamStore(self.env)
        return self._store

    # ---- plumbing --------------------------------------------------------------------------

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    def _changed(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def on_event(self, event: ev.Event) -> None:
        """A bus listener: members' turns (drivers), and any team activity wakes ``wait_quiet``.

        Every driver gets every event: one that raises does not keep it from the drivers
        after it nor from the counters below. The failures are raised at the end, each naming
        its member, so the bus reports them as it reports any failed listener."""
        failed: list[tuple[Running, Exception]] = []
        for running in tuple(self.members.values()):
            if running.driver is not None and running.mode != TeammateMode.PROCESS:
                try:
                    await running.driver.on_event(event)
                except Exception as exc:
                    failed.append((running, exc))
        if isinstance(event, ev.ApprovalRequest | ev.UserQuestion) and \
                event.agent.startswith(ev.TEAM_ROOT + "/"):
            member = ev.root_of(event.agent)
            if member in self.processes:
                self.remote_requests[event.request_id] = member
        if isinstance(event, ev.AgentStatus | ev.TurnComplete | ev.TeamMessage | ev.TaskUpdate):
            self._count(event)
            self._changed()
        if failed:
            raise TeamRuntimeError("; ".join(
                f"team {r.team}, member {r.member}: {describe_error(exc)}" for r, exc in failed
            )) from failed[0][1]

    def _count(self, event: ev.Event) -> None:
        """Keep the quiescence counters (O(1) per event: only the members it names)."""
        if isinstance(event, ev.TeamMessage):
            ledger = self.ledgers.get(event.team)
            if ledger is not None:
                ledger.message(event.sender, event.to, event.kind)
            return
        running = self.members.get(event.agent)
        if running is not None:
            ledger = self.ledgers.get(running.team)
            if ledger is not None:
                ledger.touch(running.member)

    def _join(self, team: str, member: str) -> None:
        ledger = self.ledgers.get(team)
        if ledger is not None:
            ledger.join(member, running=True)

    async def stop(self) -> None:
        """Stop every member driver (status ``stopped``); the actors stop with the system."""
        for running in tuple(self.members.values()):
            if running.driver is not None:
                await running.driver.stop()

    def mode_of(self, config: TeamConfig) -> str:
        return self.mode_override or config.teammate_mode or TeammateMode.IN_PROCESS

    # ---- binding an agent to a team --------------------------------------------------------

    async def bind(self, team: str, member: str, agent: Agent, submit: Callable[[str], Any],
                   *, path: str | None = None, first_prompt: str | None = None) -> MemberDriver:
        """Make ``agent`` member ``member`` of ``team``: its team tools default to the team and
        a driver feeds its inbox (``path`` is the path its events carry)."""
        from nyzhi.core.runtime.teams.member import MemberDriver

        path = path or agent.spec.path
        await self._limit_model_calls(team, member)  # before its driver can start a turn
        agent.tooling.context.team_name = team
        agent.tooling.context.team_member = member
        driver = MemberDriver(
            store=self.store, team=team, member=member, path=path, submit=submit,
            emit=self.emit, hooks=self.hooks, session_id=self.session_id,
            first_prompt=first_prompt,
        )
        agent.loop.before_step = driver.inject
        self.members[path] = Running(team, member, path, "bound", driver, agent)
        self._join(team, member)
        assert self.nursery is not None, "TeamRuntime.run has not started"
        await self.nursery.start(driver.run)
        await run_blocking(lambda: self.store.set_status(
            team, member, pid=os.getpid(), path=path, session_id=self.session_id))
        return driver

    async def _limit_model_calls(self, team: str, member: str) -> None:
        """Put this runtime's model calls under the team's limit (once: the first team bound).
        The lead's number governs: it writes it into the team's slot file, which a process
        member reads; a process team's calls also take a slot there, across processes."""
        if self.gate is None or not hasattr(self.gate, "set_limit") or self.gate.limit_value:
            return
        if member != LEAD and self.lead_of(team) is not None:
            return  # an in-process teammate: the lead already decided for this runtime
        from nyzhi.team_files.model_slots import SharedSlots

        config = await run_blocking(self.store.load, team)
        slots = SharedSlots(self.store.team_dir(team))
        limit = self.model_calls
        if member == LEAD:
            await run_blocking(slots.set_limit, limit)
        else:
            limit = await run_blocking(slots.limit) or limit
        shared = slots if self.mode_of(config) == TeammateMode.PROCESS and limit > 0 else None
        self.gate.set_limit(limit, shared)

    def lead_of(self, team: str) -> Running | None:
        return next((r for r in self.members.values()
                     if r.team == team and r.member == LEAD), None)

    # ---- TeamControl (the team tools) ------------------------------------------------------

    async def team_created(self, config: TeamConfig, caller_path: str) -> None:
        if caller_path in self.members:
            return  # already a member of a team: the new team is managed by name
        agent = self.tree.agent_at(caller_path)
        ref = self.system.lookup(caller_path)
        if ref is None:
            return

        async def submit(text: str) -> Any:
            return await ref.ask(UserInput(text))

        await self.bind(config.name, LEAD, agent, submit)

    async def team_deleted(self, name: str) -> None:
        self.ledgers.pop(name, None)
        for path, running in tuple(self.members.items()):
            if running.team != name:
                continue
            if running.driver is not None:
                running.driver.stopped = True
                if running.driver.nursery is not None:
                    running.driver.nursery.cancel_scope.cancel()
            if running.member == LEAD:
                running.agent.tooling.context.team_name = None  # type: ignore[union-attr]
                running.agent.tooling.context.team_member = None  # type: ignore[union-attr]
            del self.members[path]
        sup = self.system.lookup(f"{ev.TEAM_ROOT}/{name}")
        if sup is not None:
            with trio.CancelScope(shield=True):
                await sup.stop()

    async def messages_sent(self, team: str, messages: list[Any]) -> None:
        for m in messages:
            await self.emit(ev.TeamMessage(
                agent=self._path_of(team, m.sender), team=team, sender=m.sender, to=m.to,
                text=m.text, kind=m.kind, message_id=m.id))

    async def task_changed(self, team: str, change: Any) -> None:
        task = change.task
        by = task.owner or LEAD
        await self.emit(ev.TaskUpdate(
            agent=self._path_of(team, by), team=team, task_id=task.id, subject=task.subject,
            status=str(task.status), owner=task.owner,
            unblocked=tuple(t.id for t in change.unblocked)))
        if change.completed and self.hooks is not None:
            outcome = await self.hooks.fire("task_completed", {
                "session_id": self.session_id, "team": team, "task_id": task.id,
                "subject": task.subject, "owner": task.owner,
            })
            if outcome.blocked and task.owner:  # exit 2: feedback to whoever completed it
                from nyzhi.team_files.inbox import deliver

                text = (f"The task_completed hook rejected task {task.id} "
                        f"({task.subject}): {outcome.message or 'no reason given'}")
                sent = await run_blocking(deliver, self.store, team, "hook", task.owner, text)
                await self.messages_sent(team, sent)

    async def spawn_teammate(self, team: str, name: str, message: str, role: str | None,
                             model: str | None, caller_path: str) -> dict[str, Any]:
        from nyzhi.team_files.inbox import deliver
        from nyzhi.team_files.store import Member

        config = await run_blocking(self.store.load, team)
        member = config.member(name)
        if member is None:
            member = Member(name=name, role=role or config.default_role or "default",
                            model=model or config.default_model)
        else:
            member = attrs.evolve(member, role=role or member.role, model=model or member.model)
        config = await run_blocking(self.store.add_member, team, member)
        running = await self.start_member(config, config.member(name) or member)
        sender = self.members[caller_path].member if caller_path in self.members else LEAD
        if message.strip():
            sent = await run_blocking(deliver, self.store, team, sender, name, message)
            await self.messages_sent(team, sent)
        return {"team": team, "name": name, "agent_id": running.path, "role": member.role,
                "mode": running.mode, "model": member.model or self.factory.provider.model}

    # ---- running members -------------------------------------------------------------------

    async def start_team(self, config: TeamConfig) -> list[Running]:
        """Start every teammate of ``config`` (not the lead) that is not running yet."""
        started = []
        for member in config.members:
            if member.name != LEAD:
                started.append(await self.start_member(config, member))
        return started

    async def start_member(self, config: TeamConfig, member: Member) -> Running:
        path = ev.teammate_path(config.name, member.name)
        if path in self.members:
            return self.members[path]
        if member.name == LEAD:
            raise TeamRuntimeError("the lead is the agent that runs the team, not a teammate")
        if member.node and self.mode_of(config) != TeammateMode.PROCESS:
            raise TeamRuntimeError(f"member {member.name} runs on node {member.node}: that "
                                   "needs --teammate-mode process")
        if member.node and member.node not in self.nodes:
            raise TeamRuntimeError(node_missing(member.name, member.node, self.nodes))
        if member.node and getattr(self.nodes[member.node], "monitored", False):
            raise TeamRuntimeError(f"member {member.name}: node '{member.node}' is monitored "
                                   "(read-only commands only), so no teammate can run there")
        # a new incarnation: what an earlier one of this member had in progress is orphaned
        board = self.store.board(config.name)
        await run_blocking(board.release_owned_by, [member.name])
        sup = await self._team_supervisor(config.name)
        if self.mode_of(config) == TeammateMode.PROCESS:
            return await self._start_process(config, member, path, sup)
        return await self._start_in_process(config, member, path, sup)

    async def _team_supervisor(self, team: str) -> actors.ActorRef:
        root = self.system.lookup(ev.TEAM_ROOT)
        if root is None:
            root = self.system.spawn(actors.Supervisor, name=ev.TEAM_ROOT.strip("/"),
                                     restart=actors.Restart.PERMANENT)
        sup = self.system.lookup(f"{ev.TEAM_ROOT}/{team}")
        if sup is None:
            sup = await root.ask(actors.StartChild(actors.ChildSpec(
                actors.Supervisor,
                ((), actors.Strategy.ONE_FOR_ONE, MAX_RESTARTS, RESTART_WINDOW),
                name=team, restart=actors.Restart.TRANSIENT)))
        return sup

    def _role(self, name: str) -> Any:
        try:
            return self.tree.catalog.resolve(name or None)
        except RoleError as exc:
            raise TeamRuntimeError(str(exc)) from None

    async def _start_in_process(self, config: TeamConfig, member: Member, path: str,
                                sup: actors.ActorRef) -> Running:
        role = teammate_role(self._role(member.role))
        prompt = teammate_prompt(config.name, member.name, config.names(), role.system_prompt)
        model = member.model or config.default_model
        spec = AgentSpec(
            path, role=role.name, role_prompt=prompt, model=model, fence=role,
            max_steps=config.max_steps or role.max_steps, team=config.name,
            member=member.name, workdir=member.worktree,
        )
        agent = self.tree.build_root(
            spec, kind="teammate", limits=Limits.from_config(role.budget),
            journal={"role": role.name, "model": model, "role_prompt": prompt,
                     "team": config.name})
        ref = await self.tree.start_root(agent, sup)

        async def submit(text: str) -> Any:
            return await ref.ask(UserInput(text))

        await self.bind(config.name, member.name, agent, submit, path=path)
        running = self.members[path]
        running.mode, running.ref = TeammateMode.IN_PROCESS, ref
        return running

    async def _start_process(self, config: TeamConfig, member: Member, path: str,
                             sup: actors.ActorRef) -> Running:
        from nyzhi.core.runtime.teams.process import TeammateProcess

        running = Running(config.name, member.name, path, TeammateMode.PROCESS)
        self.members[path] = running
        self._join(config.name, member.name)
        self.tree.reserve(path)
        running.ref = await sup.ask(actors.StartChild(actors.ChildSpec(
            TeammateProcess, (self, config.name, member.name, path), name=member.name,
            restart=actors.Restart.TRANSIENT)))
        return running

    async def send_to(self, path: str, text: str) -> dict[str, Any]:
        """A front end's message to a teammate (the console's agent tree): into its inbox,
        from ``user``."""
        from nyzhi.team_files.inbox import deliver

        running = self.members[path]
        sent = await run_blocking(deliver, self.store, running.team, "user", running.member,
                                  text)
        await self.messages_sent(running.team, sent)
        return {"agent_id": path, "status": "sent", "team": running.team}

    async def cancel_process(self, path: str) -> bool:
        """Cancel a process teammate's running turn (and its subagents')."""
        proc = self.processes.get(path)
        if proc is None:
            return False
        await proc.control({"op": "cancel"})
        return True

    async def answer_remote(self, request_id: str, payload: dict[str, Any]) -> bool:
        """Forward a front end's answer to the process teammate that asked; False if no
        process teammate asked ``request_id``."""
        path = self.remote_requests.pop(request_id, None)
        proc = self.processes.get(path) if path else None
        if proc is None:
            return False
        await proc.control(payload)
        return True

    # ---- quiescence ------------------------------------------------------------------------

    async def quiet(self, team: str) -> tuple[bool, str]:
        """Is the team done? Read off the team's counters (``quiescence.Ledger``), re-reading
        only the members events named since the last look; a "done" is confirmed by one full
        read of every inbox and status (``full_quiet``) before it is believed."""
        ledger = self.ledgers.get(team)
        if ledger is None:
            config = await run_blocking(self.store.load, team)
            ledger = self.ledgers[team] = Ledger(config.names())
            for running in self.members.values():
                if running.team == team:
                    ledger.join(running.member, running=True)
        seq, dirty = ledger.take_dirty()
        if dirty:
            results = await run_blocking(Ledger.read, self.store, team, dirty)
            ledger.apply(seq, results)
        lead = self.lead_of(team)
        done, why, failed = ledger.verdict(
            lead is not None and lead.driver is not None and lead.driver.busy)
        if failed is not None:
            status = ledger.status.get(failed, {})
            raise TeamRuntimeError(f"teammate {failed} {status.get('status', 'failed')}: "
                                   f"{status.get('detail', '')}".rstrip(": "))
        if not done:
            return done, why
        done, why = await self.full_quiet(team)
        if not done:  # something no event told us of: re-read everyone next time
            ledger.touch_all()
        return done, why

    async def full_quiet(self, team: str) -> tuple[bool, str]:
        """Is the team done? Every inbox read first, then every status (see ``member``): O(n)
        reads, so only to confirm what the counters say."""
        from nyzhi.core.runtime.teams.member import IDLE_NOTICE

        config = await run_blocking(self.store.load, team)

        def unread() -> dict[str, int]:
            out = {}
            for name in config.names():
                msgs = self.store.inbox(team, name).undelivered()  # taken ones too
                if name == LEAD:
                    msgs = [m for m in msgs if m.kind != IDLE_NOTICE]
                out[name] = len(msgs)
            return out

        counts = await run_blocking(unread)
        statuses = await run_blocking(self.store.statuses, team)
        for name, n in counts.items():
            if n:
                return False, f"{name} has {n} unread message(s)"
        for name in config.names():
            running = self.members.get(ev.teammate_path(team, name))
            if name == LEAD:
                lead = self.lead_of(team)
                if lead is not None and lead.driver is not None and lead.driver.busy:
                    return False, "the lead is working"
                continue
            status = statuses.get(name, {}).get("status", "")
            if status in FAILED:
                raise TeamRuntimeError(f"teammate {name} {status}: "
                                       f"{statuses[name].get('detail', '')}".rstrip(": "))
            if running is None:
                continue  # not run by this lead (not started): nothing to wait for
            if status not in SETTLED:
                return False, f"{name} is {status or 'starting'}"
        return True, "done"

    async def wait_quiet(self, team: str, poll: float = 1.0) -> None:
        """Until ``quiet``. Woken by team events; ``poll`` is a safety net for a status
        written without an event reaching this process."""
        while True:
            changed = self.changed
            done, _why = await self.quiet(team)
            if done:
                return
            with trio.move_on_after(poll) as waited:
                await changed.wait()
            if waited.cancelled_caught:  # no event for a while: trust no counter blindly
                ledger = self.ledgers.get(team)
                if ledger is not None:
                    ledger.touch_all()

    # ---- helpers ---------------------------------------------------------------------------

    def _path_of(self, team: str, member: str) -> str:
        for running in self.members.values():
            if running.team == team and running.member == member:
                return running.path
        return ev.MAIN_AGENT if member == LEAD else ev.teammate_path(team, member)


def node_missing(member: str, node: str, nodes: Any) -> str:
    known = ", ".join(sorted(nodes)) or "none configured"
    return f"member {member}: no node '{node}' in [[nodes]] (nodes: {known})"


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise TeamError(f"teammate mode {mode!r}: expected one of {', '.join(MODES)}")
    return mode
