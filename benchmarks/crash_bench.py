"""Crash trials of ``nyz run``: killed with SIGKILL at a random moment of a multi-step run,
then counted: processes of its tree left running, temporary files left in the workspace.

    python -m benchmarks crash [--json] [--runs=N]      (N trials, default 20; issue 55: 200)

Each trial: a fresh user and git workspace, the fake LLM (loopback HTTP) scripting a run
that writes a 256 KB file (the atomic write), runs git_status and a glob, then a bash command
with a background and a foreground ``sleep`` that would outlive the wait below. nyz is SIGKILLed after a random 0.5-6 s (the moment is
meant to be random: that is what a crash is); pidfds are opened on every process of its tree
just before the kill and waited on, up to 10 s. Figures: orphans (processes of the tree still
running after that) and left-over files (``*.tmp`` anywhere in the workspace), both 0 of N
wanted. Nothing here is asserted in tests (tests/nyzhi/faults/test_no_orphans.py is the test).
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from nyzhi.testing.cli import NYZ, nyz_env
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

KILL_WAIT_S = 10.0


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2:].split()
            if fields[0] != b"Z":
                children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _exited(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


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
            fds = {}
            for pid in _descendants(nyz.pid):
                try:
                    fds[pid] = os.pidfd_open(pid)
                except ProcessLookupError:
                    pass
            nyz.kill()
            await nyz.wait()
            with trio.move_on_after(KILL_WAIT_S):
                for fd in fds.values():
                    await trio.lowlevel.wait_readable(fd)
            orphans = 0
            for fd in fds.values():
                if not _exited(fd):
                    orphans += 1
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                os.close(fd)
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


def main(argv: list[str]) -> None:
    runs = 20
    for arg in argv:
        if arg.startswith("--runs="):
            runs = int(arg.split("=", 1)[1])
    figures = trio.run(_run, runs)
    if "--json" in argv:
        print(json.dumps(figures))
        return
    print(f"crash trials of nyz run (SIGKILL at a random moment): {figures['runs']} runs in "
          f"{figures['seconds']} s")
    print(f"  runs with orphans:        {figures['runs_with_orphans']} "
          f"({figures['orphans']} processes)")
    print(f"  runs with left-over files: {figures['runs_with_leftover_files']}")


if __name__ == "__main__":
    main(sys.argv[1:])
