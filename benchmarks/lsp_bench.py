"""The language servers' cost (issue 36), measured against baselines in the same run.

* edit latency: ``edit`` calls through the tool executor on a warm Python project, with
  diagnostics after edits on (the pool waits for basedpyright's errors, bounded by ``[lsp]
  diagnostics_wait``) against the same edits with no pool. Target: <= 1.5x, or the extra
  time within the configured bound.
* go-to-definition: ``lsp_goto_definition`` (warm server) against ``rg`` looking for the
  same symbol's definition line, run as a process as the agent's grep would.
  The server's own time from our didChange to its publishDiagnostics is printed beside it:
  that, not the pool, is what an edit with diagnostics waits for.
* memory per server: the resident memory of each server's process group (the server and
  what it started: typescript-language-server runs tsserver), once it has answered.

The servers are basedpyright (the ``dev`` extra) and typescript-language-server (``make
test`` installs it into ``<venv>/node_modules``); a missing one is skipped and said so.
Usage: ``python -m benchmarks lsp [--json] [--quick]``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

import actors
from benchmarks._figures import printed_as_json

NODE_BIN = Path(sys.prefix) / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent
_REGISTRY: list = []  # the tool registry, built once
MODULES = 30  # a small project: enough files for the server to have something to index


def _python_project(root: Path) -> None:
    (root / "pyproject.toml").write_text('[project]\nname = "bench"\n')
    for i in range(MODULES):
        (root / f"mod{i}.py").write_text(
            f"from base import Shape\n\n\nclass Shape{i}(Shape):\n"
            f"    def area(self) -> float:\n        return {i}.0 * self.scale\n\n\n"
            f"def make{i}(scale: float) -> Shape{i}:\n    return Shape{i}(scale)\n")
    (root / "base.py").write_text(
        "class Shape:\n    def __init__(self, scale: float) -> None:\n"
        "        self.scale = scale\n\n    def area(self) -> float:\n        return 0.0\n\n\n"
        "def total_area(shapes: list[Shape]) -> float:\n"
        "    return sum(s.area() for s in shapes)\n")
    (root / "main.py").write_text(
        "from base import total_area\nfrom mod1 import make1\n\n"
        "value = 1.0\nprint(total_area([make1(value)]))\n")


def _ts_project(root: Path) -> None:
    (root / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
    (root / "shapes.ts").write_text(
        "export function totalArea(xs: number[]): number {\n"
        "  return xs.reduce((a, b) => a + b, 0);\n}\n")
    (root / "main.ts").write_text(
        'import { totalArea } from "./shapes";\nconsole.log(totalArea([1, 2]));\n')


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env["HOME"] = str(home)
    env["PATH"] = os.pathsep.join((str(VENV_BIN), str(NODE_BIN), env.get("PATH", "")))
    return env


def _group_rss_kib(pgid: int) -> int:
    """Resident memory of every process in group ``pgid``, in KiB."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # the process group, 5th field of stat
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total


def _ctx(root: Path, pool):
    from nyzhi.tools.base import SandboxLevel, ToolContext
    from nyzhi.tools.sandbox import SandboxPolicy

    return ToolContext(workspace_root=root, cwd=root, lsp=pool,
                       sandbox=SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, root,
                                             allow_temp=False))


async def _call(ctx, name: str, **args):
    from nyzhi.config.modes import TrustMode
    from nyzhi.tools.execution import ToolCallRequest, execute_calls
    from nyzhi.tools.gates import Gates, TrustPolicy
    from nyzhi.tools.registry import default_registry

    registry = _REGISTRY or _REGISTRY.append(default_registry()) or _REGISTRY
    gates = Gates(trust=TrustPolicy(mode=TrustMode.FULL))
    [outcome] = await execute_calls([ToolCallRequest("b", name, args)], registry=registry[0],
                                    gates=gates, ctx=ctx)
    assert not outcome.result.is_error, outcome.result.output
    return outcome.result


async def _edits(ctx, n: int) -> float:
    """Median seconds of ``n`` edits that flip one value back and forth."""
    times = []
    for i in range(n):
        old, new = ("1.0", "2.0") if i % 2 == 0 else ("2.0", "1.0")
        start = time.perf_counter()
        await _call(ctx, "edit", file_path="main.py", old_string=f"value = {old}",
                    new_string=f"value = {new}")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _rg(root: Path) -> float:
    start = time.perf_counter()
    out = subprocess.run(["rg", "-n", r"def total_area\b", str(root)], capture_output=True,
                         check=False)
    elapsed = time.perf_counter() - start
    assert b"base.py" in out.stdout
    return elapsed


async def _python(root: Path, env: dict[str, str], n: int) -> dict[str, float]:
    from nyzhi.config.schema import LspConfig
    from nyzhi.core.runtime.lsp import LspPool

    config = LspConfig()
    async with actors.open_system(name="bench") as system:
        pool = await LspPool.open(system, config, workspace=root, env=env)
        on = _ctx(root, pool)
        off = _ctx(root, None)
        # warm: the server started, the project analysed, the file open
        await _call(on, "lsp_goto_definition", file="main.py", symbol="total_area")
        await _edits(on, 2)
        await _edits(off, 2)
        with_diag, without = [], []
        for _ in range(2):  # alternate, so machine noise hits both alike
            without.append(await _edits(off, n))
            with_diag.append(await _edits(on, n))
        lsp_times, rg_times = [], []
        for _ in range(n):
            start = time.perf_counter()
            await _call(on, "lsp_goto_definition", file="main.py", symbol="total_area")
            lsp_times.append(time.perf_counter() - start)
            rg_times.append(await trio.to_thread.run_sync(_rg, root))
        [link] = pool.links.values()
        rss = _group_rss_kib(link.pid)
        # the server's own part: from our didChange to its publishDiagnostics
        client, path = link.client, root / "main.py"
        text = await trio.to_thread.run_sync(path.read_text)
        server_times = []
        for i in range(n):
            start = time.perf_counter()
            seq = await client.sync(path, text.replace("value = 1.0", f"value = {i}.5"))
            await client.wait_diagnostics(path, seq, 30)
            server_times.append(time.perf_counter() - start)
        await system.shutdown()
    return {
        "server_publish_ms": statistics.median(server_times) * 1000,
        "edit_off_ms": min(without) * 1000, "edit_on_ms": min(with_diag) * 1000,
        "definition_ms": statistics.median(lsp_times) * 1000,
        "rg_ms": statistics.median(rg_times) * 1000,
        "pyright_rss_mib": rss / 1024, "bound_s": config.diagnostics_wait,
    }


async def _typescript(root: Path, env: dict[str, str]) -> float:
    from nyzhi.config.schema import LspConfig
    from nyzhi.core.runtime.lsp import LspPool

    async with actors.open_system(name="bench") as system:
        pool = await LspPool.open(system, LspConfig(), workspace=root, env=env)
        await _call(_ctx(root, pool), "lsp_goto_definition", file="main.ts", symbol="totalArea",
                    line=2)
        [link] = pool.links.values()
        rss = _group_rss_kib(link.pid)
        await system.shutdown()
    return rss / 1024


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    if shutil.which("basedpyright-langserver", path=str(VENV_BIN)) is None:
        print("lsp: skipped (basedpyright missing: pip install -e '.[dev]')")
        return
    if shutil.which("rg") is None:
        print("lsp: skipped (rg, the grep baseline, is not installed)")
        return
    n = 10 if quick else 30
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "py").mkdir()
        (base / "ts").mkdir()
        _python_project(base / "py")
        _ts_project(base / "ts")
        env = _env(base / "home")
        figures = trio.run(_python, base / "py", env, n)
        ts_rss = None
        if (NODE_BIN / "typescript-language-server").exists():
            ts_rss = trio.run(_typescript, base / "ts", env)
    off, on = figures["edit_off_ms"], figures["edit_on_ms"]
    out = {
        "edit_diagnostics_off_ms": round(off, 2),
        "edit_diagnostics_on_ms": round(on, 2),
        "edit_ratio": round(on / off, 2),
        "edit_extra_ms": round(on - off, 2),
        "edit_target": "<= 1.5x, or the extra within diagnostics_wait",
        "diagnostics_wait_s": figures["bound_s"],
        "server_change_to_diagnostics_ms": round(figures["server_publish_ms"], 1),
        "definition_lsp_ms": round(figures["definition_ms"], 2),
        "definition_rg_ms": round(figures["rg_ms"], 2),
        "definition_ratio": round(figures["definition_ms"] / figures["rg_ms"], 2),
        "pyright_rss_mib": round(figures["pyright_rss_mib"], 1),
        "typescript_rss_mib": None if ts_rss is None else round(ts_rss, 1),
    }
    if printed_as_json(argv, out):
        return
    print(f"edit: {off:.1f} ms without diagnostics, {on:.1f} ms with -> {on / off:.2f}x "
          f"(+{on - off:.0f} ms; target <= 1.5x, or within the {figures['bound_s']:g} s bound)")
    print(f"  of which the server's own didChange -> publishDiagnostics: "
          f"{figures['server_publish_ms']:.0f} ms")
    print(f"go-to-definition: lsp {figures['definition_ms']:.1f} ms, rg {figures['rg_ms']:.1f} "
          f"ms -> {figures['definition_ms'] / figures['rg_ms']:.2f}x (exact vs textual)")
    ts = "skipped (no typescript-language-server)" if ts_rss is None else f"{ts_rss:.0f} MiB"
    print(f"memory per server: basedpyright {figures['pyright_rss_mib']:.0f} MiB, "
          f"typescript-language-server (with tsserver) {ts}")
