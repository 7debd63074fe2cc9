"""``nyz run --autopilot [GOAL]``: an autopilot (``nyzhi.core.runtime.autopilot``) run headless.

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
from typing import Any

from nyzhi.core.protocol import events as ev
from nyzhi.headless.run import HeadlessRun
from nyzhi.headless.run_result import Failure, ResultSubtype, budget_subtype


def autopilot_failure(state: Any) -> Failure | None:
    """Why an autopilot run that ended in ``state`` is not a success (None: it is)."""
    from nyzhi.core.runtime.autopilot import Phase

    if state.phase == Phase.DONE:
        return None
    if state.phase == Phase.FAILED:
        return Failure(ResultSubtype.ERROR, state.report.split("\n", 1)[0])
    reason = state.stop_reason or "stopped"
    subtype = budget_subtype(reason) if reason.startswith("budget:") else ResultSubtype.ERROR
    return Failure(subtype, f"autopilot stopped in {state.phase}: {reason}")


async def run_autopilot(args: argparse.Namespace, goal: str, fmt: str) -> int:
    """``nyz run --autopilot``: done when the autopilot ends or stops."""
    from nyzhi.core.runtime import autopilot as ap

    async def drive(rt: Any) -> None:
        from nyzhi.core.protocol import Session
        from nyzhi.core.protocol.start import trusted_config

        root = Session(rt).workspace_root
        pilot = None
        try:
            state = ap.start_or_resume(root, goal)
            max_loops = trusted_config(root).agent.autopilot_max_loops
            pilot = ap.Autopilot(rt, root, state, max_loops=max_loops)
            state = await pilot.run()
        except ap.AutopilotError as exc:
            run.failure = Failure(ResultSubtype.ERROR, str(exc))
            run.see(ev.Error(message=str(exc), kind="autopilot"))
            return
        finally:  # also when a signal cancels the drive: the report of where it stopped
            if pilot is not None:
                run.last_answer = pilot.state.report
        run.failure = autopilot_failure(state)

    run = HeadlessRun(args, fmt)
    return await run.run(drive)
