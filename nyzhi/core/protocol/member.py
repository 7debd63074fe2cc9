"""A team's process member, as its front end (``nyz team member``) opens it: the runtime
options of the member's session, and the lead's pipe when a lead started it.

A session-level entry point, beside ``open_runtime``: which store the member's team is read
from (its own files, or the lead's over the pipe for a member on another host), which of the
team's members it is, the session it resumes and, for a member with no credentials, the model
calls proxied to the lead all live in the runtime's teams (``nyzhi.core.runtime.teams``,
``nyzhi.team_files``), so the front end only opens the runtime these options describe, prints
its events and hands the lead's control lines (``pipe.control``) to the session.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import trio

from nyzhi.team_files.errors import TeamError


def check_member_flags(*, attached: bool, remote_store: bool, proxy_model: str | None) -> None:
    """Refuse what ``nyz team member`` cannot do (``TeamError``, one line): a remote store is
    served down the lead's pipe, and proxied model calls are for a member on another host."""
    if remote_store and not attached:
        raise TeamError("--remote-store needs --attached (the store is served down the pipe)")
    if proxy_model is not None and not remote_store:
        raise TeamError("--proxy-model-calls needs --remote-store (a member on another host)")


async def start_member(nursery: trio.Nursery, team: str, member: str, *, attached: bool,
                       interactive: bool, remote_store: bool = False,
                       proxy_model: str | None = None) -> tuple[Any, Any, str]:
    """``(options, pipe, missing)``: the ``RuntimeOptions`` of ``member``'s session (None when
    the team has no such member: ``missing`` is the line to print), and the lead's pipe (None
    when detached), whose reader runs in ``nursery`` from now (first: a remote store is read
    through it). ``TeamError``: the team cannot be read."""
    from nyzhi.config.modes import TeammateMode
    from nyzhi.core.runtime.runtime import RuntimeOptions
    from nyzhi.core.runtime.teams.pipe import LeadPipe
    from nyzhi.team_files.store import TeamStore
    from nyzhi.tools.offload import run_blocking

    pipe = LeadPipe(sys.stdout) if attached else None
    if pipe is not None:
        nursery.start_soon(pipe.read)
    store: Any = TeamStore()
    if remote_store:
        from nyzhi.team_files.remote import RemoteTeamStore

        assert pipe is not None
        store = RemoteTeamStore(team, member, pipe.call, watcher=pipe.watcher)
    config = await run_blocking(store.load, team)
    if config.member(member) is None:
        return None, pipe, (f"nyz: team {team} has no member {member!r} "
                            f"(members: {', '.join(config.names())})")
    prior = (await run_blocking(store.statuses, team)).get(member, {})
    # The team's workspace (its config, hooks, sessions); the member's tools work in its
    # worktree when it has one (Membership gives the agent that workdir). On another host
    # the workspace is where the lead's ssh put us (the node's cwd, or the member's clone).
    cwd = Path(os.getcwd() if remote_store else config.cwd or os.getcwd())
    options = RuntimeOptions(
        cwd=cwd, team=team, member=member, trust=config.trust,
        teammate_mode=TeammateMode.PROCESS, interactive=interactive,
        session=prior.get("session_id") or None,
        team_store=store if remote_store else None,
    )
    if proxy_model is not None:  # [team] proxy_model_calls: no credentials here
        from nyzhi.core.runtime.teams.model_proxy import ProxyProvider

        options.provider_instance = ProxyProvider(pipe, proxy_model)
    return options, pipe, ""


__all__ = ["check_member_flags", "start_member"]
