"""SSE/NDJSON parsing throughput per wire format, against a bare split + json.loads baseline.

    python -m benchmarks provider [--json] [--quick]
    python -m benchmarks.provider_bench [--json] [--quick] [--events N]

For each wire format a recorded stream of ~10,000 events (a long text answer rendered by the
fake LLM server's renderer, plus the format's own start/usage/stop frames) is built once. Then:

  adapter   the real path: ``SSEParser``/``LineParser`` fed 4 KiB chunks (as from a socket)
            and the adapter's decoder producing typed stream events;
  baseline  ``raw.split(b"\\n\\n")`` (NDJSON: ``split(b"\\n")``), strip ``data:``, ``json.loads``;
  loopback  (not with --quick) the whole provider over HTTP against the fake server, for scale.

Figures are events per second (best of several repeats, adapter and baseline alternating, in
CPU time of this process so other load on the machine does not land on one side only) and the
adapter/baseline time ratio. Target (issue 14): every wire format <= 1.3x. Nothing here is
asserted in tests.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
import time
from collections.abc import Callable

from nyzhi.provider.build import adapter_for
from nyzhi.provider.framing import LineParser, SSEParser
from nyzhi.testing.fake_llm import Reply, reply
from nyzhi.testing.fake_llm_wire import RENDERERS, WIRE_STYLES

CHUNK = 4096
TARGET_RATIO = 1.3


def recorded_stream(style: str, events: int) -> tuple[bytes, int, Reply]:
    rep = reply("abcdefg " * events, chunk_size=8, thinking="")
    frames = RENDERERS[style](rep, "bench-model", {"stream_options": {"include_usage": True}})
    return b"".join(frames), len(frames), rep


def run_adapter(style: str, raw: bytes) -> int:
    adapter = adapter_for(style)
    parser = SSEParser() if adapter.framing == "sse" else LineParser()
    decoder = adapter.decoder()
    produced = 0
    for i in range(0, len(raw), CHUNK):
        for name, data in parser.feed(raw[i : i + CHUNK]):
            produced += len(decoder.feed(name, data))
    for name, data in parser.close():
        produced += len(decoder.feed(name, data))
    produced += len(decoder.finish())
    return produced


def run_baseline(style: str, raw: bytes) -> int:
    loads = json.loads
    n = 0
    if style == "ollama":
        for line in raw.split(b"\n"):
            if line:
                loads(line)
                n += 1
        return n
    for block in raw.split(b"\n\n"):
        for line in block.split(b"\n"):
            if line.startswith(b"data:"):
                payload = line[5:].strip()
                if payload != b"[DONE]":
                    loads(payload)
                    n += 1
    return n


def best_pair(first: Callable[[], object], second: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Best CPU time of each, running them alternately."""
    best = [float("inf"), float("inf")]
    for _ in range(repeats):
        for i, fn in enumerate((first, second)):
            gc.collect()
            t0 = time.process_time()
            fn()
            best[i] = min(best[i], time.process_time() - t0)
    return best[0], best[1]


def loopback_rate(style: str, rep: Reply, frames: int) -> float:
    import trio

    from nyzhi.provider import ProviderSpec, build_provider
    from nyzhi.provider.types import ChatRequest, Message
    from nyzhi.testing.fake_llm import open_fake_llm

    async def main() -> float:
        async with open_fake_llm(None, script=[rep]) as server:
            spec = ProviderSpec(name="bench", api_style=style, base_url=server.url_for(style), model="m")
            async with build_provider(spec) as provider:
                request = ChatRequest(messages=(Message("user", "go"),))
                t0 = time.perf_counter()
                async with contextlib.aclosing(provider.stream(request)) as stream:
                    async for _ in stream:
                        pass
                return frames / (time.perf_counter() - t0)

    return trio.run(main)


def main(argv: list[str]) -> None:
    as_json = "--json" in argv
    quick = "--quick" in argv
    events = 10_000
    if "--events" in argv:
        events = int(argv[argv.index("--events") + 1])
    repeats = 5 if quick else 15
    results = []
    for style in WIRE_STYLES:
        raw, frames, rep = recorded_stream(style, events)
        assert run_adapter(style, raw) >= events  # sanity: every text frame became an event
        t_adapter, t_base = best_pair(
            lambda s=style, r=raw: run_adapter(s, r), lambda s=style, r=raw: run_baseline(s, r), repeats
        )
        row = {
            "wire": style,
            "events": frames,
            "bytes": len(raw),
            "adapter_events_per_s": round(frames / t_adapter),
            "baseline_events_per_s": round(frames / t_base),
            "ratio_adapter_over_baseline_time": round(t_adapter / t_base, 2),
        }
        if not quick:
            row["loopback_events_per_s"] = round(loopback_rate(style, rep, frames))
        results.append(row)
    worst = max(r["ratio_adapter_over_baseline_time"] for r in results)
    if as_json:
        print(json.dumps({"benchmark": "provider_parsing", "results": results,
                          "target_ratio": TARGET_RATIO, "within_target": worst <= TARGET_RATIO},
                         indent=2))
        return
    print(f"SSE/NDJSON parsing, {events:,}-event recorded stream per wire format (best of {repeats})")
    head = f"{'wire':<18}{'events':>8}{'adapter ev/s':>15}{'baseline ev/s':>15}{'time ratio':>12}"
    if not quick:
        head += f"{'loopback ev/s':>15}"
    print(head)
    for r in results:
        line = (f"{r['wire']:<18}{r['events']:>8}{r['adapter_events_per_s']:>15,}"
                f"{r['baseline_events_per_s']:>15,}{r['ratio_adapter_over_baseline_time']:>11}x")
        if not quick:
            line += f"{r['loopback_events_per_s']:>15,}"
        print(line)
    print(f"worst time ratio {worst}x (target <= {TARGET_RATIO}x: "
          f"{'ok' if worst <= TARGET_RATIO else 'OVER'})")


if __name__ == "__main__":
    main(sys.argv[1:])
