"""Event-loop stalls while the file tools write: the longest time the trio thread was blocked.

    python -m benchmarks stall [--json] [--quick]

A monitor task sleeps 1 ms in a loop and records how late each wake-up is; the figure is the
worst lateness. Baseline, in the same run: the monitor with nothing else running. Then 100
file-tool calls go through the real path (``execute_calls``: gates, the tool, output capping)
in a workspace on the machine's disk, each writing a 4 KiB file that is fsynced with its
directory:

  write, one agent      100 ``write`` calls (new files, new directories) one after another;
  write, 100 agents     100 ``write`` calls started at once, as 100 agents would;
  edit, 100 agents      100 ``edit`` calls of those files, started at once.

Target (issue 14): the longest stall <= 5 ms on this machine. Nothing here is asserted in tests.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

from nyzhi.tools.base import SandboxLevel, ToolContext, TrustMode
from nyzhi.tools.execution import ToolCallRequest, execute_calls
from nyzhi.tools.gates import Gates, TrustPolicy
from nyzhi.tools.registry import default_registry
from nyzhi.tools.sandbox import SandboxPolicy

CALLS = 100
TICK = 0.001
TARGET_MS = 5.0
CONTENT = "".join(f"line {i:04d} of a file the benchmark writes\n" for i in range(100))[:4096]


class Monitor:
    """Sleeps ``TICK`` in a loop; ``worst`` is the latest wake-up seen, in seconds."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.lates: list[float] = []

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            t0 = time.perf_counter()
            await trio.sleep(TICK)
            late = time.perf_counter() - t0 - TICK
            self.lates.append(late)
            self.worst = max(self.worst, late)


async def watched(work) -> tuple[float, float, float]:
    """Run ``work()`` under a fresh monitor: (worst lateness, median lateness, seconds)."""
    monitor = Monitor()
    async with trio.open_nursery() as nursery:
        await nursery.start(monitor.run)
        await trio.sleep(0.05)  # settle
        monitor.worst, monitor.lates = 0.0, []
        t0 = time.perf_counter()
        await work()
        elapsed = time.perf_counter() - t0
        # Let the monitor see its pending wake-up: work that never yielded shows up here.
        await trio.sleep(3 * TICK)
        nursery.cancel_scope.cancel()
    return monitor.worst, statistics.median(monitor.lates or [0.0]), elapsed


async def scenario(ws: Path, idle_s: float) -> dict[str, tuple[float, float, float]]:
    registry = default_registry()
    gates = Gates(trust=TrustPolicy(mode=TrustMode.FULL))
    policy = SandboxPolicy(level=SandboxLevel.WORKSPACE_WRITE, workspace_root=ws, allow_temp=False)
    ctx = ToolContext(workspace_root=ws, cwd=ws, sandbox=policy)

    async def call(name: str, args: dict) -> None:
        [outcome] = await execute_calls(
            [ToolCallRequest("c", name, args)], registry=registry, gates=gates, ctx=ctx
        )
        assert not outcome.result.is_error, outcome.result.output

    def write_args(i: int, tag: str) -> dict:
        return {"file_path": f"{tag}/d{i % 10}/f{i}.txt", "content": CONTENT}

    async def idle() -> None:
        await trio.sleep(idle_s)

    async def sequential() -> None:
        for i in range(CALLS):
            await call("write", write_args(i, "seq"))

    async def agent(first: int, count: int, tag: str) -> None:
        for i in range(first, first + count):
            await call("write", write_args(i, tag))

    async def ten_agents() -> None:
        async with trio.open_nursery() as nursery:
            for a in range(10):
                nursery.start_soon(agent, a * 10, 10, "ten")

    async def concurrent() -> None:
        async with trio.open_nursery() as nursery:
            for i in range(CALLS):
                nursery.start_soon(call, "write", write_args(i, "par"))

    async def edits() -> None:
        async with trio.open_nursery() as nursery:
            for i in range(CALLS):
                args = {"file_path": f"par/d{i % 10}/f{i}.txt", "old_string": "line 0042",
                        "new_string": "LINE 0042"}
                nursery.start_soon(call, "edit", args)

    return {
        "idle": await watched(idle),
        "write, one agent": await watched(sequential),
        "write, 10 agents": await watched(ten_agents),
        "write, 100 agents": await watched(concurrent),
        "edit, 100 agents": await watched(edits),
    }


def main(argv: list[str]) -> None:
    repeats = 1 if "--quick" in argv else 3
    runs = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(dir=Path.home()) as tmp:
            runs.append(trio.run(scenario, Path(tmp), 0.5))
    # Per scenario: the median over repeats of each run's worst stall.
    rows = {}
    for name in runs[0]:
        worst = statistics.median(r[name][0] for r in runs) * 1000
        typical = statistics.median(r[name][1] for r in runs) * 1000
        secs = statistics.median(r[name][2] for r in runs)
        rows[name] = {"worst_ms": round(worst, 2), "median_late_ms": round(typical, 3),
                      "seconds": round(secs, 3)}
    base = rows["idle"]["worst_ms"]
    worst = max(v["worst_ms"] for k, v in rows.items() if k != "idle")
    result = {"calls": CALLS, "rows": rows, "baseline_worst_ms": base, "worst_ms": worst,
              "ratio": round(worst / base, 2) if base else None, "target_ms": TARGET_MS,
              "within_target": worst <= TARGET_MS}
    if "--json" in argv:
        print(json.dumps({"benchmark": "stall", **result}, indent=2))
        return
    print(f"event-loop stall, {CALLS} file-tool calls per row, 1 ms monitor "
          f"(median of {repeats} runs' worst wake-up lateness)")
    print(f"  {'':<20}{'worst':>10}{'median':>10}{'wall':>9}")
    for name, v in rows.items():
        print(f"  {name:<20}{v['worst_ms']:>8.2f}ms{v['median_late_ms']:>8.3f}ms{v['seconds']:>8.2f}s")
    print(f"  longest stall {worst:.2f} ms vs {base:.2f} ms idle ({result['ratio']}x); "
          f"target <= {TARGET_MS:.0f} ms: {'ok' if result['within_target'] else 'OVER'}")


if __name__ == "__main__":
    main(sys.argv[1:])
