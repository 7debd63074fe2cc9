"""The web console's event fan-out: events/s to 1, 10 and 50 viewers, the event loop's longest
stall meanwhile, and resident memory per viewer.

    python -m benchmarks web [--json] [--quick]

In this process: a real runtime (its provider never called) and the real ``nyz serve``
server (``nyzhi.web.server``) on a loopback port; in another process, N real
``trio-websocket`` clients attached to its session. ``EVENTS`` text deltas are published on the runtime's bus (redacted there, as
every event is), numbered and fanned out by the session's pump, sent by each viewer's own
task, and read and parsed by every client; a run ends when every client has the last one.
A monitor task sleeping 1 ms records how late each wake-up of the server's loop is (wall
time: it includes the time the OS gave the cores to other processes). A trio instrument
meanwhile times each pass of the scheduler (every task step between two waits for I/O) in
this thread's CPU time: the longest is how long the server's own work held the loop, with the
OS's preemption taken out. Memory is the server's VmRSS after the clients attach, minus
before, over N.

Baselines, in the same run: the monitor alone on an idle loop (the machine's own noise; the
table shows each stall also as the excess over it), and one viewer for events/s. Target
(issue 35): longest stall <= 20 ms at 50 viewers. Nothing here is asserted in tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from benchmarks.stall_bench import Monitor

TARGET_MS = 20.0
ROOT = Path(__file__).resolve().parent.parent
CONFIG = """[provider]
default = "bench"

[provider.bench]
api_style = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "bench-model"
api_key = "sk-bench-key"
"""


class LoopWork(trio.abc.Instrument):
    """The longest scheduler pass (the task steps run between two I/O waits), in CPU time."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.started: float | None = None

    def after_io_wait(self, timeout: float) -> None:
        self.started = time.thread_time()

    def before_io_wait(self, timeout: float) -> None:
        if self.started is not None:
            self.worst = max(self.worst, time.thread_time() - self.started)


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def fan_out(rt, viewers: int, events: int) -> dict[str, float]:
    from nyzhi.core import events as ev
    from nyzhi.web.server import Hub, ServeOptions, Server
    from nyzhi.web.session import WebSession

    options = ServeOptions(port=0, token="bench", send_queue=events + 16, max_connections=64)
    async with trio.open_nursery() as nursery:
        hub = Hub(nursery, None, options)
        session_nursery_done = trio.Event()

        async def run_session(task_status=trio.TASK_STATUS_IGNORED):
            async with rt.subscribe() as channel, trio.open_nursery() as inner:
                session = WebSession(rt, inner)
                hub.sessions[rt.session_id] = hub.first = session
                inner.start_soon(session.pump, channel)
                task_status.started(session)
                await session_nursery_done.wait()
                inner.cancel_scope.cancel()

        session = await nursery.start(run_session)
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        server = Server(options, hub)
        server.port = listeners[0].socket.getsockname()[1]
        nursery.start_soon(trio.serve_listeners, server.handle, listeners)
        url = f"ws://127.0.0.1:{server.port}/ws?token=bench"
        start_seq = session.seq
        before = rss_kib()
        clients = await trio.lowlevel.open_process(
            [sys.executable, "-m", "benchmarks.web_bench", "--clients", url, str(viewers),
             str(start_seq), str(start_seq + events)],
            cwd=ROOT, stdout=subprocess.PIPE)
        assert await _line(clients.stdout) == b"attached"
        memory = (rss_kib() - before) / viewers
        monitor = Monitor()
        work = LoopWork()
        async with trio.open_nursery() as watch:
            await watch.start(monitor.run)
            trio.lowlevel.add_instrument(work)
            t0 = time.perf_counter()
            for n in range(events):
                await rt.bus.publish(ev.TextDelta(f"token {n} "))
                if n % 64 == 0:
                    await trio.lowlevel.checkpoint()
            assert await _line(clients.stdout) == b"done"
            elapsed = time.perf_counter() - t0
            trio.lowlevel.remove_instrument(work)
            watch.cancel_scope.cancel()
        await clients.wait()
        session_nursery_done.set()
        nursery.cancel_scope.cancel()
    return {"viewers": viewers, "events_per_s": events / elapsed,
            "deliveries_per_s": events * viewers / elapsed,
            "longest_stall_ms": monitor.worst * 1000, "loop_cpu_ms": work.worst * 1000,
            "rss_kib_per_viewer": memory}


async def _line(stream) -> bytes:
    out = b""
    while not out.endswith(b"\n"):
        chunk = await stream.receive_some(1)
        if not chunk:
            raise RuntimeError(f"the clients' process ended: {out!r}")
        out += chunk
    return out.strip()


async def run_clients(url: str, viewers: int, since: int, last: int) -> None:
    """The other process: ``viewers`` clients attached from ``since``; prints ``attached``
    once all are, ``done`` once all have event ``last``."""
    from trio_websocket import open_websocket_url

    attached = trio.Semaphore(0)
    remaining = [viewers]
    finished = trio.Event()

    async def client() -> None:
        async with open_websocket_url(url, message_queue_size=64) as ws:
            await ws.send_message(json.dumps({"type": "hello", "protocol": 1, "since": since}))
            await ws.get_message()  # welcome
            await ws.get_message()  # state
            attached.release()
            while json.loads(await ws.get_message()).get("seq") != last:
                pass
        remaining[0] -= 1
        if not remaining[0]:
            finished.set()

    async with trio.open_nursery() as nursery:
        for _ in range(viewers):
            nursery.start_soon(client)
        for _ in range(viewers):
            await attached.acquire()
        print("attached", flush=True)
        await finished.wait()
        print("done", flush=True)


async def scenario(quick: bool) -> list[dict[str, float]]:
    from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime

    with tempfile.TemporaryDirectory() as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        (ws / ".nyzhi").mkdir(parents=True)
        home.mkdir()
        (ws / ".nyzhi" / "config.toml").write_text(CONFIG)
        os.environ["HOME"] = str(home)
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            os.environ.pop(var, None)
        events = 500 if quick else 2000
        monitor = Monitor()  # the machine's own noise: the monitor alone, for a second
        async with trio.open_nursery() as watch:
            await watch.start(monitor.run)
            await trio.sleep(1.0)
            watch.cancel_scope.cancel()
        rows = [{"viewers": 0, "events_per_s": 0.0, "deliveries_per_s": 0.0,
                 "longest_stall_ms": monitor.worst * 1000, "loop_cpu_ms": 0.0,
                 "rss_kib_per_viewer": 0.0}]
        async with open_runtime(RuntimeOptions(cwd=ws, ephemeral=True)) as rt:
            for viewers in (1, 10, 50):
                rows.append(await fan_out(rt, viewers, events))
        return rows


def main(argv: list[str]) -> None:
    with contextlib.suppress(Exception):
        import logging

        logging.disable(logging.WARNING)
    rows = trio.run(scenario, "--quick" in argv)
    if "--json" in argv:
        print(json.dumps(rows))
        return
    idle = rows[0]["longest_stall_ms"]
    print(f"idle loop (no server work): longest stall {idle:.1f} ms")
    rows = rows[1:]
    base = rows[0]["events_per_s"]
    print(f"{'viewers':>8} {'events/s':>10} {'vs 1':>6} {'deliveries/s':>13} "
          f"{'stall ms':>9} {'- idle':>7} {'loop CPU ms':>12} {'RSS KiB/viewer':>15}")
    for row in rows:
        print(f"{row['viewers']:>8} {row['events_per_s']:>10.0f} "
              f"{row['events_per_s'] / base:>6.2f} {row['deliveries_per_s']:>13.0f} "
              f"{row['longest_stall_ms']:>9.1f} {row['longest_stall_ms'] - idle:>7.1f} "
              f"{row['loop_cpu_ms']:>12.1f} {row['rss_kib_per_viewer']:>15.0f}")
    worst = rows[-1]
    verdict = "" if worst["longest_stall_ms"] <= TARGET_MS else "  ABOVE TARGET"
    print(f"longest stall at 50 viewers: {worst['longest_stall_ms']:.1f} ms, "
          f"{worst['longest_stall_ms'] - idle:+.1f} ms over the idle loop's {idle:.1f} ms, "
          f"{worst['loop_cpu_ms']:.1f} ms of it the server's own work "
          f"(target <= {TARGET_MS:g} ms){verdict}", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--clients"]:
        url, viewers, since, last = sys.argv[2:6]
        trio.run(run_clients, url, int(viewers), int(since), int(last))
    else:
        main(sys.argv[1:])
