"""``nyz acp``: time to the first streamed text, and the memory of one idle session.

    python -m benchmarks acp [--json] [--quick] [--pairs=N] [--ordinary]

* first token: from the moment the fake LLM receives the model request to the moment the
  client reads the first streamed text on the process's stdout: for ``nyz acp``, the first
  ``agent_message_chunk`` of a ``session/prompt`` (the session's first prompt, in a fresh
  process); for the baseline, measured in the same run against the same server, ``nyz run
  --output-format stream-json``'s first ``text_delta`` line (its one prompt, in a fresh
  process). This is the front end's share (events through the dispatch, the converter, the
  JSON line) of a prompt's latency. Target (issue 34): <= 1.1x. Also shown: ``session/prompt``
  to first chunk, the whole latency an editor sees once the session is open.
* memory: the ``nyz acp`` process's resident set after ``initialize`` (no session), and with
  one idle session open (after ``session/new``); the difference is what a session costs.

How the first-token ratio is measured, and why (the figures are a few milliseconds each, and
on a loaded shared machine one trial of either side swings by more than the 10% asked about):

* trials come in pairs, one ``nyz acp`` and one ``nyz run`` back to back, the order flipping
  every pair (ABBA), so a burst of load on the machine hits both sides of a pair alike; the
  figure is the **median of the per-pair ratios** with their interquartile range and a
  distribution-free confidence interval (at least 95%) for that median, over many pairs (40;
  10 with ``--quick``), not a ratio of two medians taken over different moments. Read the
  target off the interval's upper end: single trials are bimodal on both sides (~1.25 and
  ~1.8 ms here, by whether the reply's first frames reach ``nyz`` in one read), so one run's
  median still moves by about +-0.2;
* the fake LLM server runs in a process of its own for the whole bench, and is the same
  server for every trial: the bench's own work (reading the other side's pipe, serving) no
  longer shares an event loop with the server, and each request's arrival is stamped by the
  server on the system-wide monotonic clock the bench reads too;
* the bench reads the pipes with plain blocking reads (no event loop of its own), stamping the
  read that returns the first text line;
* the two fixtures, the bench (the client reading the pipe) and the server, run real-time
  (``SCHED_FIFO``) where allowed (root, CAP_SYS_NICE), and the ``nyz`` processes as ordinary
  processes (``SCHED_RESET_ON_FORK``). On this shared 2-core machine the reader otherwise
  queued for a core: it often read the first chunk milliseconds after ``nyz`` wrote it, a
  dozen lines behind it, so the figure was mostly the scheduler's. Measured in one run, the
  per-pair ratios' IQR was 0.55-2.2 with ordinary fixtures and 0.75-1.4 with real-time ones.
  ``--ordinary`` measures without (and where the privilege is missing, that is what
  happens); the output's ``fixture_priority`` says which;
* two pairs are run first and thrown away, so both sides start equally warm (page cache,
  bytecode, the server's code paths); every measured trial is still a fresh process and its
  first prompt, as the issue defines the figure.

Before this the bench took 9 alternating runs, each with a fresh fake server in the bench's
own trio loop, and divided the two medians: 1.61, 0.85 and 0.57 in three runs in a row.

Where the time goes (traced with a trio instrument, real-time fixtures): from the request's
arrival to the first line's write, ``nyz acp`` spends ~0.86 ms of CPU and ``nyz run`` ~0.93
(its first ``text_delta`` rendering alone ~0.3 ms, ``nyz acp``'s first update ~0.15 ms, its
writers made ahead by ``convert.prepare``); the rest of either figure is waiting on the
server's frames and for a core. With ``--ordinary`` fixtures the ratio comes out higher (1.10,
interval 0.91-1.45, in one 40-pair run): ``nyz acp`` writes its first line as early as ``nyz
run`` does (median 1.87 vs 1.93 ms after the request's arrival, traced) but the ordinary
reader reads it ~0.5 ms later, against ~0 for ``nyz run``: the client queued for a core. Most
likely the local fake server, still sending the rest of the reply, held the other core:
``nyz run``'s slower first render let it finish first. A remote model server takes no local
core, which is why the fixtures, not ``nyz``, are the processes made real-time.
Nothing here is asserted in tests.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TARGET_RATIO = 1.1
TEXT = "The first streamed words of a fairly ordinary answer."
PAIRS = 40
QUICK_PAIRS = 10
WARMUP_PAIRS = 2
TIMEOUT = 60.0
_REPO = Path(__file__).resolve().parents[1]


def _now() -> int:
    """The system-wide monotonic clock, in ns: the server process stamps on the same one."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def _fixture_priority() -> bool:
    """Put this process (the bench, or the server) ahead of ordinary ones, when allowed.

    Real-time (``SCHED_FIFO``), so a pipe's reader or the server wakes the moment it has
    work, instead of queueing behind whatever else the shared machine runs: measured before
    this, the bench often read the first chunk milliseconds after ``nyz`` wrote it, with a
    dozen more lines behind it. ``SCHED_RESET_ON_FORK``: the ``nyz`` processes it starts run
    as ordinary processes, as they would for a user. Without the privilege, nothing changes
    (the figures are only noisier); the output says which it was."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(10))
    except (AttributeError, OSError):
        return False
    return True


def _ordinary_priority() -> None:
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# ---- the fake LLM, in its own process -------------------------------------------------------

def serve(realtime: bool) -> None:
    """The server process: prints its URL, then one arrival stamp per model request; ends
    when its stdin closes."""
    import trio

    from nyzhi.testing.fake_llm import Reply, open_fake_llm

    def script(_request: Any) -> Reply:
        os.write(1, f"{_now()}\n".encode())
        return Reply(text=TEXT)

    if realtime:
        _fixture_priority()

    async def main() -> None:
        async with open_fake_llm(script=script) as server:
            os.write(1, (server.url_for("openai") + "\n").encode())
            stdin = trio.lowlevel.FdStream(os.dup(0))
            while await stdin.receive_some(4096):
                pass
            server.close()

    trio.run(main)


class _Server:
    def __init__(self, env: dict[str, str], realtime: bool) -> None:
        path = os.pathsep.join(p for p in (str(_REPO), env.get("PYTHONPATH", "")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"from benchmarks.acp_bench import serve; serve({realtime})"],
            cwd=_REPO, env={**env, "PYTHONPATH": path}, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        self.reader = _Lines(self.proc.stdout.fileno())  # type: ignore[union-attr]
        self.url = self.reader.next_line()[0].decode()

    def arrivals(self) -> list[int]:
        """Every arrival stamped since the last call (the trial's process has exited, so its
        requests' stamps are all written)."""
        stamps = [int(line) for line in self.reader.drain()]
        return stamps

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=TIMEOUT)


class _Lines:
    """Lines from a pipe by blocking reads; each with the stamp of the read that brought it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.stamp = 0

    def next_line(self) -> tuple[bytes, int]:
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.fd], [], [], TIMEOUT)
            if not ready:
                raise SystemExit("acp bench: no output for a minute")
            chunk = os.read(self.fd, 65536)
            self.stamp = _now()
            if not chunk:
                raise EOFError
            self.buffer += chunk
        end = self.buffer.index(b"\n")
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        return line, self.stamp

    def drain(self) -> list[bytes]:
        while select.select([self.fd], [], [], 0)[0]:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                break
            self.buffer += chunk
        *lines, rest = bytes(self.buffer).split(b"\n")
        self.buffer = bytearray(rest)
        return lines


# ---- one trial of each side -----------------------------------------------------------------

def _setup(tmp: str) -> tuple[Path, dict[str, str]]:
    ws = Path(tmp) / "ws"
    (ws / ".nyzhi").mkdir(parents=True)
    home = Path(tmp) / "home"
    home.mkdir()
    return ws, {**os.environ, "HOME": str(home), "PYTHONUNBUFFERED": "1"}


def _config(env: dict[str, str], url: str) -> None:
    """The provider in the user's own config (``HOME`` is the bench's): a project's config
    waits for approval, and its provider with it."""
    from nyzhi.config.paths import global_config_path

    path = global_config_path(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[provider]\ndefault = "fake"\n[provider.fake]\napi_style = "openai"\n'
        f'base_url = "{url}"\nmodel = "m"\napi_key = "k"\n')


@contextlib.contextmanager
def _nyz(args: list[str], ws: Path, env: dict[str, str],
         stdin: int) -> Iterator[subprocess.Popen[bytes]]:
    """``nyz ARGS`` in the workspace, its stdout a pipe; killed if a trial fails midway."""
    proc = subprocess.Popen([sys.executable, "-m", "nyzhi", *args], cwd=ws, env=env,
                            stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            bufsize=0)
    try:
        yield proc
        proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _since_arrival(first: int, server: _Server, what: str) -> float:
    """ms from the trial's first model request reaching the server to ``first``."""
    arrivals = server.arrivals()
    if not first or not arrivals:
        raise SystemExit(f"acp bench: no {what} (or no model request) in a trial")
    return (first - arrivals[0]) / 1e6


def _run_once(ws: Path, env: dict[str, str], server: _Server) -> dict[str, float]:
    """``nyz run``: model request received -> first text_delta line read."""
    args = ["run", "--ephemeral", "--output-format", "stream-json", "hi"]
    with _nyz(args, ws, env, subprocess.DEVNULL) as proc:
        lines = _Lines(proc.stdout.fileno())  # type: ignore[union-attr]
        first = 0
        try:
            while True:
                line, stamp = lines.next_line()
                if not first and b'"text_delta"' in line:
                    first = stamp
        except EOFError:
            pass
    return {"request_to_token": _since_arrival(first, server, "text_delta")}


def _acp_session(proc: subprocess.Popen[bytes], ws: Path) -> dict[str, Any]:
    """initialize, session/new, one prompt; then stdin closed (the client goes away)."""
    stdin = proc.stdin
    assert stdin is not None
    lines = _Lines(proc.stdout.fileno())  # type: ignore[union-attr]

    def send(request_id: int, method: str, params: dict[str, Any]) -> int:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        stdin.write(json.dumps(message).encode() + b"\n")
        return _now()

    def answer(request_id: int) -> dict[str, Any]:
        while True:
            reply = json.loads(lines.next_line()[0])
            if reply.get("id") == request_id and "method" not in reply:
                return reply

    out: dict[str, Any] = {}
    send(1, "initialize", {"protocolVersion": 1})
    answer(1)
    out["rss_initialized_kib"] = _rss_kib(proc.pid)
    send(2, "session/new", {"cwd": str(ws), "mcpServers": []})
    sid = answer(2)["result"]["sessionId"]
    out["rss_session_kib"] = _rss_kib(proc.pid)
    sent = send(3, "session/prompt", {"sessionId": sid,
                                      "prompt": [{"type": "text", "text": "hi"}]})
    first = 0
    while True:
        line, stamp = lines.next_line()
        if not first and b'"agent_message_chunk"' in line:
            first = stamp
        if b'"id":3' in line and b'"stopReason"' in line:
            break
    stdin.close()
    out["first"] = first
    out["prompt_to_chunk"] = (first - sent) / 1e6
    return out


def _acp_once(ws: Path, env: dict[str, str], server: _Server) -> dict[str, float]:
    """``nyz acp``: memory before and after a session; request -> first chunk; prompt ->
    first chunk."""
    with _nyz(["acp"], ws, env, subprocess.PIPE) as proc:
        out = _acp_session(proc, ws)
    out["request_to_token"] = _since_arrival(out.pop("first"), server, "agent_message_chunk")
    return out


# ---- the figures ----------------------------------------------------------------------------

def measure(pairs: int, realtime: bool = True) -> dict[str, Any]:
    prioritised = realtime and _fixture_priority()
    try:
        result = _measure(pairs, prioritised)
    finally:
        _ordinary_priority()  # the benchmarks after this one run as before
    result["fixture_priority"] = "realtime" if prioritised else "ordinary"
    return result


def _measure(pairs: int, realtime: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        ws, env = _setup(tmp)
        server = _Server(env, realtime)
        try:
            _config(env, server.url)
            base: list[dict[str, float]] = []
            ours: list[dict[str, float]] = []
            for n in range(WARMUP_PAIRS + pairs):
                if n % 2:  # ABBA: the order flips every pair
                    run = _run_once(ws, env, server)
                    acp = _acp_once(ws, env, server)
                else:
                    acp = _acp_once(ws, env, server)
                    run = _run_once(ws, env, server)
                if n >= WARMUP_PAIRS:
                    base.append(run)
                    ours.append(acp)
        finally:
            server.close()
    return figures(base, ours)


def _median_ci95(values: list[float]) -> tuple[float, float]:
    """A distribution-free 95% confidence interval for the median: the order statistics
    whose ranks the binomial (normal-approximated) puts 1.96 sigma either side of the middle.
    Whether the target is met is read from its upper end, not from one run's median."""
    ordered = sorted(values)
    n = len(ordered)
    spread = 1.96 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - spread) - 1)
    high = min(n - 1, math.ceil(n / 2 + spread))
    return ordered[low], ordered[high]


def figures(base: list[dict[str, float]], ours: list[dict[str, float]]) -> dict[str, Any]:
    ratios = [a["request_to_token"] / r["request_to_token"] for a, r in zip(ours, base, strict=True)]
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    low, high = _median_ci95(ratios)

    def med(side: list[dict[str, float]], key: str) -> float:
        return statistics.median(o[key] for o in side)

    initialized = med(ours, "rss_initialized_kib")
    session = med(ours, "rss_session_kib")
    return {
        "pairs": len(ratios),
        "run_request_to_first_token_ms": round(med(base, "request_to_token"), 2),
        "acp_request_to_first_chunk_ms": round(med(ours, "request_to_token"), 2),
        "first_token_ratio": round(median, 2),  # the median of the per-pair ratios
        "first_token_ratio_iqr": [round(q1, 2), round(q3, 2)],
        "first_token_ratio_median_ci95": [round(low, 2), round(high, 2)],
        "first_token_target_ratio": TARGET_RATIO,
        "acp_prompt_to_first_chunk_ms": round(med(ours, "prompt_to_chunk"), 2),
        "acp_rss_initialized_mib": round(initialized / 1024, 1),
        "acp_rss_one_idle_session_mib": round(session / 1024, 1),
        "acp_idle_session_cost_mib": round((session - initialized) / 1024, 1),
    }


def main(argv: list[str]) -> None:
    pairs = QUICK_PAIRS if "--quick" in argv else PAIRS
    for arg in argv:
        if arg.startswith("--pairs="):
            pairs = max(2, int(arg.split("=", 1)[1]))
    result = measure(pairs, realtime="--ordinary" not in argv)
    if "--json" in argv:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"  {key}: {value}")
