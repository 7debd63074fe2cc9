"""What ``nyz team member <team> <member>`` runs: one process teammate, a headless front end.

It opens the same runtime as every front end (``open_runtime``) with ``team`` and ``member``
set, so its main agent is the member (its role, fence, model and teammate prompt) and a
``MemberDriver`` feeds its inbox. It prints its events as stream-json on stdout: the lead's
``TeammateProcess`` reads them there (attached), or they go to the team's log (detached).

* **attached** (``--attached``, started by a lead): stdin carries control lines from the lead
  (``{"op": "approval" | "answer" | "cancel", …}``, ``nyzhi.core.runtime.teams.pipe``); end of file on
  stdin means the lead has gone, and the member stops. That is what makes a teammate die with
  its lead, however the lead ended.
* **remote store** (``--remote-store``, a member the lead started on another host over SSH):
  its team store is the lead's, reached by request lines on the same pipe
  (``nyzhi.team_files.remote``), and the lead's pokes arrive as lines too.
* **detached**: runs until SIGTERM or SIGINT (``nyz team stop``).

A member restarted after a crash resumes its own session (its id is in its status file) and,
if it died in the middle of a turn, is told to continue (``membership.RESTARTED``).
"""

from __future__ import annotations

import sys
from typing import Any

import trio

from nyzhi.core.protocol import events as ev


async def run_member(team: str, member: str, *, attached: bool, interactive: bool,
                     remote_store: bool = False, proxy_model: str | None = None) -> int:
    from nyzhi.core.protocol.member import check_member_flags, start_member
    from nyzhi.core.runtime.runtime import open_runtime
    from nyzhi.headless.render import JsonLines

    check_member_flags(attached=attached, remote_store=remote_store, proxy_model=proxy_model)
    async with trio.open_nursery() as outer:
        try:
            options, pipe, missing = await start_member(
                outer, team, member, attached=attached, interactive=interactive,
                remote_store=remote_store, proxy_model=proxy_model)
            if options is None:
                print(missing, file=sys.stderr)
                return 1
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
