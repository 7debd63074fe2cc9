"""Crash trials of ``nyz run`` and of a process team: killed with SIGKILL at a random moment,
then counted: processes left running, temporary files left behind, and (teams) stalled tasks.

    python -m benchmarks crash [--json] [--runs=N] [--team-runs=M] [--team-restart=KIND]
        (N run trials, default 20; M team trials, default 5; issue 55: 200 and 50;
         KIND idle, the default, or carry-on: see benchmarks/crash_team.py)

Each trial: a fresh user and git workspace, the fake LLM (loopback HTTP) scripting a run
that writes a 256 KB file (the atomic write), runs git_status and a glob, then a bash command
with a background and a foreground ``sleep`` that would outlive the wait below. nyz is SIGKILLed after a random 0.5-6 s (the moment is
meant to be random: that is what a crash is); pidfds are opened on every process of its tree
just before the kill and waited on, up to 10 s. Figures: orphans (processes of the tree still
running after that) and left-over files (``*.tmp`` anywhere in the workspace), both 0 of N
wanted. Nothing here is asserted in tests (tests/nyzhi/faults/test_no_orphans.py is the test).

Each team trial (``benchmarks/crash_team.py``): ``nyz team start --teammate-mode process
--headless`` of a three-task graph, SIGKILLed at a random moment, then the same start again
(the restart), run to its end. Figures: stalled restarts (a task still ``in_progress`` after the
restart ended with no change since before it, so owned by a dead member's incarnation; or the
restart reporting success with tasks unfinished), orphans (the killed tree's processes, by pidfd, and any process whose argv names
the trial's team after the restart), left-over ``*.tmp`` files (workspace and nyz's data).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from nyzhi.testing.cli import NYZ, nyz_env
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
from nyzhi.testing.waits import descendants, pidfd_exited

KILL_WAIT_S = 10.0


def _script(marker: str):
    return [
        reply(tool_calls=[tool_call("write", {"file_path": "big.txt",
                                              "content": "x" * (256 * 1024)})]),
        reply(tool_calls=[tool_call("git_status", {}), tool_call("glob", {"pattern": "*"})]),
        # long-lived: an orphan would outlive the wait below, and be counted
        reply(tool_calls=[tool_call("bash", {"command": f"sleep {marker} & sleep {marker}"})]),
        reply("done"),
    ]


def _setup(root: Path, url: str) -> tuple[Path, Path]:
    home, ws = root / "home", root / "ws"
    (home / ".config" / "nyzhi").mkdir(parents=True)
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (home / ".config" / "nyzhi" / "config.toml").write_text(
        f'[provider]\ndefault = "fake"\n[provider.fake]\napi_style = "openai"\n'
        f'base_url = "{url}"\nmodel = "fake-model-1"\napi_key = "sk-test"\n'
        f'context_window = 128000\n[agent.sandbox]\nlevel = "full-access"\n')
    return home, ws


async def _trial(i: int, rng: random.Random) -> tuple[int, int]:
    marker = str(880000 + i)
    with tempfile.TemporaryDirectory(prefix="nyz-crash-") as tmp:
        async with open_fake_llm(script=_script(marker)) as server:
            home, ws = _setup(Path(tmp), server.url_for("openai"))
            nyz = await trio.lowlevel.open_process(
                [*NYZ, "run", "--trust", "full", "go"], cwd=ws, env=nyz_env(home),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            await trio.sleep(rng.uniform(0.5, 6.0))  # a random moment: what a crash is
            fds = kill_tree(nyz)
            await nyz.wait()
            orphans = await count_orphans(fds)
            left = [p for p in ws.rglob("*.tmp") if ".git" not in p.parts]
        return orphans, len(left)


async def _run(runs: int) -> dict[str, float]:
    rng = random.Random(55)
    orphaned_runs = orphans = leftover_runs = 0
    start = time.monotonic()
    for i in range(runs):
        o, left = await _trial(i, rng)
        orphans += o
        orphaned_runs += bool(o)
        leftover_runs += bool(left)
    return {"runs": runs, "runs_with_orphans": orphaned_runs, "orphans": orphans,
            "runs_with_leftover_files": leftover_runs,
            "seconds": round(time.monotonic() - start, 1)}


def kill_tree(proc: trio.Process) -> dict[int, int]:
    """SIGKILL ``proc`` alone (a crash), having opened pidfds on its whole tree just before:
    the descendants' pidfds, to wait on (a recycled pid can never be mistaken for them)."""
    fds = {}
    for pid in descendants(proc.pid):
        try:
            fds[pid] = os.pidfd_open(pid)
        except ProcessLookupError:
            pass
    proc.kill()
    return fds


async def count_orphans(fds: dict[int, int]) -> int:
    """How many of ``fds`` are still running ``KILL_WAIT_S`` after the crash (then killed)."""
    with trio.move_on_after(KILL_WAIT_S):
        for fd in fds.values():
            await trio.lowlevel.wait_readable(fd)
    orphans = 0
    for fd in fds.values():
        if not pidfd_exited(fd):
            orphans += 1
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        os.close(fd)
    return orphans


def main(argv: list[str]) -> None:
    from benchmarks.crash_team import run_team_trials

    runs, team_runs, restart = 20, 5, "idle"
    for arg in argv:
        if arg.startswith("--runs="):
            runs = int(arg.split("=", 1)[1])
        if arg.startswith("--team-runs="):
            team_runs = int(arg.split("=", 1)[1])
        if arg.startswith("--team-restart="):
            restart = arg.split("=", 1)[1]
    figures = trio.run(_run, runs) if runs else {}
    team = trio.run(run_team_trials, team_runs, restart) if team_runs else {}
    if "--json" in argv:
        print(json.dumps({"run": figures, "team": team}))
        return
    if figures:
        print(f"crash trials of nyz run (SIGKILL at a random moment): {figures['runs']} runs "
              f"in {figures['seconds']} s")
        print(f"  runs with orphans:        {figures['runs_with_orphans']} "
              f"({figures['orphans']} processes)")
        print(f"  runs with left-over files: {figures['runs_with_leftover_files']}")
    if team:
        print(f"crash trials of a process team (SIGKILL, then a {team['restart']} restart): "
              f"{team['runs']} runs "
              f"in {team['seconds']} s")
        for key in ("stalled_restarts", "stalled_tasks", "success_with_unfinished",
                    "runs_with_orphans", "orphans", "runs_with_leftover_files",
                    "restarts_finished_all", "restarts_failed_honestly", "restart_timeouts",
                    "killed_mid_run"):
            print(f"  {key.replace('_', ' ') + ':':28} {team[key]}")


if __name__ == "__main__":
    main(sys.argv[1:])
