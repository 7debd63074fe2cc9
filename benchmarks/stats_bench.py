"""``nyz stats`` over 1,000 sessions, cold and warm, against reading the logs once.

    python -m benchmarks stats [--json] [--quick]

1,000 sessions (200 with --quick) of 10 tool-using turns each, written by the real session
writer. Figures:

  read every log once      the baseline: ``read_bytes`` of each log, nothing parsed
  stats, cold              no index: every log folded, the index written
  stats, warm              the index is fresh: only a ``stat`` per log (target: ratio < 1)
  nyz stats, warm process  the whole command as a user runs it (target ≤ 1 s)
  nyz --version process    the interpreter's and nyz's own start-up, for scale

Timings are the best of several repeats (the machine is shared). Nothing here is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._figures import printed_as_json
from nyzhi.core import events as ev
from nyzhi.core.runtime.sessions import SessionStore
from nyzhi.core.runtime.usage_stats import session_summaries, stats
from nyzhi.provider.types import Message, ToolCall

REPEATS = 5


def _write_sessions(root: Path, n: int, turns: int = 10) -> None:
    store = SessionStore(root)
    for i in range(n):
        with store.create(cwd=f"/proj/{i % 7}", workspace_root=f"/proj/{i % 7}",
                          provider="fake", model="m", sync="never") as w:
            w.append_event(ev.SessionStart(session_id=w.id, provider="fake", model="m"))
            for t in range(turns):
                w.append_event(ev.TurnStart(turn_id=f"t{t}", prompt="do the thing"))
                w.append_message(Message("user", "do the thing, carefully " * 4))
                call = ToolCall(f"c{t}", "read", '{"path": "src/module.py"}')
                w.append_message(Message("assistant", "Reading it.", tool_calls=(call,)))
                w.append_event(ev.ToolStart(call.id, "read", call.arguments))
                w.append_event(ev.ToolDone(call.id, "read", "x = 1\n" * 40))
                w.append_message(Message("tool", "x = 1\n" * 40, tool_call_id=call.id,
                                         name="read"))
                w.append_event(ev.Usage(1200, 40, cache_read_tokens=800, cost_usd=0.001,
                                        model="m"))
                w.append_event(ev.TurnComplete(turn_id=f"t{t}", text="done"))


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    n = 200 if quick else 1000
    repeats = 2 if quick else REPEATS
    figures: dict[str, float] = {"sessions": n}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        root = home / ".local/share/nyzhi/sessions"
        cache = home / ".cache/nyzhi"
        _write_sessions(root, n)
        logs = list(root.glob("*.jsonl"))
        figures["log_mb"] = sum(p.stat().st_size for p in logs) / 1e6

        figures["read_once_ms"] = _best(lambda: [p.read_bytes() for p in logs], repeats) * 1e3

        def cold() -> None:
            for f in (cache / "stats").glob("*.json"):
                f.unlink()
            stats(session_summaries(root, cache))

        figures["cold_ms"] = _best(cold, repeats) * 1e3
        figures["warm_ms"] = _best(lambda: stats(session_summaries(root, cache)), repeats) * 1e3
        assert stats(session_summaries(root, cache))["turns"] == n * 10

        env = {**os.environ, "HOME": str(home)}
        for var in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
            env.pop(var, None)

        def run(*args: str) -> None:
            subprocess.run([sys.executable, "-m", "nyzhi", *args], env=env, check=True,
                           stdout=subprocess.DEVNULL)

        figures["process_warm_ms"] = _best(lambda: run("stats"), repeats) * 1e3
        figures["process_version_ms"] = _best(lambda: run("--version"), repeats) * 1e3
    if printed_as_json(argv, figures):
        return
    base = figures["read_once_ms"]
    print(f"  {n} sessions, {figures['log_mb']:.1f} MB of logs")
    print(f"  baseline, read every log once: {base:.1f} ms")
    print(f"  stats, cold (fold all, write the index): {figures['cold_ms']:.1f} ms  "
          f"ratio {figures['cold_ms'] / base:.2f}")
    print(f"  stats, warm (index fresh): {figures['warm_ms']:.1f} ms  "
          f"ratio {figures['warm_ms'] / base:.2f}")
    print(f"  nyz stats, warm, whole process: {figures['process_warm_ms']:.0f} ms "
          f"(target <= 1000 ms; nyz --version: {figures['process_version_ms']:.0f} ms)")


if __name__ == "__main__":
    main(sys.argv[1:])
