"""Background shells (issue 51): what a background process costs nyz.

    python -m benchmarks background [--json] [--quick]

Every figure goes through the real tools (``bash`` with run_in_background, ``bash_output``)
with real processes under the real workspace-write sandbox; the process host is a plain
nursery, as the core's executor actor gives one (``nyzhi.core.loop.background.host``).

  start → first output   ``echo ready`` started in the background until its line is in the
                         ring, against a plain ``subprocess.Popen`` of the same ``bash -c``
                         reading its first line (no sandbox), and against our start under
                         full-access (the sandbox's own share);
  bash_output round trip one call on a running shell with new output, median;
  longest stall          the trio loop's latest 1 ms wake-up while 8 processes each print
                         20 MB (``yes``), against the same 8 printing to /dev/null as plain
                         subprocesses (what the machine alone costs the loop); target 5 ms;
  memory per process     nyz's resident memory per idle background process (32 of
                         ``sleep``), ring, pump, port watcher and holding thread included.
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from benchmarks._figures import printed_as_json, verdict
from nyzhi.tools.background import ShellTable
from nyzhi.tools.base import ToolContext
from nyzhi.tools.builtin.bash import BashTool
from nyzhi.tools.builtin.shells import BashOutputTool
from nyzhi.tools.sandbox import SandboxPolicy

TARGET_STALL_MS = 5.0
CHATTY = 8
CHATTY_BYTES = 20_000_000
IDLE = 32
LINE = "yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Monitor:
    def __init__(self) -> None:
        self.lates: list[float] = []
        self.done = trio.Event()

    async def run(self) -> None:
        while not self.done.is_set():
            t0 = time.perf_counter()
            await trio.sleep(0.001)
            self.lates.append(time.perf_counter() - t0 - 0.001)

    def figures(self) -> dict[str, float]:
        lates = sorted(self.lates) or [0.0]
        return {"worst_ms": round(lates[-1] * 1000, 2),
                "p99_ms": round(lates[int(len(lates) * 0.99)] * 1000, 2)}


def plain_first_line() -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(["bash", "-c", "echo ready; sleep 5"], stdout=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    took = time.perf_counter() - t0
    proc.kill()
    proc.wait()
    proc.stdout.close()
    return took


class Bench:
    def __init__(self, root: Path, nursery: trio.Nursery, level: str = "workspace-write") -> None:
        self.table = ShellTable(max_processes=64)
        self.ctx = ToolContext(workspace_root=root, cwd=root, shells=self.table,
                               sandbox=SandboxPolicy(level=level, workspace_root=root))
        self.table.hosts[self.ctx.agent_path] = lambda shell, run: nursery.start_soon(run)
        self.bash = BashTool()

    async def start(self, command: str) -> Any:
        result = await self.bash.run({"command": command, "run_in_background": True,
                                      "yield_ms": 0}, self.ctx)
        return self.table.shells[result.metadata["shell_id"]]

    async def first_output(self) -> float:
        t0 = time.perf_counter()
        shell = await self.start("echo ready; sleep 5")
        await shell.wait_output(0)
        took = time.perf_counter() - t0
        await shell.kill_now()
        return took

    async def stop_all(self) -> None:
        for shell in self.table.running():
            if shell.kill_now is not None:
                await shell.kill_now()
            await shell.exited.wait()


async def measure(root: Path, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with trio.open_nursery() as nursery:
        bench = Bench(root, nursery)
        full = Bench(root, nursery, level="full-access")
        await bench.first_output()  # warm: modules, threads
        gc.freeze()  # as nyz does once started
        ours = [await bench.first_output() for _ in range(repeats)]
        unsandboxed = [await full.first_output() for _ in range(repeats)]
        plain = [await trio.to_thread.run_sync(plain_first_line) for _ in range(repeats)]
        out["first_output_ms"] = {
            "background_sandboxed": round(statistics.median(ours) * 1000, 2),
            "background_full_access": round(statistics.median(unsandboxed) * 1000, 2),
            "plain_subprocess": round(statistics.median(plain) * 1000, 2)}

        shell = await bench.start("while :; do echo tick; sleep 0.001; done")
        tool = BashOutputTool()
        trips = []
        for _ in range(repeats * 20):
            await shell.wait_output(shell.read_offset)
            t0 = time.perf_counter()
            await tool.run({"id": shell.id}, bench.ctx)
            trips.append(time.perf_counter() - t0)
        out["bash_output_round_trip_ms"] = round(statistics.median(trips) * 1000, 3)
        await bench.stop_all()

        monitor = Monitor()
        nursery.start_soon(monitor.run)
        await trio.to_thread.run_sync(lambda: subprocess.run(
            " & ".join([f"{LINE} | head -c {CHATTY_BYTES} > /dev/null"] * CHATTY) + "; wait",
            shell=True, check=False))
        monitor.done.set()
        floor = monitor.figures()

        monitor = Monitor()
        nursery.start_soon(monitor.run)
        t0 = time.perf_counter()
        chatty = [await bench.start(f"{LINE} | head -c {CHATTY_BYTES}") for _ in range(CHATTY)]
        for shell in chatty:
            await shell.exited.wait()
        took = time.perf_counter() - t0
        monitor.done.set()
        out["stall_8_chatty"] = {**monitor.figures(), "seconds": round(took, 2),
                                 "machine_alone": floor}

        base = rss()
        idle = [await bench.start("sleep 300") for _ in range(IDLE)]
        for shell in idle:
            await shell.wait_output(-1)  # started
        out["memory_per_idle_process_kib"] = round((rss() - base) / len(idle) / 1024, 1)
        await bench.stop_all()
        await full.stop_all()
    gc.unfreeze()
    return out


def main(argv: list[str]) -> None:
    repeats = 3 if "--quick" in argv else 9
    with tempfile.TemporaryDirectory(dir=Path.home()) as tmp:
        figures = trio.run(measure, Path(tmp), repeats)
    if printed_as_json(argv, figures):
        return
    first = figures["first_output_ms"]
    print("start -> first output (median):")
    print(f"  background, sandboxed     {first['background_sandboxed']:8.2f} ms")
    print(f"  background, full-access   {first['background_full_access']:8.2f} ms")
    print(f"  plain subprocess.Popen    {first['plain_subprocess']:8.2f} ms")
    print(f"bash_output round trip      {figures['bash_output_round_trip_ms']:8.3f} ms")
    stall = figures["stall_8_chatty"]
    alone = stall["machine_alone"]
    print(f"8 chatty processes ({CHATTY_BYTES // 1_000_000} MB each, {stall['seconds']} s): "
          f"longest stall {stall['worst_ms']} ms, p99 {stall['p99_ms']} ms "
          f"({verdict(stall['worst_ms'], TARGET_STALL_MS)} the {TARGET_STALL_MS:g} ms target; "
          f"the machine alone: {alone['worst_ms']} ms, p99 {alone['p99_ms']} ms)")
    print(f"memory per idle background process: {figures['memory_per_idle_process_kib']} KiB")
