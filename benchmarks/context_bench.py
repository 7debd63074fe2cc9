"""Context windows and overflows (issues 43 and 44), counted through the real ``nyz run``
against the scripted fake LLM over loopback HTTP.

    python -m benchmarks context [--json] [--quick]

1. **Model calls per 100 steps on an unknown model.** 100 steps that each read a 10 KB file,
   on ``fake-model-1`` (not in nyz's table; the server does not report a window). Baseline,
   in the same run: the same session with ``context_window = 8192``, the window nyz used to
   guess for a model it did not know. Set ``NYZHI_BEFORE=/path/to/an/older/checkout`` to also
   run it with that checkout's code (its ``nyz`` on ``PYTHONPATH``).

2. **Overflows over a 200-step session with varied content.** English, code, JSON and CJK
   files, 3-6 KB each, read one per step, by a model whose (simulated) tokenizer counts them
   differently: 0.3 tokens per ASCII character, 1.1 per other character, against a 32k window.
   The server answers "prompt is too long" (OpenAI Responses' shape: no figures) whenever the
   prompt is over the window. Uncalibrated: the server reports no usage, so nyz keeps
   estimating characters / 4. Calibrated: it reports the tokens it counted. Target: no
   overflow after the first response.

Nothing here is asserted in tests (the tests pin the behaviour; this counts it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from benchmarks._isolated import isolated_home
from nyzhi.testing.cli import json_lines, nyz_env
from nyzhi.testing.fake_llm import FakeUsage, open_fake_llm, reply, tool_call

WINDOW = 32768


def _is_summary(req: Any) -> bool:
    return "Summarise the conversation" in req.last_user_text()


def _config(ws: Path, base_url: str, style: str, extra: str = "") -> None:
    (ws / ".nyzhi" / "config.toml").write_text(
        f'[provider]\ndefault = "fake"\n\n[provider.fake]\napi_style = "{style}"\n'
        f'base_url = "{base_url}"\nmodel = "fake-model-1"\napi_key = "sk-bench"\n{extra}'
        "\n[agent]\nmax_steps = 1000\n"
    )


def _workspace(root: Path, name: str) -> Path:
    ws = root / name
    ws.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".nyzhi").mkdir()
    return ws


async def _run(ws: Path, home: Path, script: Callable[[Any], Any], style: str, extra: str,
               pythonpath: str | None = None) -> tuple[int, list[dict[str, Any]], int]:
    """(model calls, stream-json events, exit status) of one ``nyz run``."""
    async with open_fake_llm(script=script) as server:
        _config(ws, server.url_for(style), style, extra)
        env = nyz_env(home)
        if pythonpath is not None:
            env["PYTHONPATH"] = pythonpath
        proc = await trio.run_process(
            [sys.executable, "-m", "nyzhi", "run", "--output-format", "stream-json", "go"],
            cwd=ws, env=env, capture_stdout=True, capture_stderr=True, check=False)
    return len(server.requests), json_lines(proc.stdout), proc.returncode


def _reader(steps: int, prefix: str, usage: Callable[[Any], FakeUsage] | None = None,
            window: int | None = None, count: Callable[[Any], int] | None = None,
            overflows: list[int] | None = None) -> Callable[[Any], Any]:
    state = {"n": 0}

    def answer(req: Any) -> Any:
        if _is_summary(req):
            return reply("SUMMARY of the files read so far")
        if window is not None and count is not None and overflows is not None:
            tokens = count(req)
            if tokens > window:
                overflows.append(state["n"])
                from nyzhi.testing.fake_llm import context_overflow

                return context_overflow(tokens, window)
        state["n"] += 1
        kw = {"usage": usage(req)} if usage is not None else {}
        if state["n"] <= steps:
            return reply(tool_calls=[tool_call("read", {"file_path": f"{prefix}{state['n']}"})],
                         **kw)
        return reply("end", **kw)

    return answer


# ---- 1. model calls per 100 steps ------------------------------------------------------------


def _write_reads(ws: Path, steps: int) -> None:
    line = "a line of ordinary text a model reads while it works on a task\n"
    for i in range(1, steps + 1):
        (ws / f"r{i}").write_text((line * 170)[:10 * 1024])


async def calls_per_100_steps(root: Path, steps: int, extra: str,
                              pythonpath: str | None = None) -> tuple[float, int, int]:
    """(model calls per 100 steps, compactions, exit status)."""
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    ws = _workspace(root, f"reads-{abs(hash((extra, pythonpath)))}")
    _write_reads(ws, steps)
    calls, events, status = await _run(ws, home, _reader(steps, "r"), "openai", extra,
                                       pythonpath)
    compactions = sum(e["type"] == "compaction" for e in events)
    return 100 * calls / steps, compactions, status


# ---- 2. overflows over a session with varied content -------------------------------------------


def _varied(i: int) -> str:
    kind = i % 4
    if kind == 0:
        body = "The build failed because the cache was stale; clearing it fixed the test. "
    elif kind == 1:
        body = "def handler(event: dict) -> int:\n    return sum(x * 2 for x in event['xs'])\n"
    elif kind == 2:
        body = json.dumps({"id": i, "tags": ["a", "b"], "ok": True, "n": [1, 2, 3]}) + "\n"
    else:
        body = "配置文件里的路径写错了，所以测试一直失败。修改之后全部通过。\n"
    size = 3000 + (i * 373) % 3000
    return (body * (size // len(body) + 1))[:size]


def _tokens(req: Any) -> int:
    """The simulated tokenizer: 0.3 tokens per ASCII character, 1.1 per other character."""
    texts = [text for _role, text in req.transcript()]
    texts.append(json.dumps(req.json.get("tools") or []))
    ascii_chars = sum(sum(c < "\x80" for c in t) for t in texts)
    other = sum(len(t) for t in texts) - ascii_chars
    return int(0.3 * ascii_chars + 1.1 * other)


async def overflows(root: Path, steps: int, calibrated: bool) -> tuple[list[int], int, int]:
    """(steps at which the server answered an overflow, compactions, exit status)."""
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    ws = _workspace(root, f"varied-{calibrated}")
    for i in range(1, steps + 1):
        (ws / f"v{i}").write_text(_varied(i))
    seen: list[int] = []
    usage = (lambda req: FakeUsage(input_tokens=_tokens(req))) if calibrated else (
        lambda req: FakeUsage(input_tokens=0))
    script = _reader(steps, "v", usage, WINDOW, _tokens, seen)
    extra = f"context_window = {WINDOW}\n"
    _calls, events, status = await _run(ws, home, script, "openai-responses", extra)
    compactions = sum(e["type"] == "compaction" for e in events)
    return seen, compactions, status


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    steps = 40 if quick else 100
    long_steps = 60 if quick else 200
    figures: dict[str, Any] = {}
    before = os.environ.get("NYZHI_BEFORE")
    with tempfile.TemporaryDirectory() as tmp, isolated_home(Path(tmp) / "home"):
        root = Path(tmp)

        async def run_all() -> None:
            figures["calls_per_100_steps_8192_window"], c8, _ = await calls_per_100_steps(
                root / "a", steps, 'context_window = 8192\n')
            figures["calls_per_100_steps_unknown_model"], cu, _ = await calls_per_100_steps(
                root / "b", steps, "")
            figures["compactions_8192_window"], figures["compactions_unknown_model"] = c8, cu
            if before:
                figures["calls_per_100_steps_before"], cb, sb = await calls_per_100_steps(
                    root / "c", steps, "", pythonpath=before)
                figures["compactions_before"], figures["exit_before"] = cb, sb
            for calibrated in (False, True):
                seen, comps, status = await overflows(root / f"d{calibrated}", long_steps,
                                                      calibrated)
                name = "calibrated" if calibrated else "uncalibrated"
                figures[f"overflows_{name}"] = len(seen)
                figures[f"overflow_steps_{name}"] = seen
                figures[f"compactions_{name}"] = comps
                figures[f"exit_{name}"] = status

        trio.run(run_all)
    figures["ratio_calls_unknown_vs_8192"] = round(
        figures["calls_per_100_steps_unknown_model"]
        / figures["calls_per_100_steps_8192_window"], 3)
    if "--json" in argv:
        print(json.dumps(figures))
        return
    print(f"model calls per 100 steps, {steps} steps reading 10 KB each:")
    print(f"  context_window = 8192 (the old guess)  {figures['calls_per_100_steps_8192_window']:.1f}"
          f"  ({figures['compactions_8192_window']} compactions)")
    print(f"  unknown model, now                 "
          f"{figures['calls_per_100_steps_unknown_model']:.1f}"
          f"  ({figures['compactions_unknown_model']} compactions)"
          f"  ratio {figures['ratio_calls_unknown_vs_8192']}")
    if before:
        print(f"  unknown model, {before}  {figures['calls_per_100_steps_before']:.1f}"
              f"  ({figures['compactions_before']} compactions, exit {figures['exit_before']})")
    print(f"overflows over {long_steps} steps of varied content ({WINDOW}-token window):")
    for name in ("uncalibrated", "calibrated"):
        print(f"  {name:13s} {figures[f'overflows_{name}']} overflows at steps "
              f"{figures[f'overflow_steps_{name}']}, {figures[f'compactions_{name}']} "
              f"compactions, exit {figures[f'exit_{name}']}")
