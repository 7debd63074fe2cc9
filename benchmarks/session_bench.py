"""Cost of session logging and hooks per agent step, against plain appends in the same run.

    python -m benchmarks session [--json] [--quick]

One "step" writes what the agent loop records for one tool-using model call: the assistant
message (with a tool call), tool_start, tool_done, the tool result message and a usage event
(plus 20 text deltas, which the writer drops). Figures:

  step, sync=never      vs the same records as buffered ``write`` + ``flush`` (no fsync)
  step, sync=boundary   the default: two fsyncs per step (the two messages)
  step, sync=always     every record fsynced
  load 1,000 steps      rebuilding a session from its log
  hook fire, no match   the fast path when no hook listens
  hook fire, `true`     one real ``sh -c`` hook process
Timings are the best of several repeats (the machine is shared). Nothing here is asserted.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from pathlib import Path

import trio

from nyzhi.core import events as ev
from nyzhi.core.runtime.hooks import HookRunner, HookSpec
from nyzhi.core.runtime.sessions import SessionStore, message_to_json
from nyzhi.provider.types import Message, ToolCall

REPEATS = 5


def _step_records(i: int) -> tuple[list[Message], list[ev.Event]]:
    call = ToolCall(f"c{i}", "read", '{"path": "src/module.py"}')
    msgs = [
        Message("assistant", "Let me read the module first.", tool_calls=(call,)),
        Message("tool", "x = 1\n" * 40, tool_call_id=call.id, name="read"),
    ]
    evs: list[ev.Event] = [ev.TextDelta("tok ") for _ in range(20)]
    evs += [
        ev.ToolStart(call.id, "read", call.arguments),
        ev.ToolDone(call.id, "read", "x = 1\n" * 40, duration_ms=0.4),
        ev.Usage(1200, 40, cost_usd=0.001),
    ]
    return msgs, evs


def _bench_writer(root: Path, sync: str, steps: int) -> float:
    store = SessionStore(root)
    w = store.create(sync=sync)  # type: ignore[arg-type]
    w.append_message(Message("user", "benchmark"))
    records = [_step_records(i) for i in range(steps)]
    t0 = time.perf_counter()
    for msgs, evs in records:
        for e in evs[:20]:
            w.append_event(e)
        w.append_message(msgs[0])
        w.append_event(evs[20])
        w.append_event(evs[21])
        w.append_message(msgs[1])
        w.append_event(evs[22])
    elapsed = time.perf_counter() - t0
    w.close()
    return elapsed / steps


def _bench_baseline(root: Path, steps: int) -> float:
    records = [_step_records(i) for i in range(steps)]
    with open(root / "baseline.jsonl", "a", encoding="utf-8") as f:
        t0 = time.perf_counter()
        for msgs, evs in records:
            for rec in ({"kind": "message", "message": message_to_json(msgs[0])},
                        {"kind": "event", "event": ev.to_json(evs[20])},
                        {"kind": "event", "event": ev.to_json(evs[21])},
                        {"kind": "message", "message": message_to_json(msgs[1])},
                        {"kind": "event", "event": ev.to_json(evs[22])}):
                f.write(json.dumps(rec, separators=(",", ":")) + "\n")
                f.flush()
        return (time.perf_counter() - t0) / steps


def _best(fn, repeats: int) -> float:
    return min(fn() for _ in range(repeats))


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    steps = 100 if quick else 400
    repeats = 2 if quick else REPEATS
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        figures["baseline_step_ms"] = _best(lambda: _bench_baseline(root, steps), repeats) * 1e3
        for sync in ("never", "boundary", "always"):
            figures[f"step_{sync}_ms"] = _best(
                lambda s=sync: _bench_writer(root / s, s, steps), repeats) * 1e3
        store = SessionStore(root / "load")
        w = store.create(sync="never")
        for i in range(1000):
            msgs, evs = _step_records(i)
            w.append_message(msgs[0])
            w.append_event(evs[20])
            w.append_event(evs[21])
            w.append_message(msgs[1])
        w.close()
        t0 = time.perf_counter()
        store.load(w.id)
        figures["load_1000_steps_ms"] = (time.perf_counter() - t0) * 1e3

        async def hooks() -> None:
            runner = HookRunner([HookSpec("after_turn", "true")], root)
            n = 20 if quick else 50
            best = math.inf
            t0 = time.perf_counter()
            for _ in range(n * 10):
                await runner.fire("pre_tool_use", {"tool_name": "read"})
            figures["hook_no_match_us"] = (time.perf_counter() - t0) / (n * 10) * 1e6
            for _ in range(n):
                t0 = time.perf_counter()
                await runner.fire("after_turn", {"text": "done"})
                best = min(best, time.perf_counter() - t0)
            figures["hook_true_ms"] = best * 1e3

        trio.run(hooks)
    if "--json" in argv:
        print(json.dumps(figures))
        return
    base = figures["baseline_step_ms"]
    print(f"  baseline (buffered write+flush, no fsync): {base:.3f} ms/step")
    for sync in ("never", "boundary", "always"):
        v = figures[f"step_{sync}_ms"]
        print(f"  step, sync={sync:<8}  {v:.3f} ms/step  ratio {v / base:.2f}")
    print(f"  load a 1,000-step session: {figures['load_1000_steps_ms']:.1f} ms")
    print(f"  hook fire, no match: {figures['hook_no_match_us']:.1f} us;"
          f" one `true` hook: {figures['hook_true_ms']:.2f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
