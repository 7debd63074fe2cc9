"""What ``nyz team member <team> <member>`` runs: one process teammate, a headless front end.

It opens the same runtime as every front end (``open_runtime``) with ``team`` and ``member``
set, so its main agent is the member (its role, fence, model and teammate prompt) and a
``MemberDriver`` feeds its inbox. It prints its events as stream-json on stdout: the lead's
``TeammateProcess`` reads them there (attached), or they go to the team's log (detached).

* **attached** (``--attached``, started by a lead): stdin carries control lines from the lead
  (``{"op": "approval" | "answer" | "cancel", …}``); end of file on stdin means the lead has
  gone, and the member stops. That is what makes a teammate die with its lead, however the
  lead ended.
* **detached**: runs until SIGTERM or SIGINT (``nyz team stop``).

A member restarted after a crash resumes its own session (its id is in its status file) and,
if it died in the middle of a turn, is told to continue (``membership.RESTARTED``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import trio

from nyzhi.config.modes import TeammateMode
from nyzhi.core import events as ev


async def run_member(team: str, member: str, *, attached: bool, interactive: bool) -> int:
    from nyzhi.cli.render import JsonLines
    from nyzhi.core.runtime import RuntimeOptions, open_runtime
    from nyzhi.teams.store import TeamStore
    from nyzhi.tools.offload import run_blocking

    store = TeamStore()
    config = await run_blocking(store.load, team)
    m = config.member(member)
    if m is None:
        print(f"nyz: team {team} has no member {member!r} "
              f"(members: {', '.join(config.names())})", file=sys.stderr)
        return 1
    prior = (await run_blocking(store.statuses, team)).get(member, {})
    # The team's workspace (its config, hooks, sessions); the member's tools work in its
    # worktree when it has one (Membership gives the agent that workdir).
    cwd = Path(config.cwd or os.getcwd())
    options = RuntimeOptions(
        cwd=cwd, team=team, member=member, trust=config.trust, teammate_mode=TeammateMode.PROCESS,
        interactive=interactive, session=prior.get("session_id") or None,
    )
    out = JsonLines(sys.stdout)
    async with open_runtime(options) as rt, rt.subscribe() as events, \
            trio.open_nursery() as nursery:

        async def pump() -> None:
            async for event in events:
                out.render(event)

        nursery.start_soon(pump)
        if attached:
            await _control(rt)
        else:
            await _until_signalled()
        nursery.cancel_scope.cancel()
    return 0


async def _control(rt: Any) -> None:
    """Apply the lead's control lines until stdin ends."""
    stream = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    buf = b""
    async with stream:
        while True:
            try:
                chunk = await stream.receive_some(65536)
            except (trio.BrokenResourceError, OSError):
                chunk = b""
            if not chunk:
                return
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                await _apply(rt, line)


async def _apply(rt: Any, line: bytes) -> None:
    try:
        op = json.loads(line)
    except ValueError:
        return
    if not isinstance(op, dict):
        return
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
    from nyzhi.cli.signals import STOP_SIGNALS

    with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for _ in signals:
            return
