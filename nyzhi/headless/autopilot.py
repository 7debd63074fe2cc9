"""``nyz run --autopilot [GOAL]``: an autopilot (``protocol.drive_autopilot``) run headless.

The run is ``nyz run``'s (``HeadlessRun``: the same output formats, budget flags, signals and
exit statuses); only the drive differs. It prints every event until the autopilot ends, the
``autopilot_phase`` events among them, and the ``result`` carries the autopilot's report.
Without a GOAL, or with the GOAL of the unfinished autopilot recorded in
``.nyzhi/state/autopilot.json``, it continues that one from its recorded phase.

The result: ``success`` when the reviewer approved; ``error`` when the checks still failed
after ``[agent] autopilot_max_loops`` returns to execute, or when a subagent failed;
``budget_*`` when a budget stopped it (then the state is kept, to resume with more).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from nyzhi.core.protocol import events as ev
from nyzhi.headless.run import HeadlessRun
from nyzhi.headless.run_result import Failure, ResultSubtype, budget_subtype

if TYPE_CHECKING:
    from nyzhi.core.protocol.autopilot import AutopilotEnd


def autopilot_failure(end: AutopilotEnd) -> Failure | None:
    """Why an autopilot run that ended as ``end`` is not a success (None: it is)."""
    if end.approved:
        return None
    if end.failed:
        return Failure(ResultSubtype.ERROR, end.report.split("\n", 1)[0])
    reason = end.stop_reason or "stopped"
    subtype = budget_subtype(reason) if reason.startswith("budget:") else ResultSubtype.ERROR
    return Failure(subtype, f"autopilot stopped in {end.phase}: {reason}")


async def run_autopilot(args: argparse.Namespace, goal: str, fmt: str) -> int:
    """``nyz run --autopilot``: done when the autopilot ends or stops."""
    from nyzhi.core.protocol import Session
    from nyzhi.core.protocol.autopilot import drive_autopilot

    def report(text: str) -> None:
        run.last_answer = text

    async def drive(rt: Any) -> None:
        end = await drive_autopilot(Session(rt), goal, report)
        if end.error:
            run.failure = Failure(ResultSubtype.ERROR, end.error)
            run.see(ev.Error(message=end.error, kind="autopilot"))
            return
        run.failure = autopilot_failure(end)

    run = HeadlessRun(args, fmt)
    return await run.run(drive)
