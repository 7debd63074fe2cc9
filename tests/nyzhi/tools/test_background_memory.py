"""A chatty background process costs bounded memory and never stalls the trio loop: the real
``bash`` tool with run_in_background, a real process under the real sandbox, its output pumped
through the ring and the redacted log."""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path

import trio
from _toolctx import make_ctx

from nyzhi.tools.background import Ring, ShellTable, strip_control
from nyzhi.tools.builtin.bash import BashTool
from nyzhi.tools.builtin.shells import BashOutputTool
from nyzhi.tools.sandbox import SandboxPolicy

MIB = 1 << 20
TOTAL = 200_000_000  # characters the process prints


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def context(tmp_path: Path, table: ShellTable, nursery: trio.Nursery):
    ctx = make_ctx(tmp_path, sandbox=SandboxPolicy(level="workspace-write",
                                                   workspace_root=tmp_path))
    ctx.shells = table
    # the host the core's executor actor would be (nyzhi.core.loop.background.host)
    table.hosts[ctx.agent_path] = lambda shell, run: nursery.start_soon(run)
    return ctx


def log_size(path: str) -> int:
    return Path(path).stat().st_size


class Monitor:
    """Sleeps 1 ms in a loop until stopped: the latest wake-up (the loop's longest stall)
    and the highest resident set size seen."""

    def __init__(self) -> None:
        self.lates: list[float] = []
        self.peak = 0
        self.done = trio.Event()

    async def run(self) -> None:
        while not self.done.is_set():
            t0 = time.perf_counter()
            await trio.sleep(0.001)
            self.lates.append(time.perf_counter() - t0 - 0.001)
            self.peak = max(self.peak, rss())

    @property
    def p99(self) -> float:
        lates = sorted(self.lates)
        return lates[int(len(lates) * 0.99)] if lates else 0.0


CHATTY = f"yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ | head -c {TOTAL}"


async def baseline_stall() -> float:
    """The 99th percentile stall while the same output goes to /dev/null in a plain subprocess: what
    this (shared, loaded) machine costs the loop anyway."""
    monitor = Monitor()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(monitor.run)
        await trio.run_process(f"{CHATTY} > /dev/null", shell=True)
        monitor.done.set()
    return monitor.p99


async def test_200_mb_of_output_keeps_memory_bounded_and_the_loop_responsive(tmp_path, home):
    table = ShellTable()
    monitor = Monitor()
    deltas: list[tuple[int, int]] = []  # (characters sent, skipped) of each output delta

    async def listener(kind, shell, **detail) -> None:
        if kind == "output":
            deltas.append((len(detail["text"]), detail["skipped"]))

    table.listener, table.follows_output = listener, True
    async with trio.open_nursery() as nursery:
        ctx = context(tmp_path, table, nursery)
        tool = BashTool()
        # warm up: the first start loads modules and worker threads
        await tool.run({"command": "echo warm", "run_in_background": True, "yield_ms": 0}, ctx)
        await table.shells["bg_1"].exited.wait()
        gc.freeze()  # as nyz does once it has started (nyzhi.core.runtime.runtime)
        base = rss()
        nursery.start_soon(monitor.run)
        result = await tool.run({"command": f"{CHATTY}; echo; echo finished",
                                 "run_in_background": True, "yield_ms": 0}, ctx)
        shell = table.shells[result.metadata["shell_id"]]
        with trio.fail_after(300):
            await shell.exited.wait()
        monitor.done.set()
    gc.unfreeze()
    assert shell.exit_code == 0
    growth = monitor.peak - base
    assert growth < 8 * MIB, f"memory grew by {growth / MIB:.1f} MiB"
    # The target is a longest stall of 5 ms (benchmarks/background_bench.py measures it). A
    # test on a shared, loaded machine compares the 99th percentile with what the machine
    # itself costs the loop, and fails on what the pump would add if it did its work on the
    # loop (a stall per chunk, thousands of them).
    # the front ends' view of it: a bounded rate of small deltas, never the stream itself
    sent = sum(n for n, _ in deltas)
    assert deltas and max(n for n, _ in deltas) <= 4096 and sent < TOTAL / 100
    assert sum(skipped for _, skipped in deltas) > TOTAL / 2
    floor = await baseline_stall()
    assert monitor.p99 <= floor + 0.010, (
        f"p99 stall {monitor.p99 * 1000:.1f} ms (the machine alone: {floor * 1000:.1f})")
    # all of it is on disk; the ring kept only its last MiB, and says what it dropped
    assert log_size(result.metadata["log_path"]) == TOTAL + len("\nfinished\n")
    out = (await BashOutputTool().run({"id": shell.id}, ctx)).output
    assert "characters dropped from the buffer" in out and "\nfinished\n" in out
    assert len(out) < 1.2 * MIB


def test_ring_keeps_the_last_bytes_and_counts_what_a_reader_lost():
    ring = Ring(2048)
    ring.add("a" * 1500)
    text, lost = ring.since(0)
    assert (len(text), lost) == (1500, 0)
    ring.add("b" * 1500)
    text, lost = ring.since(1500)
    assert text == "b" * 1500 and lost == 0
    text, lost = ring.since(0)
    assert lost == 952 and text == "a" * 548 + "b" * 1500
    ring.add("c" * 5000)  # one chunk larger than the ring: its tail
    assert ring.since(0) == ("c" * 2048, 8000 - 2048) and ring.end == 8000


def test_terminal_sequences_are_stripped_and_redrawn_lines_keep_their_last_form():
    raw = "\x1b[?2004h>>> 6*7\r\n42\r\n\x1b[31mred\x1b[0m\x1b]0;title\x07 done\r\n50%\r100%\n"
    assert strip_control(raw) == ">>> 6*7\n42\nred done\n100%\n"


async def test_approval_is_asked_once_when_the_process_starts(tmp_path, home):
    from nyzhi.tools.execution import ToolCallRequest, execute_calls
    from nyzhi.tools.gates import ApprovalDecision, Gates, TrustPolicy
    from nyzhi.tools.registry import default_registry

    asked: list[str] = []

    async def approver(request):
        asked.append(request.tool_name)
        return ApprovalDecision.approve()

    gates = Gates(trust=TrustPolicy(mode="off"), approver=approver)
    registry = default_registry()
    table = ShellTable()
    async with trio.open_nursery() as nursery:
        ctx = context(tmp_path, table, nursery)
        ctx.registry = registry

        async def call(name: str, **args) -> str:
            [out] = await execute_calls([ToolCallRequest(f"c{len(asked)}", name, args)],
                                        registry=registry, gates=gates, ctx=ctx)
            return out.result.output

        started = await call("bash", command="cat", run_in_background=True, yield_ms=0)
        echoed = await call("write_stdin", id="bg_1", text="ping\n", yield_ms=5000)
        await call("bash_output", id="bg_1")
        await call("list_shells")
        killed = await call("kill_shell", id="bg_1")
    assert asked == ["bash"]  # the start, once; nothing after it asks again
    assert started.startswith("started bg_1") and "ping" in echoed and "killed" in killed
