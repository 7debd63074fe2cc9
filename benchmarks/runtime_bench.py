"""The agent runtime's own cost: per-step overhead and ``nyz run`` start-up.

* per step: a turn of N tool-calling steps against a zero-latency in-process model (every
  step calls ``think``, which does no work), through the real turn loop, gates, execution and
  event bus. Baseline in the same run: a bare loop that streams the same provider events and
  calls the same tool directly. Target: <= 0.5 ms per step of runtime overhead (200 subagents
  multiply it).
* start-up: wall time from spawning ``nyz run`` to the fake LLM receiving its first request,
  against a bare ``python -c`` process that imports httpx and sends one request to the same
  server. Target: <= 300 ms.

Usage: ``python -m benchmarks runtime [--json] [--quick]``.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from nyzhi.provider import types as pt

STEPS = 300


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
    from nyzhi.core.runtime import RuntimeOptions, open_runtime

    options = RuntimeOptions(
        cwd=workspace, provider_instance=ZeroLatencyModel(steps), trust="full",
        ephemeral=ephemeral, max_steps=steps + 5,
    )
    async with open_runtime(options) as rt:
        start = time.perf_counter()
        handle = await rt.submit("go")
        await handle.wait()
        elapsed = time.perf_counter() - start
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
    start = time.perf_counter()
    for _ in range(steps + 1):
        async with contextlib.aclosing(model.stream(request)) as events:
            async for event in events:
                if isinstance(event, pt.ToolCallEnd):
                    await tool.run(json.loads(event.arguments), ctx)
    return time.perf_counter() - start


def per_step(quick: bool) -> dict:
    steps = 100 if quick else STEPS
    runs = 3 if quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / ".nyzhi").mkdir(parents=True)
        os.environ["HOME"] = str(Path(tmp) / "home")  # isolated sessions and config
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
        "target_ms": 0.5,
    }


async def time_to_first_request(argv: list[str], cwd: Path, env: dict, make_config) -> float:
    from nyzhi.testing.fake_llm import Reply, open_fake_llm

    first = trio.Event()
    stamp: list[float] = []

    def script(_request):
        if not stamp:
            stamp.append(time.perf_counter())
            first.set()
        return Reply(text="ok")

    async with open_fake_llm(script=script) as server:
        make_config(server)
        start = time.perf_counter()
        proc = await trio.lowlevel.open_process(
            [a.replace("{URL}", server.url_for("openai")) for a in argv], cwd=cwd, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        with trio.fail_after(30):
            await first.wait()
            await proc.wait()
    return stamp[0] - start


def startup(quick: bool) -> dict:
    runs = 3 if quick else 7
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / ".nyzhi").mkdir(parents=True)
        env = {**os.environ, "HOME": str(Path(tmp) / "home")}

        def config(server) -> None:
            (ws / ".nyzhi" / "config.toml").write_text(
                f'[provider]\ndefault = "fake"\n[provider.fake]\napi_style = "openai"\n'
                f'base_url = "{server.url_for("openai")}"\nmodel = "m"\napi_key = "k"\n'
            )

        bare = [sys.executable, "-c",
                "import httpx,sys; httpx.post(sys.argv[1] + '/chat/completions', json={})",
                "{URL}"]
        nyz = [sys.executable, "-m", "nyzhi", "run", "--ephemeral", "hi"]
        base = [trio.run(time_to_first_request, bare, ws, env, config) for _ in range(runs)]
        ours = [trio.run(time_to_first_request, nyz, ws, env, config) for _ in range(runs)]
    b, o = statistics.median(base), statistics.median(ours)
    return {"baseline_ms": b * 1000, "nyz_run_ms": o * 1000, "ratio": o / b, "target_ms": 300}


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    results = {"per_step": per_step(quick), "startup": startup(quick)}
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
    u = results["startup"]
    print("nyz run start to first request (median):")
    print(f"  bare python+httpx    {u['baseline_ms']:.0f} ms")
    print(f"  nyz run              {u['nyz_run_ms']:.0f} ms  ({u['ratio']:.2f}x, target <= 300 ms)")


if __name__ == "__main__":
    main(sys.argv[1:])
