"""Two ``nyz run``s in a row on the offline model (issue 54): the second's time to first token
against the first's, measured in the same run.

    python -m benchmarks local_model [--json]

Each run is a fresh ``nyz`` process as a new user (HOME in a temporary directory, no provider
config, no API keys, so the bundled SmolLM2 is used) in the same small project, and both share
that HOME. Time to first token: from spawning the process to the first model output on its
``stream-json`` output (a text delta or a tool call). It includes starting the llama.cpp
server and processing the prompt; with a persistent prompt-state cache the second run skips
most of the latter. Target: the second run's first token within 3 s. Nothing here is
asserted in tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._figures import printed_as_json, verdict

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "hello, what can you do?"
TARGET_S = 3.0
_FIRST_OUTPUT = ("text_delta", "thinking_delta", "tool_start")


def _first_token_s(home: Path, ws: Path) -> float:
    from nyzhi.testing.cli import nyz_env

    argv = [sys.executable, "-m", "nyzhi", "run", "--ephemeral", "--output-format",
            "stream-json", PROMPT]  # fmt: skip
    env = nyz_env(home)
    env["PYTHONPATH"] = str(ROOT)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ws, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    first = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if first is None and line.strip() and json.loads(line).get("type") in _FIRST_OUTPUT:
            first = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.wait() != 0 or first is None:
        raise SystemExit(f"nyz run failed ({proc.returncode}) or gave no output: {err[-500:]}")
    return first


def main(argv: list[str]) -> None:
    from nyzhi.provider.llama_server import unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        print(f"skipped: {reason}")
        return
    with tempfile.TemporaryDirectory(prefix="nyz-local-bench-") as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        home.mkdir()
        (ws / "src").mkdir(parents=True)
        (ws / "README.md").write_text("# shop\n\nA tiny shop: carts and prices.\n")
        (ws / "src" / "cart.py").write_text("class Cart:\n    pass\n")
        first = _first_token_s(home, ws)
        second = _first_token_s(home, ws)
    ratio = second / first
    figures = {"first_run_first_token_s": round(first, 3),
               "second_run_first_token_s": round(second, 3),
               "second_over_first": round(ratio, 3), "target_s": TARGET_S,
               "verdict": verdict(second, TARGET_S)}  # fmt: skip
    if printed_as_json(argv, figures):
        return
    print(f"first run, first token:  {first:7.2f} s  (baseline)")
    print(
        f"second run, first token: {second:7.2f} s  = {ratio:.2f}x the first "
        f"(target <= {TARGET_S:.0f} s: {figures['verdict']})"
    )
