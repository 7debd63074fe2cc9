"""``nyz acp``: time to the first streamed text, and the memory of one idle session.

    python -m benchmarks acp [--json] [--quick]

* first token: from the moment the fake LLM receives the model request to the moment the
  client reads the first streamed text on the process's stdout: for ``nyz acp``, the first
  ``agent_message_chunk`` of a ``session/prompt``; for the baseline, measured in the same run
  against the same server, ``nyz run --output-format stream-json``'s first ``text_delta``
  line. This is the front end's share (events through the dispatch, the converter, the JSON
  line) of a prompt's latency. Target (issue 34): <= 1.1x. Also shown: ``session/prompt`` to
  first chunk, the whole latency an editor sees once the session is open.
* memory: the ``nyz acp`` process's resident set after ``initialize`` (no session), and with
  one idle session open (after ``session/new``); the difference is what a session costs.

Medians of several runs; the machine is shared, so run it when it is quiet. Nothing here is
asserted in tests.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_RATIO = 1.1
TEXT = "The first streamed words of a fairly ordinary answer."


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _lines(proc: Any, buffer: bytearray) -> Any:
    while True:
        while b"\n" in buffer:
            end = buffer.index(b"\n")
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            yield line
        chunk = await proc.stdout.receive_some(65536)
        if not chunk:
            return
        buffer += chunk


def _setup(tmp: str) -> tuple[Path, dict[str, str]]:
    ws = Path(tmp) / "ws"
    (ws / ".nyzhi").mkdir(parents=True)
    home = Path(tmp) / "home"
    home.mkdir()
    return ws, {**os.environ, "HOME": str(home), "PYTHONUNBUFFERED": "1"}


def _config(ws: Path, url: str) -> None:
    (ws / ".nyzhi" / "config.toml").write_text(
        f'[provider]\ndefault = "fake"\n[provider.fake]\napi_style = "openai"\n'
        f'base_url = "{url}"\nmodel = "m"\napi_key = "k"\n')


async def _run_once(ws: Path, env: dict[str, str]) -> float:
    """``nyz run``: model request received -> first text_delta line read."""
    import trio

    from nyzhi.testing.fake_llm import Reply, open_fake_llm

    received: list[float] = []

    def script(_request: Any) -> Reply:
        received.append(time.perf_counter())
        return Reply(text=TEXT)

    async with open_fake_llm(script=script) as server:
        _config(ws, server.url_for("openai"))
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "nyzhi", "run", "--ephemeral", "--output-format",
             "stream-json", "hi"], cwd=ws, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        first = 0.0
        with trio.fail_after(60):
            async for line in _lines(proc, bytearray()):
                if not first and b'"text_delta"' in line:
                    first = time.perf_counter()
            await proc.wait()
    return first - received[0]


async def _acp_once(ws: Path, env: dict[str, str]) -> dict[str, float]:
    """``nyz acp``: memory before and after a session; request -> first chunk; prompt ->
    first chunk."""
    import trio

    from nyzhi.testing.fake_llm import Reply, open_fake_llm

    received: list[float] = []

    def script(_request: Any) -> Reply:
        received.append(time.perf_counter())
        return Reply(text=TEXT)

    async with open_fake_llm(script=script) as server:
        _config(ws, server.url_for("openai"))
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "nyzhi", "acp"], cwd=ws, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        lines = _lines(proc, bytearray())

        async def call(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            await proc.stdin.send_all(json.dumps(message).encode() + b"\n")
            async for line in lines:
                answer = json.loads(line)
                if answer.get("id") == request_id and "method" not in answer:
                    return answer
            raise SystemExit("nyz acp closed its output")

        out: dict[str, float] = {}
        with trio.fail_after(60):
            await call(1, "initialize", {"protocolVersion": 1})
            out["rss_initialized_kib"] = _rss_kib(proc.pid)
            sid = (await call(2, "session/new", {"cwd": str(ws), "mcpServers": []}))[
                "result"]["sessionId"]
            out["rss_session_kib"] = _rss_kib(proc.pid)
            message = {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
                "sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}}
            sent = time.perf_counter()
            await proc.stdin.send_all(json.dumps(message).encode() + b"\n")
            first = 0.0
            async for line in lines:
                if not first and b'"agent_message_chunk"' in line:
                    first = time.perf_counter()
                if b'"id":3' in line and b'"stopReason"' in line:
                    break
            await proc.stdin.aclose()
            await proc.wait()
        out["request_to_chunk"] = first - received[0]
        out["prompt_to_chunk"] = first - sent
    return out


def measure(runs: int) -> dict[str, Any]:
    import trio

    with tempfile.TemporaryDirectory() as tmp:
        ws, env = _setup(tmp)
        trio.run(_run_once, ws, env)  # warm the page cache and bytecode for both
        trio.run(_acp_once, ws, env)
        base, ours = [], []
        for _ in range(runs):  # alternate, so load on the machine hits both alike
            base.append(trio.run(_run_once, ws, env))
            ours.append(trio.run(_acp_once, ws, env))

    def med(values: list[float]) -> float:
        return statistics.median(values)

    run_ms = med(base) * 1000
    acp_ms = med([o["request_to_chunk"] for o in ours]) * 1000
    initialized = med([o["rss_initialized_kib"] for o in ours])
    session = med([o["rss_session_kib"] for o in ours])
    return {
        "run_request_to_first_token_ms": round(run_ms, 2),
        "acp_request_to_first_chunk_ms": round(acp_ms, 2),
        "first_token_ratio": round(acp_ms / run_ms, 2) if run_ms else None,
        "first_token_target_ratio": TARGET_RATIO,
        "acp_prompt_to_first_chunk_ms": round(
            med([o["prompt_to_chunk"] for o in ours]) * 1000, 2),
        "acp_rss_initialized_mib": round(initialized / 1024, 1),
        "acp_rss_one_idle_session_mib": round(session / 1024, 1),
        "acp_idle_session_cost_mib": round((session - initialized) / 1024, 1),
    }


def main(argv: list[str]) -> None:
    runs = 3 if "--quick" in argv else 9
    figures = measure(runs)
    if "--json" in argv:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"  {key}: {value}")
