"""Autopilot: one goal carried to a checked change by subagents, phase by phase.

``/autopilot GOAL`` and ``nyz run --autopilot GOAL`` run the same ``Autopilot``:

1. ``expand``: a ``planner`` subagent turns the goal into requirements;
2. ``plan``: a ``planner`` turns the requirements into an ordered plan;
3. ``execute``: a ``worker`` carries the plan out (a new worker on each return here);
4. ``qa``: the ``verify`` tool runs the project's checks (as the person who started the
   autopilot, through the main agent's gates: ``commands.workflows.run_verify``);
5. ``validate``: the checks again, on the state the ``reviewer`` then judges against the
   requirements; it approves or rejects with a verdict line.

A failed ``qa`` or ``validate`` goes back to ``execute`` with what failed, at most
``[agent] autopilot_max_loops`` times; after that the autopilot ends ``failed`` with a report.
Every subagent goes through the subagent manager, so it is in the agent tree, limited by the
tree's budget (``nyz run --budget-*``, ``[agent.agents.budget]``), and its events are the
usual ones; each phase change is an ``autopilot_phase`` event besides.

The state is ``.nyzhi/state/autopilot.json``, rewritten atomically when a phase begins and
when a subagent starts. A run that dies (``kill -9``) leaves the phase it was in; resuming
(``nyz run --autopilot``, ``/autopilot resume``) begins that phase again with what the earlier
phases produced, never redoing them. A stop for a reason outside the work (a budget, a signal,
``/autopilot cancel``, a subagent whose model failed) also keeps the phase, so it resumes; only
checks that keep failing end it as ``failed``.
"""

from __future__ import annotations

import enum
import json
import re
import time
from pathlib import Path
from typing import Any

import attrs
import trio

from nyzhi import convert, records
from nyzhi.core import events as ev

STATE_FILE = Path(".nyzhi") / "state" / "autopilot.json"
WAIT_MS = 300_000  # one wait of the subagent manager (its maximum); waited again until final
NO_CHECKS = "No checks detected"  # how the verify tool says a project has nothing to run


class Phase(enum.StrEnum):
    EXPAND = "expand"
    PLAN = "plan"
    EXECUTE = "execute"
    QA = "qa"
    VALIDATE = "validate"
    DONE = "done"
    FAILED = "failed"


RUNNING = (Phase.EXPAND, Phase.PLAN, Phase.EXECUTE, Phase.QA, Phase.VALIDATE)
STOPPED = "stopped"  # the ``autopilot_phase`` of a stop that keeps the phase (resumable)


class AutopilotError(ValueError):
    """Bad input or an unreadable state file; one line naming the file or what to do."""


@records.frozen
class AutopilotState:
    """What ``.nyzhi/state/autopilot.json`` holds. ``phase`` is the phase running or to run
    next (``done``/``failed`` at the end); ``feedback`` is what the last failed check said,
    handed to the next ``execute``; ``stop_reason`` why a run stopped short of the end."""

    goal: str
    phase: Phase = Phase.EXPAND
    loops: int = 0
    requirements: str = ""
    plan: str = ""
    work: str = ""
    feedback: str = ""
    verify: str = ""
    review: str = ""
    report: str = ""
    stop_reason: str = ""
    agents: tuple[str, ...] = ()  # the subagents it started, in order
    phases: tuple[str, ...] = ()  # the phases it began, in order (a resumed one twice)
    session_id: str = ""
    started: str = ""
    updated: str = ""

    @property
    def finished(self) -> bool:
        return self.phase not in RUNNING

    def describe(self) -> str:
        """Several lines for ``/autopilot``: goal, phase, loops, agents, the end's report."""
        where = str(self.phase)
        if self.stop_reason and not self.finished:
            where += f" (stopped: {self.stop_reason}; /autopilot resume continues)"
        lines = [f"autopilot: {self.goal}", f"  phase: {where}",
                 f"  loops back to execute: {self.loops}",
                 f"  phases run: {' → '.join(self.phases) or 'none yet'}",
                 f"  agents: {', '.join(a.rsplit('/', 1)[-1] for a in self.agents) or 'none'}",
                 f"  updated: {self.updated}"]
        if self.report:
            lines += ["", self.report]
        return "\n".join(lines)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ---- the state file -------------------------------------------------------------------------


def state_path(root: Path) -> Path:
    return Path(root) / STATE_FILE


def load_state(root: Path) -> AutopilotState | None:
    """The recorded autopilot of the workspace at ``root``; None if there is none."""
    path = state_path(root)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AutopilotError(f"{path}: cannot read the autopilot state: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AutopilotError(f"{path}: not JSON ({exc.msg}, line {exc.lineno}); delete it or "
                             "/autopilot clear to start over") from None
    try:
        return convert.structure(data, AutopilotState, path, AutopilotError)
    except AutopilotError as exc:
        raise AutopilotError(f"{exc}; delete it or /autopilot clear to start over") from None


def save_state(root: Path, state: AutopilotState) -> None:
    """Replace the state file atomically (a crash leaves the old one or the new one)."""
    from nyzhi.config.fsutil import atomic_write
    from nyzhi.config.scaffold import ignore_runtime_files

    path = state_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    ignore_runtime_files(path.parent)
    text = json.dumps(convert.unstructure(state), indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, text.encode(), what="the autopilot state")


def clear_state(root: Path) -> bool:
    """Delete the state file; whether there was one."""
    try:
        state_path(root).unlink()
    except FileNotFoundError:
        return False
    return True


def hold_lock(root: Path) -> Any:
    """An exclusive ``flock`` on ``.nyzhi/state/autopilot.lock`` for as long as the returned
    file is open: two processes never run one workspace's autopilot (the kernel drops the lock
    of a process that died, so a crash never leaves it stuck)."""
    import fcntl

    path = state_path(root).with_suffix(".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a")  # held open on purpose: the lock lives as long as it
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise AutopilotError(f"another nyz is running this workspace's autopilot (it holds "
                             f"{path})") from None
    return handle


def start_or_resume(root: Path, goal: str) -> AutopilotState:
    """The state to run for ``goal`` ("" = resume): the unfinished one if it is the same goal
    (or none was given), a fresh one if nothing is unfinished. Raises ``AutopilotError`` when
    there is nothing to resume, or another goal is unfinished."""
    goal = goal.strip()
    found = load_state(root)
    unfinished = found is not None and not found.finished
    if not goal:
        if not unfinished:
            raise AutopilotError(f"no unfinished autopilot to resume in {state_path(root)}; "
                                 "give a goal to start one")
        return found
    if unfinished and found.goal != goal:
        raise AutopilotError(
            f"an autopilot is unfinished in {state_path(root)} (phase {found.phase}: "
            f"{found.goal[:60]}); resume it (no goal, or /autopilot resume) or discard it "
            "(/autopilot clear, or delete the file) first")
    if unfinished:
        return found
    return AutopilotState(goal=goal, started=_now())


# ---- the run --------------------------------------------------------------------------------


class Stop(Exception):
    """A stop that keeps the phase: the run can be resumed."""


class Autopilot:
    """One run of an autopilot state on the runtime ``rt`` (see the module docstring)."""

    def __init__(self, rt: Any, root: Path, state: AutopilotState, *, max_loops: int) -> None:
        self.rt = rt
        self.root = Path(root)
        self.state = state
        self.max_loops = max_loops
        self.current: str | None = None  # the subagent running now
        self.cancel_requested = False
        self.scope: trio.CancelScope | None = None

    async def run(self) -> AutopilotState:
        """Run phases until the end or a stop; the state as it was left (also on disk).
        Raises ``AutopilotError`` if another process runs the workspace's autopilot."""
        lock = hold_lock(self.root)
        try:
            return await self._run()
        finally:
            lock.close()

    async def _run(self) -> AutopilotState:
        detail = f"resumed at {self.state.phase}" if self.state.phases else ""
        await self._update(stop_reason="", report="", session_id=self.rt.session_id)
        try:
            with trio.CancelScope() as self.scope:
                if self.cancel_requested:  # cancelled before it began
                    self.scope.cancel()
                while not self.state.finished:
                    await self._begin(self.state.phase, detail)
                    if (over := self.rt.agents.root_budget.over()) is not None:
                        raise Stop(over)
                    detail = await STEPS[self.state.phase](self)
            if self.scope.cancelled_caught:
                await self._stopped("cancelled by /autopilot cancel")
        except Stop as exc:
            await self._stopped(str(exc))
        return self.state

    def cancel(self) -> None:
        """``/autopilot cancel``: stop now (the running subagent too); the phase is kept."""
        self.cancel_requested = True
        if self.scope is not None:
            self.scope.cancel()

    # ---- bookkeeping ----------------------------------------------------------------------

    async def _update(self, **changes: Any) -> None:
        """Change the state and write it (off the event loop: the write is synced to disk)."""
        self.state = attrs.evolve(self.state, updated=_now(), **changes)
        await trio.to_thread.run_sync(save_state, self.root, self.state)

    async def _emit(self, phase: str, detail: str = "") -> None:
        await self.rt.bus.publish(ev.AutopilotPhase(phase, self.state.goal, self.state.loops,
                                                    detail))

    async def _begin(self, phase: Phase, detail: str) -> None:
        await self._update(phases=(*self.state.phases, str(phase)))
        await self._emit(str(phase), detail)

    async def _stopped(self, reason: str) -> None:
        with trio.CancelScope(shield=True):
            if self.current is not None:  # cancelled while a subagent ran: stop it too
                await self.rt.agents.cancel(self.current, "subtree")
            report = (f"Autopilot stopped in {self.state.phase}: {reason}. "
                      "`nyz run --autopilot` or /autopilot resume continues from there.")
            await self._update(stop_reason=reason, report=report)
            await self._emit(STOPPED, reason)

    async def _end(self, phase: Phase, report: str, reason: str = "") -> None:
        await self._update(phase=phase, report=report, stop_reason=reason)
        await self._emit(str(phase), report)

    async def _agent(self, role: str, task: str) -> str:
        """Run ``task`` on a new subagent of ``role`` and wait for its answer; ``Stop`` if it
        could not start or did not complete."""
        rt = self.rt
        try:
            started = await rt.agents.spawn(rt.main_agent.spec.path, task, role)
        except Exception as exc:  # a limit, a broken role file: a stop that says why
            raise Stop(f"cannot start a {role}: {exc}") from None
        path = started["agent_id"]
        self.current = path
        await self._update(agents=(*self.state.agents, path))
        while True:
            waited = await rt.agents.wait([path], WAIT_MS)
            if not waited["timed_out"]:
                break
        self.current = None
        [status] = waited["agents"]
        if status.get("status") == ev.AgentState.COMPLETED:
            return str(status.get("message") or "").strip()
        reason = status.get("reason") or status.get("status")
        raise Stop(f"{path.rsplit('/', 1)[-1]} ({role}) {status.get('status')}: {reason}")

    async def _checks(self) -> tuple[bool, str]:
        from nyzhi.core.runtime.commands.workflows import run_verify

        passed, report = await run_verify(self.rt)
        if not passed and report.startswith(NO_CHECKS):
            return True, "(no checks: the project has no build, test or lint target to run)"
        return passed, report

    async def _failed(self, what: str, text: str) -> str:
        """A failed QA or validation: back to execute, or the end after ``max_loops``."""
        if self.state.loops >= self.max_loops:
            report = failure_report(self.state, what, text, self.max_loops)
            await self._end(Phase.FAILED, report, f"{what} failed")
            return ""
        await self._update(loops=self.state.loops + 1, feedback=f"{what} failed:\n{text}",
                     phase=Phase.EXECUTE)
        return f"{what} failed; back to execute"

    # ---- the phases (each returns the detail of the next phase's event) --------------------

    async def _expand(self) -> str:
        requirements = await self._agent("planner", expand_task(self.state.goal))
        await self._update(requirements=requirements, phase=Phase.PLAN)
        return ""

    async def _plan(self) -> str:
        plan = await self._agent("planner", plan_task(self.state))
        await self._update(plan=plan, phase=Phase.EXECUTE)
        return ""

    async def _execute(self) -> str:
        work = await self._agent("worker", execute_task(self.state))
        await self._update(work=work, phase=Phase.QA)
        return ""

    async def _qa(self) -> str:
        passed, report = await self._checks()
        await self._update(verify=report)
        if not passed:
            return await self._failed("QA", report)
        await self._update(phase=Phase.VALIDATE)
        return ""

    async def _validate(self) -> str:
        passed, report = await self._checks()
        await self._update(verify=report)
        if not passed:
            return await self._failed("validation (the checks)", report)
        review = await self._agent("reviewer", validate_task(self.state))
        await self._update(review=review)
        if not approved(review):
            return await self._failed("validation (the reviewer)", review)
        await self._end(Phase.DONE, done_report(self.state))
        return ""


STEPS = {Phase.EXPAND: Autopilot._expand, Phase.PLAN: Autopilot._plan,
         Phase.EXECUTE: Autopilot._execute, Phase.QA: Autopilot._qa,
         Phase.VALIDATE: Autopilot._validate}


# ---- what the subagents are told, and what their answers mean --------------------------------

_VERDICT = re.compile(r"verdict\W*(approve|reject)", re.IGNORECASE)


def approved(review: str) -> bool:
    """The reviewer's last ``VERDICT: APPROVE|REJECT``; no verdict is no approval."""
    verdicts = _VERDICT.findall(review)
    return bool(verdicts) and verdicts[-1].lower() == "approve"


def expand_task(goal: str) -> str:
    return (
        "Autopilot, phase EXPAND. Turn this goal into requirements: what must be true when it "
        "is done (behaviour, edge cases, tests), what is out of scope, and the assumptions you "
        "make where it is vague. Read the code you need to; change nothing. Answer with the "
        f"requirements as a numbered list.\n\nGoal: {goal}"
    )


def plan_task(state: AutopilotState) -> str:
    return (
        "Autopilot, phase PLAN. Write the plan that meets these requirements: ordered steps, "
        "each naming the files to change and how to check it. Read the code first; change "
        f"nothing.\n\nGoal: {state.goal}\n\nRequirements:\n{state.requirements}"
    )


def execute_task(state: AutopilotState) -> str:
    text = (
        "Autopilot, phase EXECUTE. Carry out this plan in the workspace, then summarise what "
        "you changed. An earlier attempt may have been interrupted: look at the files as they "
        f"are now.\n\nGoal: {state.goal}\n\nRequirements:\n{state.requirements}\n\n"
        f"Plan:\n{state.plan}"
    )
    if state.feedback:
        text += (f"\n\nThis is attempt {state.loops + 1}: the previous one did not pass. Fix "
                 f"what this says (the code, not the checks):\n{state.feedback}")
    return text


def validate_task(state: AutopilotState) -> str:
    return (
        "Autopilot, phase VALIDATE. Judge whether the work meets every requirement: read the "
        "changed files; the checks' report is below. Change nothing. List what is missing or "
        "wrong, each with file:line and a fix. End with one line: `VERDICT: APPROVE` if it is "
        f"done, else `VERDICT: REJECT`.\n\nGoal: {state.goal}\n\nRequirements:\n"
        f"{state.requirements}\n\nWhat the worker says it did:\n{state.work}\n\n"
        f"Checks:\n{state.verify}"
    )


def done_report(state: AutopilotState) -> str:
    loops = f" after {state.loops} loop(s) back to execute" if state.loops else ""
    return (f"Autopilot done{loops}: {state.goal}\n\nWhat was done:\n{state.work}\n\n"
            f"Checks:\n{state.verify}\n\nReview:\n{state.review}")


def failure_report(state: AutopilotState, what: str, text: str, max_loops: int) -> str:
    return (f"Autopilot failed: {what} still failed after {state.loops} loop(s) back to "
            f"execute (the limit, [agent] autopilot_max_loops, is {max_loops}).\n\n"
            f"Goal: {state.goal}\n\nWhat failed:\n{text}\n\nLast work:\n{state.work}")
