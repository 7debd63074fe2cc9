"""``nyz acp``: the memory of many sessions in one process, and whether closing gives it back.

    python -m benchmarks acp_sessions [--json] [--sessions=N]   (default 50)

One ``nyz acp`` process over stdio (JSON-RPC lines, as an editor drives it), the fake LLM
(``nyzhi.testing.fake_llm``, loopback HTTP, in a process of its own) as its provider. Each
session is ``session/new``, one ``session/prompt`` answered with a short text, and, when it is
done with, ``session/close`` (its turn cancelled, its runtime shut down and saved). The
process's resident set (``VmRSS`` from ``/proc/PID/status``) is read:

* at start (after ``initialize``, no session);
* after 1 session, and after 10, all 10 kept open: ``per_extra_session_mib`` is
  ``(RSS after 10 open - RSS after 1) / 9``, what one more open session costs once the first
  has paid for the imports and caches every session shares. Target (issue 50): <= 3 MiB;
* after those 10 are closed, and after each further 10 opened, prompted and closed one at a
  time, up to N opened and closed in all: ``retained_after_all_closed_mib`` is ``RSS after N
  opened and closed - RSS after 1``, which should be near noise (a closed session that left
  memory behind grows it with N).
  It includes the high-water mark of the 10 held open at once: memory freed when they close
  stays with the process's allocator (reused, not given back), so
  ``growth_after_first_10_closed_mib`` (``RSS after N closed - RSS after the 10 closed``) is
  the figure that shows a leak: ~1 MiB a session (39.2 MiB over 40) while each closed
  session's runtime stayed frozen (``nyzhi.collector.freeze_runtime``), 0.8 after.

The baseline is the same process's own reading after its first session (both differences are
taken against it), not another program. Nothing here is asserted in tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._figures import printed_as_json, verdict
from benchmarks.acp_bench import TIMEOUT, _config, _Lines, _rss_kib, _Server, _setup

TARGET_MIB = 3.0
SESSIONS = 50
OPEN_AT_ONCE = 10
STEP = 10


class _Client:
    """JSON-RPC lines to ``nyz acp``'s stdin and from its stdout, by blocking reads."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.stdin = proc.stdin
        self.lines = _Lines(proc.stdout.fileno())
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.stdin.write(json.dumps(message).encode() + b"\n")
        while True:  # session/update notifications (and anything else) are read past
            reply = json.loads(self.lines.next_line()[0])
            if reply.get("id") == self.next_id and "method" not in reply:
                if "error" in reply:
                    raise SystemExit(f"acp_sessions bench: {method} failed: {reply['error']}")
                return reply["result"]

    def rss_mib(self) -> float:
        return _rss_kib(self.proc.pid) / 1024


def _open(client: _Client, ws: Path) -> str:
    sid = client.call("session/new", {"cwd": str(ws), "mcpServers": []})["sessionId"]
    result = client.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    )
    if result.get("stopReason") != "end_turn":
        raise SystemExit(f"acp_sessions bench: the prompt ended with {result}")
    return str(sid)


def _close(client: _Client, sid: str) -> None:
    client.call("session/close", {"sessionId": sid})


def measure(sessions: int = SESSIONS) -> dict[str, Any]:
    sessions = max(sessions, OPEN_AT_ONCE)
    with tempfile.TemporaryDirectory() as tmp:
        ws, env = _setup(tmp)
        server = _Server(env, realtime=False)
        try:
            _config(env, server.url)
            proc = subprocess.Popen(
                [sys.executable, "-m", "nyzhi", "acp"],
                cwd=ws,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                bufsize=0,
            )
            try:
                return _drive(_Client(proc), ws, sessions, server)
            finally:
                assert proc.stdin is not None
                proc.stdin.close()
                try:
                    proc.wait(timeout=TIMEOUT)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        finally:
            server.close()


def _drive(client: _Client, ws: Path, sessions: int, server: _Server) -> dict[str, Any]:
    client.call("initialize", {"protocolVersion": 1})
    rss: dict[str, float] = {"start": client.rss_mib()}
    held = [_open(client, ws)]
    rss["1_open"] = client.rss_mib()
    while len(held) < OPEN_AT_ONCE:
        held.append(_open(client, ws))
    rss[f"{OPEN_AT_ONCE}_open"] = client.rss_mib()
    for sid in held:
        _close(client, sid)
    done = len(held)
    rss[f"{done}_closed"] = client.rss_mib()
    while done < sessions:
        _close(client, _open(client, ws))
        done += 1
        if done % STEP == 0 or done == sessions:
            rss[f"{done}_closed"] = client.rss_mib()
    server.arrivals()  # the server's stamps, read so its pipe never fills
    per_extra = (rss[f"{OPEN_AT_ONCE}_open"] - rss["1_open"]) / (OPEN_AT_ONCE - 1)
    return {
        "sessions_opened_and_closed": done,
        "rss_mib": {k: round(v, 1) for k, v in rss.items()},
        "first_session_mib": round(rss["1_open"] - rss["start"], 1),
        "per_extra_session_mib": round(per_extra, 2),
        "per_extra_session_target_mib": TARGET_MIB,
        "per_extra_session_verdict": verdict(per_extra, TARGET_MIB),
        "retained_after_all_closed_mib": round(rss[f"{done}_closed"] - rss["1_open"], 1),
        "growth_after_first_10_closed_mib": round(
            rss[f"{done}_closed"] - rss[f"{OPEN_AT_ONCE}_closed"], 1
        ),
    }


def main(argv: list[str]) -> None:
    sessions = SESSIONS
    for arg in argv:
        if arg.startswith("--sessions="):
            sessions = int(arg.split("=", 1)[1])
    result = measure(sessions)
    if printed_as_json(argv, result):
        return
    for key, value in result.items():
        print(f"  {key}: {value}")
