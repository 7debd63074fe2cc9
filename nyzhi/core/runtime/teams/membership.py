"""The runtime's own team membership (``RuntimeOptions.team`` / ``member``).

``nyz team start`` opens the lead's runtime with ``team=<name>``; ``nyz team member`` opens a
process teammate's with ``team`` and ``member``; ``nyz --team-name`` binds any session's main
agent as the lead. Before the main agent is built this decides what it is (a teammate gets its
role, fence, model and teammate prompt) and, for a ``process`` team, swaps in the team's
cross-process write leases; after the runtime is assembled, ``bind`` attaches the main
agent's inbox.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nyzhi import records
from nyzhi.config.modes import TeammateMode
from nyzhi.core import events as ev
from nyzhi.core.runtime.roles import RoleError
from nyzhi.core.runtime.teams.prompt import teammate_prompt, teammate_role
from nyzhi.team_files.names import LEAD, TeamError, check_name

if TYPE_CHECKING:
    from nyzhi.team_files.store import TeamConfig

RESTARTED = ("[nyz] Your process was restarted while you were working (your thread is "
             "intact). Check the task board and continue where you left off.")


@records.define
class Membership:
    team: str | None = None
    member: str = LEAD
    config: TeamConfig | None = None
    teams: Any = None
    first_prompt: str | None = None  # RESTARTED for a member that died mid-turn

    def spec_changes(self, catalog: Any) -> dict[str, Any]:
        """What the main agent's ``AgentSpec`` takes from the membership."""
        if self.team is None or self.config is None:
            return {}
        changes: dict[str, Any] = {"team": self.team, "member": self.member}
        if self.member == LEAD:
            return changes
        m = self.config.member(self.member)
        assert m is not None
        try:
            role = teammate_role(catalog.resolve(m.role or None))
        except RoleError as exc:
            raise TeamError(f"team {self.team}, member {self.member}: {exc}") from None
        changes.update(
            role=role.name, fence=role,
            role_prompt=teammate_prompt(self.team, self.member, self.config.names(),
                                        role.system_prompt),
            model=m.model or self.config.default_model,
            max_steps=self.config.max_steps or role.max_steps,
            # on another host the member's clone is its workspace (ssh started it there)
            workdir=Path(m.worktree) if m.worktree and not m.node else None,
        )
        return changes

    async def bind(self, rt: Any) -> None:
        if self.team is None:
            return
        await self.teams.bind(self.team, self.member, rt.main_agent, rt.submit,
                              first_prompt=self.first_prompt)
        if self.member == LEAD and self.config is not None:
            await self.teams.start_team(self.config)  # its configured teammates


async def open_membership(options: Any, tooling: Any, teams: Any) -> Membership:
    if options.team is None:
        return Membership(teams=teams)
    from nyzhi.team_files.store import Member, TeamConfig
    from nyzhi.tools.offload import run_blocking

    team = check_name("team", options.team)
    member = check_name("member", options.member) if options.member else LEAD
    store = teams.store

    def load_or_create() -> TeamConfig:
        if store.exists(team):
            return store.load(team)
        if member != LEAD:
            return store.load(team)  # TeamNotFound, with its message
        return store.create(TeamConfig(
            name=team, created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            members=[Member(LEAD, agent_type="leader")],
            teammate_mode=options.teammate_mode or TeammateMode.IN_PROCESS, cwd=str(options.cwd),
            trust=options.trust,
        ))

    config = await run_blocking(load_or_create)
    prior = (await run_blocking(store.statuses, team)).get(member, {})
    # A process teammate that died in the middle of a turn resumes its session (the lead
    # passes it) and is told to carry on.
    died_working = (member != LEAD and options.session
                    and prior.get("status") == ev.AgentState.RUNNING)
    if config.member(member) is None:
        raise TeamError(f"team {team} has no member {member!r} "
                        f"(members: {', '.join(config.names())})")
    if (options.teammate_mode or config.teammate_mode) == TeammateMode.PROCESS:
        from nyzhi.core.runtime.teams.leases import TeamLeaseTable

        label = "" if member == LEAD else ev.teammate_path(team, member)
        tooling.context.leases = TeamLeaseTable(
            store.team_dir(team) / "leases", label=label, wait=tooling.context.leases.wait)
    return Membership(team=team, member=member, config=config, teams=teams,
                      first_prompt=RESTARTED if died_working else None)
