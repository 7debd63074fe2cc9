"""An autopilot (``nyzhi.core.runtime.autopilot``) driven to its end by a front end that waits
for it: ``nyz run --autopilot``. The console and the line chat start one with the
``/autopilot`` command instead, in the runtime's background.

``drive_autopilot`` starts one on a goal or resumes the workspace's unfinished one, runs it
with the trusted configuration's ``[agent] autopilot_max_loops`` until it ends or stops, and
says how it ended as an ``AutopilotEnd``: the front end needs no part of the autopilot itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from nyzhi import records

if TYPE_CHECKING:
    from nyzhi.core.protocol.session import Session


@records.frozen
class AutopilotEnd:
    """How a driven autopilot ended. ``approved``: the reviewer approved (it is done);
    ``failed``: the checks still failed after the loops allowed, or a subagent failed;
    neither: it stopped in ``phase`` (``stop_reason``: a budget's ``budget: ...``, a cancel),
    its state kept to resume. ``error``: it could not run at all (a bad goal, an unreadable
    state file, another process running it), one line; ``report``: what it has to say."""

    approved: bool = False
    failed: bool = False
    phase: str = ""
    report: str = ""
    stop_reason: str = ""
    error: str = ""


async def drive_autopilot(session: Session, goal: str,
                          report: Callable[[str], None]) -> AutopilotEnd:
    """Run the autopilot on ``goal`` (empty, or the unfinished one's goal: resume that one) in
    ``session`` until it ends or stops. ``report(text)`` gets its report once it ran, also
    when the drive is cancelled (a signal), so the front end can say where it stopped."""
    from nyzhi.core.protocol.start import trusted_config
    from nyzhi.core.runtime import autopilot as ap

    root = session.workspace_root
    pilot = None
    try:
        state = ap.start_or_resume(root, goal)
        max_loops = trusted_config(root).agent.autopilot_max_loops
        pilot = ap.Autopilot(session.rt, root, state, max_loops=max_loops)
        state = await pilot.run()
    except ap.AutopilotError as exc:
        return AutopilotEnd(error=str(exc))
    finally:
        if pilot is not None:
            report(pilot.state.report)
    return AutopilotEnd(approved=state.phase == ap.Phase.DONE,
                        failed=state.phase == ap.Phase.FAILED, phase=str(state.phase),
                        report=state.report, stop_reason=state.stop_reason)


__all__ = ["AutopilotEnd", "drive_autopilot"]
