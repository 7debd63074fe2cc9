"""The team trials of the crash benchmark (``benchmarks/crash_bench.py`` runs them).

A trial: a fresh user and git workspace; ``nyz team start T --teammate-mode process
--headless`` of the three-task graph below (lead → alice → bob → alice → lead) against the
fake LLM; SIGKILL of the lead alone at a random moment; then the same start again (the
restart, whose lead is told to carry on), run to its end (bounded). Two kinds of restart:

* ``carry-on``: one fake LLM serves both starts, so each agent's script carries on where it
  was, as a model reading its session would: the team can finish.
* ``idle`` (the default): the restart gets a fresh fake LLM whose agents do nothing. Nothing
  but nyz's own bookkeeping can then put a task left ``in_progress`` by a dead member right
  (back to pending when the member starts again), so this is the kind that shows stalls; its
  restarts end with tasks unfinished, and must say so (exit 1), never report success.

Stalled: a task still ``in_progress`` whose last change predates the restart (owned by a
member's dead incarnation, neither released nor resumed), or a restart reporting success with
tasks unfinished.
"""

from __future__ import annotations

import contextlib
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from benchmarks.crash_bench import _setup, count_orphans, kill_tree
from nyzhi.team_files.locking import now_rfc3339
from nyzhi.testing.cli import NYZ, json_lines, nyz_env, running_with
from nyzhi.testing.fake_llm import PerAgent, reply, tool_call

RESTART_LIMIT_S = 180.0
WORK_DELAY_S = 0.4


def _calls(*calls):
    return reply(tool_calls=list(calls))


def _update(task: str, status: str):
    # the work: the answer that completes a task is slow (WORK_DELAY_S before each frame), so a
    # task is in progress for a while, and a random kill often lands while one is
    delay = WORK_DELAY_S if status == "completed" else 0.0
    return reply(tool_calls=[tool_call("task_update", {"task_id": task, "status": status})],
                 delay=delay)


def team_script() -> PerAgent:
    return PerAgent({
        "LEAD-TASK": [
            _calls(tool_call("task_create", {"subject": "one"})),
            _calls(tool_call("task_create", {"subject": "two", "blocked_by": ["1"]})),
            _calls(tool_call("task_create", {"subject": "three", "blocked_by": ["2"]})),
            _calls(tool_call("send_team_message", {
                "to": "alice", "message": "ALICE-JOB: take task 1, then pass 2 to bob"})),
            reply("tasks assigned"),
            reply("the team finished"),
        ],
        "LEAD-RESUME": [reply("carrying on")] * 4,
        "ALICE-JOB": [
            _update("1", "in_progress"), _update("1", "completed"),
            _calls(tool_call("send_team_message", {
                "to": "bob", "message": "BOB-JOB: task 2 is unblocked, it is yours"})),
            reply("did task 1"),
            _update("3", "in_progress"), _update("3", "completed"),
            _calls(tool_call("send_team_message", {
                "to": "lead", "message": "ALL-DONE: tasks 1, 2 and 3 are completed"})),
            reply("did task 3"),
        ],
        "BOB-JOB": [
            _update("2", "in_progress"), _update("2", "completed"),
            _calls(tool_call("send_team_message", {
                "to": "alice", "message": "task 2 is done: task 3 is yours"})),
            reply("did task 2"),
        ],
    })


def _start(team: str, task: str) -> list[str]:
    return [*NYZ, "team", "start", team, "--members", "alice:worker,bob:reviewer",
            "--task", task, "--teammate-mode", "process", "--headless",
            "--output-format", "stream-json"]


def _setup_config(home: Path, url: str) -> None:
    """Point the user's config at another fake LLM (``_setup`` wrote the first)."""
    path = home / ".config" / "nyzhi" / "config.toml"
    text = path.read_text()
    start = text.index('base_url = "') + len('base_url = "')
    path.write_text(text[:start] + url + text[text.index('"', start):])


def _tasks(home: Path, team: str) -> list[dict]:
    tasks = home / ".local" / "share" / "nyzhi" / "tasks" / team  # nyzhi.team_files.store
    found = []
    for path in sorted(tasks.glob("*.json")) if tasks.is_dir() else []:
        if not path.stem.isdigit():
            continue
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return found


def _idle_script() -> PerAgent:
    return PerAgent({"LEAD-RESUME": [reply("carrying on")] * 4})


async def _trial(i: int, rng: random.Random, idle: bool) -> dict[str, int]:
    from nyzhi.testing.fake_llm import open_fake_llm

    team = f"crashteam{i}"
    with tempfile.TemporaryDirectory(prefix="nyz-crash-team-") as tmp:
        async with open_fake_llm(script=team_script()) as server:
            home, ws = _setup(Path(tmp), server.url_for("openai"))
            env = nyz_env(home)
            lead = await trio.lowlevel.open_process(
                _start(team, "LEAD-TASK: build it"), cwd=ws, env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            await trio.sleep(rng.uniform(0.5, 8.0))  # a random moment: what a crash is
            mid_run = lead.poll() is None  # else the team had finished: a trivial trial
            fds = kill_tree(lead)
            await lead.wait()
            orphans = await count_orphans(fds)
            done = None
            restarted_at = now_rfc3339()
            async with contextlib.AsyncExitStack() as stack:
                if idle:  # the restart's agents do nothing: see the module's docstring
                    fresh = await stack.enter_async_context(open_fake_llm(script=_idle_script()))
                    _setup_config(home, fresh.url_for("openai"))
                with trio.move_on_after(RESTART_LIMIT_S):
                    done = await trio.run_process(
                        _start(team, "LEAD-RESUME: carry on with the team's tasks"), cwd=ws,
                        env=env, stdin=subprocess.DEVNULL, capture_stdout=True,
                        capture_stderr=True, check=False)
            orphans += len(running_with(team))
            tasks = _tasks(home, team)
            left = [p for root in (ws, home) for p in root.rglob("*.tmp") if ".git" not in p.parts]
    unfinished = [t for t in tasks if t.get("status") not in ("completed", "deleted")]
    in_progress = [t for t in unfinished if t.get("status") == "in_progress"
                   and t.get("updated_at", "") < restarted_at]
    result = {}
    if done is not None:
        try:
            result = json_lines(done.stdout)[-1]
        except (IndexError, ValueError):
            result = {}
    success = done is not None and done.returncode == 0 and result.get("subtype") == "success"
    return {"stalled_tasks": len(in_progress),
            "success_with_unfinished": int(success and bool(unfinished)),
            "orphans": orphans, "leftover": len(left),
            "finished_all": int(success and not unfinished),
            "failed_honestly": int(done is not None and not success),
            "timeout": int(done is None), "mid_run": int(mid_run)}


async def run_team_trials(runs: int, restart: str = "idle") -> dict[str, float]:
    rng = random.Random(5550)
    totals = dict.fromkeys(("stalled_restarts", "stalled_tasks", "success_with_unfinished",
                            "runs_with_orphans", "orphans", "runs_with_leftover_files",
                            "restarts_finished_all", "restarts_failed_honestly",
                            "restart_timeouts", "killed_mid_run"), 0)
    start = time.monotonic()
    for i in range(runs):
        t = await _trial(i, rng, restart == "idle")
        print(f"team trial {i}: {json.dumps(t)}", file=sys.stderr, flush=True)  # minutes long
        totals["stalled_restarts"] += int(bool(t["stalled_tasks"] or t["success_with_unfinished"]))
        totals["stalled_tasks"] += t["stalled_tasks"]
        totals["success_with_unfinished"] += t["success_with_unfinished"]
        totals["runs_with_orphans"] += int(bool(t["orphans"]))
        totals["orphans"] += t["orphans"]
        totals["runs_with_leftover_files"] += int(bool(t["leftover"]))
        totals["restarts_finished_all"] += t["finished_all"]
        totals["restarts_failed_honestly"] += t["failed_honestly"]
        totals["restart_timeouts"] += t["timeout"]
        totals["killed_mid_run"] += t["mid_run"]
    return {"runs": runs, "restart": restart, **totals, "seconds": round(time.monotonic() - start, 1)}
