"""The agent runtime's own cost: per-step overhead.

A turn of N tool-calling steps against a zero-latency in-process model (every step calls
``think``, which does no work), through the real turn loop, gates, execution and event bus.
Baseline in the same run: a bare loop that streams the same provider events and calls the
same tool directly. Target (issue 30): <= 0.1 ms per step of runtime overhead, ephemeral (200
subagents multiply it). Times are the process's CPU time, best of several runs: the machine is
shared, and the runs wait for no I/O except the session's own writes (so the "session" figure
leaves out the time its fsyncs wait for the disk). (``nyz run`` start-up and exit are in
``startup_bench``.)

Usage: ``python -m benchmarks runtime [--json] [--quick]``.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

import trio

from benchmarks._isolated import isolated_home
from nyzhi.provider import types as pt

STEPS = 300
TARGET_MS = 0.1
_now = time.process_time


class ZeroLatencyModel:
    """Answers every request at once: a ``think`` call until ``steps`` are done, then text."""

    name = "bench"
    model = "bench-model"

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.calls = 0

    async def stream(self, request):
        self.calls += 1
        if self.calls <= self.steps:
            cid = f"c{self.calls}"
            yield pt.ToolCallStart(0, cid, "think")
            yield pt.ToolCallEnd(0, cid, "think", '{"thought": "x"}')
            yield pt.Stop("tool_use")
        else:
            yield pt.TextDelta("done")
            yield pt.Stop("end_turn")


async def runtime_turn(steps: int, workspace: Path, ephemeral: bool) -> float:
    from nyzhi import RuntimeOptions, open_runtime  # the embedding API: the same on any commit

    options = RuntimeOptions(
        cwd=workspace, provider_instance=ZeroLatencyModel(steps), trust="full",
        ephemeral=ephemeral, max_steps=steps + 5,
    )
    async with open_runtime(options) as rt:
        start = _now()
        handle = await rt.submit("go")
        await handle.wait()
        elapsed = _now() - start
        assert handle.outcome is not None and handle.outcome.steps == steps + 1
    return elapsed


async def bare_turn(steps: int, workspace: Path) -> float:
    """The same provider events and tool runs with no runtime around them."""
    from nyzhi.tools.base import ToolContext
    from nyzhi.tools.registry import default_registry

    tool = default_registry().get("think")
    ctx = ToolContext(workspace_root=workspace, cwd=workspace)
    model = ZeroLatencyModel(steps)
    request = pt.ChatRequest(messages=(pt.Message("user", "go"),))
    start = _now()
    for _ in range(steps + 1):
        async with contextlib.aclosing(model.stream(request)) as events:
            async for event in events:
                if isinstance(event, pt.ToolCallEnd):
                    await tool.run(json.loads(event.arguments), ctx)
    return _now() - start


def per_step(quick: bool) -> dict:
    steps = 100 if quick else STEPS
    runs = 3 if quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / ".nyzhi").mkdir(parents=True)
        with isolated_home(Path(tmp) / "home"):  # isolated sessions and config
            base = min(trio.run(bare_turn, steps, ws) for _ in range(runs))
            eph = min(trio.run(runtime_turn, steps, ws, True) for _ in range(runs))
            saved = min(trio.run(runtime_turn, steps, ws, False) for _ in range(runs))
    return {
        "steps": steps,
        "baseline_ms_per_step": base / (steps + 1) * 1000,
        "runtime_ms_per_step": eph / (steps + 1) * 1000,
        "runtime_with_session_ms_per_step": saved / (steps + 1) * 1000,
        "overhead_ms_per_step": (eph - base) / (steps + 1) * 1000,
        "overhead_with_session_ms_per_step": (saved - base) / (steps + 1) * 1000,
        "ratio": eph / base,
        "target_ms": TARGET_MS,
    }


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    results = {"per_step": per_step(quick)}
    if "--json" in argv:
        print(json.dumps(results, indent=2))
        return
    s = results["per_step"]
    print(f"per step ({s['steps']} steps, zero-latency model, think tool):")
    print(f"  bare loop            {s['baseline_ms_per_step']:.3f} ms/step")
    print(f"  runtime, ephemeral   {s['runtime_ms_per_step']:.3f} ms/step ({s['ratio']:.1f}x; "
          f"overhead {s['overhead_ms_per_step']:.3f} ms, target <= {s['target_ms']} ms)")
    print(f"  runtime, session     {s['runtime_with_session_ms_per_step']:.3f} ms/step "
          f"(overhead {s['overhead_with_session_ms_per_step']:.3f} ms)")


if __name__ == "__main__":
    main(sys.argv[1:])
