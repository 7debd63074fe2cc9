"""``/autopilot``: a goal through requirements, plan, work, checks and review, by subagents
(``nyzhi.core.runtime.autopilot``), written once against ``CommandHost`` like every command.

``/autopilot GOAL`` starts one in the runtime's background, so the session stays usable and
``/autopilot`` (the state), ``/autopilot cancel`` and the agent tree show it while it runs;
its phases arrive as ``autopilot_phase`` events and its report is shown at the end.
``/autopilot resume`` continues an unfinished one (after a crash, a cancel or a budget stop)
from its recorded phase; ``/autopilot clear`` forgets a finished or stopped one.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

from nyzhi.core.runtime.commands.registry import BODY, ERROR, NOTICE, CommandHost, command

# The autopilot running in each runtime (one at a time: they would edit the same files).
_RUNNING: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

USAGE = "/autopilot GOAL starts one; /autopilot resume|cancel|clear; /autopilot shows it"


@command("autopilot", "plan, build, check and review a goal: /autopilot GOAL")
async def _autopilot(host: CommandHost, arg: str) -> None:
    from nyzhi.core.runtime import autopilot as ap

    rt = host.rt
    root = Path(rt.tooling.context.workspace_root)
    word = arg.strip().lower()
    running = _RUNNING.get(rt)
    try:
        if word in ("", "status"):
            state = running.state if running is not None else ap.load_state(root)
            host.show(BODY, state.describe() if state is not None
                      else f"no autopilot here yet: {USAGE}")
        elif word == "cancel":
            if running is None:
                host.show(NOTICE, "no autopilot is running")
            else:
                running.cancel()
                host.show(NOTICE, "cancelling the autopilot (/autopilot resume continues it)")
        elif word == "clear":
            if running is not None:
                host.show(ERROR, "the autopilot is running: /autopilot cancel first")
            else:
                gone = ap.clear_state(root)
                host.show(NOTICE, "autopilot state cleared" if gone else "no autopilot state")
        elif running is not None:
            host.show(ERROR, f"an autopilot is running ({running.state.phase}): "
                             "/autopilot cancel first")
        elif rt.knowledge is not None and rt.knowledge.plan_mode:
            # its workers would get read-only tools: every execute would fail
            host.show(ERROR, "/autopilot: plan mode is on (read-only tools); /plan leaves it")
        else:
            state = ap.start_or_resume(root, "" if word == "resume" else arg)
            max_loops = host.loaded_config().config.agent.autopilot_max_loops
            pilot = ap.Autopilot(rt, root, state, max_loops=max_loops)
            _RUNNING[rt] = pilot
            verb = "resuming at " + str(state.phase) if state.phases else "starting"
            host.show(NOTICE, f"autopilot {verb}: {state.goal[:60]} "
                              "(/autopilot shows it, /autopilot cancel stops it)")
            if rt.background is not None:
                rt.background.start_soon(_drive, host, rt, pilot)
            else:
                await _drive(host, rt, pilot)
    except (ap.AutopilotError, OSError) as exc:
        host.show(ERROR, f"/autopilot: {exc}")


async def _drive(host: CommandHost, rt: Any, pilot: Any) -> None:
    from nyzhi.core.runtime import autopilot as ap

    try:
        state = await pilot.run()
    except (ap.AutopilotError, OSError) as exc:  # another process runs it; a full disk
        host.show(ERROR, f"/autopilot: {exc}")
        return
    finally:
        if _RUNNING.get(rt) is pilot:
            del _RUNNING[rt]
    host.show(BODY if state.phase == ap.Phase.DONE else ERROR, state.report)
