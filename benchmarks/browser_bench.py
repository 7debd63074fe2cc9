"""The browser tools: a call's round trip over CDP against the same page fetched with httpx, and
the browser's start-up, cold and warm.

    python -m benchmarks browser [--json] [--quick]

One small HTML page is served on loopback. Baseline, in the same run: ``web_fetch`` of that
page (httpx, HTML to text; a new client per call, as the tool makes), median of ROUNDS calls,
and for scale a bare ``httpx`` GET on one reused client. Against it, medians of ROUNDS calls of
``browser_open`` (navigate, wait for load, read the text: a full tool call over CDP) and of
``browser_evaluate`` (one ``Runtime.evaluate`` round trip, no navigation), on a browser that is
already running. Start-up is the first browser call of a fresh pool: Chromium launched with a
new profile, DevTools connected, a tab opened and the page loaded. *Cold* is the first launch in
this process (Chromium's files may still have to come from disk); *warm* is the median of the
following launches (each a new process and profile, the files now in the page cache). Nothing
here is asserted in tests. The page is on loopback, which both tools refuse unless the user's
own config allows it: the bench allows ``127.0.0.1`` as ``[network] allow_hosts`` would, so
every request still goes through the check (``nyzhi.tools.netguard``; the browser's guard,
``nyzhi.tools.browser_guard``). Needs Chromium (``apt install chromium``); without it the module says
so and measures nothing.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

from benchmarks._figures import printed_as_json

ROUNDS = 30
LAUNCHES = 4
PAGE = (b"<!doctype html><html><head><title>Bench</title></head><body><h1>Benchmark page</h1>"
        + b"<p>Some text to read back.</p>" * 50 + b"</body></html>")


async def _median_ms(rounds: int, call) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        res = await call()
        times.append((time.perf_counter() - start) * 1000)
        assert not res.is_error, res.output
    return statistics.median(times)


async def measure(rounds: int, launches: int) -> dict[str, float]:
    import httpx

    import actors
    from nyzhi.core.runtime.assembly import services_supervisor
    from nyzhi.core.runtime.browser import BrowserPool, BrowserSettings
    from nyzhi.testing.loopback_http import serve_pages
    from nyzhi.tools.base import ToolContext, ToolResult
    from nyzhi.tools.builtin.browser import BrowserEvaluateTool, BrowserOpenTool
    from nyzhi.tools.builtin.web import WebFetchTool
    from nyzhi.tools.netguard import NetPolicy

    allow = NetPolicy.from_hosts(["127.0.0.1"])

    with tempfile.TemporaryDirectory(prefix="nyzb", dir="/tmp") as root:
        ws = Path(root)
        async with trio.open_nursery() as nursery, actors.open_system(name="bench") as system:
            page = ("text/html; charset=utf-8", PAGE)
            url = await serve_pages(nursery, {"/": page}) + "/"

            def pool() -> BrowserPool:
                return BrowserPool(lambda: services_supervisor(system),
                                   BrowserSettings(env=dict(os.environ), net=allow))

            plain = ToolContext(workspace_root=ws, cwd=ws, net=allow)
            # what the SSRF check adds to each request (and each redirect): its own cost
            check_rounds = rounds * 20
            start = time.perf_counter()
            for _ in range(check_rounds):
                await allow.check_url(url)
            check_us = (time.perf_counter() - start) / check_rounds * 1e6
            fetch = await _median_ms(rounds, lambda: WebFetchTool().run({"url": url}, plain))
            async with httpx.AsyncClient() as client:
                async def get() -> ToolResult:
                    resp = await client.get(url)
                    return ToolResult(resp.text, is_error=resp.status_code != 200)

                raw = await _median_ms(rounds, get)

            starts = []
            for _ in range(launches):
                fresh = pool()
                ctx = ToolContext(workspace_root=ws, cwd=ws, browser=fresh, net=allow)
                start = time.perf_counter()
                res = await BrowserOpenTool().run({"url": url}, ctx)
                starts.append((time.perf_counter() - start) * 1000)
                assert not res.is_error, res.output
                if len(starts) < launches:
                    await fresh.aclose()
            opened = await _median_ms(rounds, lambda: BrowserOpenTool().run({"url": url}, ctx))
            evaluated = await _median_ms(
                rounds, lambda: BrowserEvaluateTool().run({"script": "document.title"}, ctx))
            await fresh.aclose()
            nursery.cancel_scope.cancel()
    warm = statistics.median(starts[1:]) if len(starts) > 1 else starts[0]
    return {"check_url_us": round(check_us, 1), "web_fetch_ms": round(fetch, 2), "httpx_get_ms": round(raw, 2), "browser_open_ms": round(opened, 2),
            "browser_evaluate_ms": round(evaluated, 2), "start_cold_ms": round(starts[0], 1),
            "start_warm_ms": round(warm, 1),
            "open_vs_fetch": round(opened / fetch, 1), "evaluate_vs_fetch":
            round(evaluated / fetch, 2), "cold_vs_fetch": round(starts[0] / fetch, 0),
            "warm_vs_fetch": round(warm / fetch, 0)}


def main(argv: list[str]) -> None:
    from nyzhi.tools.cdp import BrowserUnavailable, find_browser

    try:
        find_browser(None)
    except BrowserUnavailable as exc:
        print(f"  skipped: {exc}")
        return
    quick = "--quick" in argv
    figures = trio.run(measure, 5 if quick else ROUNDS, 2 if quick else LAUNCHES)
    if printed_as_json(argv, figures):
        return
    f = figures
    print(f"  web_fetch (httpx) of a loopback page   {f['web_fetch_ms']:8.2f} ms  (baseline)")
    print(f"  httpx GET alone, one shared client     {f['httpx_get_ms']:8.2f} ms")
    print(f"  netguard check of the URL (each hop)   {f['check_url_us'] / 1000:8.3f} ms")
    print(f"  browser_open of the same page (CDP)    {f['browser_open_ms']:8.2f} ms  "
          f"({f['open_vs_fetch']}x)")
    print(f"  browser_evaluate, one CDP round trip   {f['browser_evaluate_ms']:8.2f} ms  "
          f"({f['evaluate_vs_fetch']}x)")
    print(f"  browser start-up + first open, cold    {f['start_cold_ms']:8.1f} ms  "
          f"({f['cold_vs_fetch']:.0f}x)")
    print(f"  browser start-up + first open, warm    {f['start_warm_ms']:8.1f} ms  "
          f"({f['warm_vs_fetch']:.0f}x)")


if __name__ == "__main__":
    main(sys.argv[1:])
