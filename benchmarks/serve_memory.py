"""``nyz serve``'s memory with 50 viewers over a few minutes: kept history, or a leak?

    python -m benchmarks.serve_memory [--json] [--seconds=S] [--viewers=N]   (default 180, 50)

Not one of ``make bench``'s modules (it takes minutes). In this process: a real runtime whose
provider is the fake LLM (loopback HTTP), taking a turn of 2,000 characters (500 text deltas) every
2 s or so, and the real ``nyz serve`` server (``nyzhi.web.server``) with its
``WebSession`` on a loopback port; in another process, N real ``trio-websocket`` viewers
attached to the session, reading every event until the end.

Twice, for S seconds each after 5 warm-up turns: first with a small history bound (256 KB),
then with the default (``DEFAULT_KEEP`` events, ``DEFAULT_KEEP_BYTES``), each with its own
runtime and session in the same process. Figures per phase: VmRSS after the
viewers attach and at the end, turns, events, and the bytes of history kept. If the growth is
the history, the small bound's RSS levels off while the default's grows by about what its
history holds; a leak grows in both alike (issue 55: 43.5 -> 55.9 MB over 300 s).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import trio

from benchmarks.web_bench import ROOT, _line, rss_kib

TURN_TEXT = "word " * 400
SMALL_BYTES = 256 * 1024
WARM_UP_TURNS = 5
# issue 55's run: 98 turns in 300 s. Unpaced, 50 viewers in one client process fall behind
# the send queue and are dropped (the slow-viewer rule), and the figure is of 0 viewers.
TURN_EVERY_S = 2.0


async def phase(rt, llm, viewers: int, seconds: float, keep_bytes: int | None) -> dict[str, float]:
    from nyzhi.web.server import Hub, ServeOptions, Server
    from nyzhi.web.session import DEFAULT_KEEP_BYTES, WebSession

    keep_bytes = keep_bytes or DEFAULT_KEEP_BYTES
    options = ServeOptions(port=0, token="bench", max_connections=viewers + 8)
    async with trio.open_nursery() as nursery:
        hub = Hub(nursery, None, options)
        stop = trio.Event()

        async def run_session(task_status=trio.TASK_STATUS_IGNORED):
            async with rt.subscribe() as channel, trio.open_nursery() as inner:
                session = WebSession(rt, inner, keep_bytes=keep_bytes)
                hub.sessions[rt.session_id] = hub.first = session
                inner.start_soon(session.pump, channel)
                task_status.started(session)
                await stop.wait()
                inner.cancel_scope.cancel()

        session = await nursery.start(run_session)
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        server = Server(options, hub)
        server.port = listeners[0].socket.getsockname()[1]
        nursery.start_soon(trio.serve_listeners, server.handle, listeners)
        url = f"ws://127.0.0.1:{server.port}/ws?token=bench"
        clients = await trio.lowlevel.open_process(
            [sys.executable, "-m", "benchmarks.serve_memory", "--clients", url, str(viewers),
             str(session.seq)], cwd=ROOT, stdout=subprocess.PIPE, stdin=subprocess.PIPE)
        assert await _line(clients.stdout) == b"attached"
        for n in range(WARM_UP_TURNS):  # first turns load code and fill caches: not growth
            await (await rt.submit(f"warm-up {n}")).wait()
            llm.requests.clear()
        gc.collect()
        before = rss_kib()
        turns, samples = 0, []
        with trio.move_on_after(seconds):
            while True:
                handle = await rt.submit(f"turn {turns}")
                await handle.wait()
                # the fake LLM (in this process) keeps every request, each the whole
                # conversation so far: quadratic growth that is the bench's, not nyz's
                llm.requests.clear()
                turns += 1
                await trio.sleep(TURN_EVERY_S)  # the pace of a user's turns, not a wait
                if turns % 5 == 0:
                    samples.append(rss_kib())
        gc.collect()
        after = rss_kib()
        kept = {"events": len(session.log), "bytes": session.log_bytes,
                "viewers": len(session.viewers)}
        events = session.seq
        await clients.stdin.aclose()
        await clients.wait()
        stop.set()
        nursery.cancel_scope.cancel()
    return {"bound_bytes": keep_bytes, "seconds": seconds, "viewers": viewers, "turns": turns,
            "events": events, "rss_before_mb": before / 1024, "rss_after_mb": after / 1024,
            "growth_mb": (after - before) / 1024, "history_events": kept["events"],
            "history_mb": kept["bytes"] / 2**20, "viewers_at_end": kept["viewers"],
            "rss_samples_mb": [round(s / 1024, 1) for s in samples]}


async def run_clients(url: str, viewers: int, since: int) -> None:
    """The other process: ``viewers`` clients attached from ``since``, reading every event;
    prints ``attached`` once all are, and ends when its stdin does."""
    from trio_websocket import ConnectionClosed, open_websocket_url

    attached = trio.Semaphore(0)

    async def client() -> None:
        async with open_websocket_url(url, message_queue_size=64) as ws:
            await ws.send_message(json.dumps({"type": "hello", "protocol": 1, "since": since}))
            await ws.get_message()  # welcome
            await ws.get_message()  # state
            attached.release()
            try:
                while True:
                    await ws.get_message()
            except ConnectionClosed:
                return

    async with trio.open_nursery() as nursery:
        for _ in range(viewers):
            nursery.start_soon(client)
        for _ in range(viewers):
            await attached.acquire()
        print("attached", flush=True)
        await trio.wrap_file(sys.stdin).read()
        nursery.cancel_scope.cancel()


async def scenario(seconds: float, viewers: int) -> list[dict[str, float]]:
    from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
    from nyzhi.testing.fake_llm import open_fake_llm, reply

    with tempfile.TemporaryDirectory() as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        (ws / ".nyzhi").mkdir(parents=True)
        home.mkdir()
        os.environ["HOME"] = str(home)
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            os.environ.pop(var, None)
        async with open_fake_llm(script=lambda _request: reply(TURN_TEXT)) as server:
            (home / ".config" / "nyzhi").mkdir(parents=True)
            (home / ".config" / "nyzhi" / "config.toml").write_text(
                f'[provider]\ndefault = "fake"\n[provider.fake]\napi_style = "openai"\n'
                f'base_url = "{server.url_for("openai")}"\nmodel = "fake-model-1"\n'
                f'api_key = "sk-test"\ncontext_window = 128000\n')
            rows = []
            for bound in (SMALL_BYTES, None):  # small first: any warm-up left counts against it
                async with open_runtime(RuntimeOptions(cwd=ws, ephemeral=True)) as rt:
                    rows.append(await phase(rt, server, viewers, seconds, bound))
            return rows


def main(argv: list[str]) -> None:
    if argv[:1] == ["--clients"]:
        trio.run(run_clients, argv[1], int(argv[2]), int(argv[3]))
        return
    seconds, viewers = 180.0, 50
    for arg in argv:
        if arg.startswith("--seconds="):
            seconds = float(arg.split("=", 1)[1])
        if arg.startswith("--viewers="):
            viewers = int(arg.split("=", 1)[1])
    rows = trio.run(scenario, seconds, viewers)
    if "--json" in argv:
        print(json.dumps(rows))
        return
    print(f"nyz serve memory, {viewers} viewers, {seconds:.0f} s per bound")
    for r in rows:
        print(f"  bound {r['bound_bytes'] / 2**20:6.2f} MB: {r['turns']} turns, {r['events']} "
              f"events; RSS {r['rss_before_mb']:.1f} -> {r['rss_after_mb']:.1f} MB "
              f"(+{r['growth_mb']:.1f}); history kept {r['history_mb']:.2f} MB "
              f"({r['history_events']} events); {r['viewers_at_end']} viewers left; samples {r['rss_samples_mb']}")


if __name__ == "__main__":
    main(sys.argv[1:])
