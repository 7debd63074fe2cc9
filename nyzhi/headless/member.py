"""What ``nyz team member <team> <member>`` runs: one process teammate, a headless front end.

It opens the same runtime as every front end (``open_runtime``) with ``team`` and ``member``
set, so its main agent is the member (its role, fence, model and teammate prompt) and a
``MemberDriver`` feeds its inbox. It prints its events as stream-json on stdout: the lead's
``TeammateProcess`` reads them there (attached), or they go to the team's log (detached).

* **attached** (``--attached``, started by a lead): stdin carries control lines from the lead
  (``{"op": "approval" | "answer" | "cancel", …}``, ``nyzhi.core.teams.pipe``); end of file on
  stdin means the lead has gone, and the member stops. That is what makes a teammate die with
  its lead, however the lead ended.
* **remote store** (``--remote-store``, a member the lead started on another host over SSH):
  its team store is the lead's, reached by request lines on the same pipe
  (``nyzhi.teams.remote``), and the lead's pokes arrive as lines too.
* **detached**: runs until SIGTERM or SIGINT (``nyz team stop``).

A member restarted after a crash resumes its own session (its id is in its status file) and,
if it died in the middle of a turn, is told to continue (``membership.RESTARTED``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import trio

from nyzhi.config.modes import TeammateMode
from nyzhi.core.protocol import events as ev


async def run_member(team: str, member: str, *, attached: bool, interactive: bool,
                     remote_store: bool = False, proxy_model: str | None = None) -> int:
    from nyzhi.core.runtime import RuntimeOptions, open_runtime
    from nyzhi.core.teams.pipe import LeadPipe
    from nyzhi.headless.render import JsonLines
    from nyzhi.teams.errors import TeamError
    from nyzhi.teams.store import TeamStore
    from nyzhi.tools.offload import run_blocking

    if remote_store and not attached:
        raise TeamError("--remote-store needs --attached (the store is served down the pipe)")
    if proxy_model is not None and not remote_store:
        raise TeamError("--proxy-model-calls needs --remote-store (a member on another host)")
    async with trio.open_nursery() as outer:
        pipe = LeadPipe(sys.stdout) if attached else None
        if pipe is not None:
            outer.start_soon(pipe.read)  # first: with a remote store, loading needs it
        try:
            store: Any = TeamStore()
            if remote_store:
                from nyzhi.teams.remote import RemoteTeamStore

                assert pipe is not None
                store = RemoteTeamStore(team, member, pipe.call, watcher=pipe.watcher)
            config = await run_blocking(store.load, team)
            m = config.member(member)
            if m is None:
                print(f"nyz: team {team} has no member {member!r} "
                      f"(members: {', '.join(config.names())})", file=sys.stderr)
                return 1
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
                from nyzhi.core.teams.model_proxy import ProxyProvider

                options.provider_instance = ProxyProvider(pipe, proxy_model)
            out = JsonLines(sys.stdout)
            async with open_runtime(options) as rt, rt.subscribe() as events, \
                    trio.open_nursery() as nursery:

                async def pump() -> None:
                    async for event in events:
                        out.render(event)

                nursery.start_soon(pump)
                if pipe is not None:
                    async for op in pipe.control:  # until stdin ends: the lead has gone
                        await _apply(rt, op)
                else:
                    await _until_signalled()
                nursery.cancel_scope.cancel()
        finally:
            outer.cancel_scope.cancel()  # the pipe's reader
    return 0


async def _apply(rt: Any, op: dict[str, Any]) -> None:
    try:
        if op.get("op") == "approval":
            await rt.answer_approval(str(op["request_id"]), str(op["answer"]))
        elif op.get("op") == "answer":
            await rt.answer_question(str(op["request_id"]), str(op["text"]))
        elif op.get("op") == "cancel":
            await rt.cancel(ev.MAIN_AGENT, "subtree")
    except (KeyError, ValueError, LookupError):
        pass  # a stale or malformed answer: the request is gone


async def _until_signalled() -> None:
    from nyzhi.signals import stop_on_signal

    await stop_on_signal()
