"""``nyz team start --headless``: the lead's task, then wait until the team is done.

Like ``nyz run`` (the same printers and output formats), except that the run does not end with
the lead's first answer: it ends when the lead's turn has completed, every teammate is idle
and no inbox holds an unread message (``TeamRuntime.wait_quiet``). The lead may take more
turns meanwhile (a teammate's message wakes it). Every teammate's events are in the stream,
tagged with its path (``/team/<team>/<member>``).

Exit status: 0 done; 1 on an error (a turn of the lead or of a teammate failed, a teammate's
process failed past its restarts, the team went quiet with tasks neither completed nor
deleted, the runtime could not start); 128 + signal when stopped by a signal.
"""

from __future__ import annotations

import argparse
from typing import Any

from nyzhi.core.protocol import events as ev
from nyzhi.headless.run import HeadlessRun
from nyzhi.headless.run_result import Failure, ResultSubtype, turn_failure


async def run_team_headless(args: argparse.Namespace, task: str, fmt: str) -> int:
    from nyzhi.core.protocol import Session

    team = getattr(args, "team_name", None)

    async def drive(rt: Any) -> None:
        if task.strip():
            run.handle = await rt.submit(rt.knowledge.expand(task))
            await run.handle.wait()
            if turn_failure(run.handle, []) is not None:
                return  # the lead failed: the result says why
        if (why := await Session(rt).team_settled(team)) is not None:
            run.see(ev.Error(message=why, kind="team"))
            run.failure = Failure(ResultSubtype.TEAMMATE_ERROR, why)

    def teammate_failed(error: ev.Error) -> bool:
        return error.kind == "turn"  # a turn of the lead or of a teammate failed

    run = HeadlessRun(args, fmt, fails_on=teammate_failed)
    return await run.run(drive)
