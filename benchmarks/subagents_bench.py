"""Many subagents at once: 200 concurrent subagents x 10 steps on the zero-latency model.

    python -m benchmarks subagents [--json] [--quick]

Each subagent is spawned through the real manager (``SubagentManager.spawn``: role, briefing,
budget, its own actor and tool executor) and runs 10 ``think`` steps against an in-process
model that answers at once, then answers; the run ends when every one reports ``completed``.
Figures:

* wall time, against the baseline measured in the same run: the main agent doing the same 200
  tasks of 10 steps one after another, each on a fresh thread (so the ratio is the cost of
  running them as 200 agents at once; below 1 is a gain);
* memory per agent: the process's resident set after the 200 finished, minus before they were
  spawned, over 200 (their threads, actors and records stay alive until the runtime closes);
* the longest event-loop stall while they run (a monitor task sleeping 1 ms, worst lateness;
  target <= 50 ms, so a console would stay responsive).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import trio

from benchmarks._isolated import isolated_home
from benchmarks.stall_bench import Monitor
from nyzhi.provider import types as pt

AGENTS = 200
STEPS = 10
TARGET_STALL_MS = 50.0


class PerThreadModel:
    """Answers at once: a ``think`` call for the first ``steps`` requests of each thread (known
    by its first message; every agent gets its own task), then text."""

    name = "bench"
    model = "bench-model"

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.calls: dict[str, int] = {}

    async def stream(self, request):
        key = request.messages[0].content
        done = self.calls[key] = self.calls.get(key, -1) + 1
        if done < self.steps:
            cid = f"c{done}"
            yield pt.ToolCallStart(0, cid, "think")
            yield pt.ToolCallEnd(0, cid, "think", '{"thought": "x"}')
            yield pt.Stop("tool_use")
        else:
            yield pt.TextDelta("done")
            yield pt.Stop("end_turn")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def one_agent(n: int, steps: int, ws: Path) -> float:
    """The baseline: the main agent does the same ``n`` tasks of ``steps`` steps one after
    another, each on a fresh thread (as each subagent has its own)."""
    from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime

    options = RuntimeOptions(cwd=ws, provider_instance=PerThreadModel(steps), trust="full",
                             ephemeral=True)
    async with open_runtime(options) as rt:
        loop = rt.main_agent.loop
        start = time.perf_counter()
        for i in range(n):
            loop.messages.clear()
            loop.meter.reset()
            handle = await rt.submit(f"go {i}")
            await handle.wait()
            assert handle.outcome is not None and handle.outcome.steps == steps + 1
        elapsed = time.perf_counter() - start
    return elapsed


async def many_agents(n: int, steps: int, ws: Path) -> dict:
    from nyzhi.core import events as ev
    from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime

    options = RuntimeOptions(cwd=ws, provider_instance=PerThreadModel(steps), trust="full",
                             ephemeral=True)
    async with open_runtime(options) as rt:
        manager = rt.agents  # [agent.agents] max_threads = n (measure writes the config)
        monitor = Monitor()
        before = rss_bytes()
        async with trio.open_nursery() as nursery:
            await nursery.start(monitor.run)
            start = time.perf_counter()
            ids = [(await manager.spawn(ev.MAIN_AGENT, f"go {i}", "default"))["agent_id"]
                   for i in range(n)]
            while not all(manager.records[i].status == "completed" for i in ids):
                await manager.changed.wait()
            elapsed = time.perf_counter() - start
            nursery.cancel_scope.cancel()
        after = rss_bytes()
        steps_done = sum(manager.records[i].budget.own_steps for i in ids)
        assert steps_done == n * (steps + 1), steps_done
    return {"seconds": elapsed, "bytes_per_agent": (after - before) / n,
            "worst_stall_ms": monitor.worst * 1000}


def measure(quick: bool) -> dict:
    n = 50 if quick else AGENTS
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / ".nyzhi").mkdir(parents=True)
        (ws / ".nyzhi" / "config.toml").write_text(f"[agent.agents]\nmax_threads = {n}\n")
        with isolated_home(Path(tmp) / "home"):  # isolated sessions and config
            base = trio.run(one_agent, n, STEPS, ws)
            many = trio.run(many_agents, n, STEPS, ws)
    return {
        "agents": n, "steps_each": STEPS,
        "one_agent_seconds": base, "many_agents_seconds": many["seconds"],
        "ratio": many["seconds"] / base,
        "kib_per_agent": many["bytes_per_agent"] / 1024,
        "worst_stall_ms": many["worst_stall_ms"], "target_stall_ms": TARGET_STALL_MS,
    }


def main(argv: list[str]) -> None:
    r = measure("--quick" in argv)
    if "--json" in argv:
        print(json.dumps(r, indent=2))
        return
    n, s = r["agents"], r["steps_each"]
    print(f"{n} subagents x {s} steps, zero-latency model:")
    print(f"  one agent, {n} x {s} steps    {r['one_agent_seconds']:.2f} s (baseline)")
    print(f"  {n} agents at once          {r['many_agents_seconds']:.2f} s ({r['ratio']:.2f}x)")
    print(f"  memory per agent          {r['kib_per_agent']:.0f} KiB")
    print(f"  longest event-loop stall  {r['worst_stall_ms']:.1f} ms "
          f"(target <= {r['target_stall_ms']:.0f} ms)")


if __name__ == "__main__":
    main(sys.argv[1:])
