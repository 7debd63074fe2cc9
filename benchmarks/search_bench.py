"""grep and glob tools against the raw ``rg`` command on a large real tree.

    python -m benchmarks search [--json] [--quick] [--root DIR]
    python -m benchmarks.search_bench [--json] [--quick] [--root DIR]

The tree is the venv's site-packages (thousands of files, hundreds of MB including binaries).
Each figure is the median of several runs (the machine is shared; the median resists outliers)
of the whole tool call — argument checking, subprocess, parsing, formatting — compared with the
bare ``rg`` process doing the same search:

  grep  'def \\w+_handler'   tool (rg engine)  vs  rg -n 'def \\w+_handler' .   target <= 1.5x
  glob  '**/*.py'            tool (rg engine)  vs  rg --files --glob '**/*.py' .  target <= 1.5x
  ...and the same two through the pure-Python walker (the fallback when rg is missing).
Nothing here is asserted in tests.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import trio

from nyzhi.tools.base import ToolContext
from nyzhi.tools.builtin.search import GlobTool, GrepTool

GREP_PATTERN = r"def \w+_handler"
GLOB_PATTERN = "**/*.py"


def _default_root() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def _median(fn, repeats: int) -> float:
    """Median of ``fn()``'s own timings (each call returns the seconds it measured)."""
    return statistics.median(fn() for _ in range(repeats))


def _raw_rg(argv: list[str], root: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def _tool(tool, args: dict, root: Path, engine: str) -> float:
    """One tool call timed inside a running trio loop (an agent's loop is already running)."""
    if engine == "python":
        os.environ["NYZHI_SEARCH_ENGINE"] = "python"
    else:
        os.environ.pop("NYZHI_SEARCH_ENGINE", None)
    ctx = ToolContext(workspace_root=root, cwd=root)

    async def call() -> float:
        start = time.perf_counter()
        res = await tool.run(args, ctx)
        elapsed = time.perf_counter() - start
        if res.is_error:
            raise RuntimeError(res.output)
        return elapsed

    return trio.run(call)


def main(argv: list[str]) -> None:
    as_json = "--json" in argv
    repeats = 3 if "--quick" in argv else 7
    root = _default_root()
    if "--root" in argv:
        root = Path(argv[argv.index("--root") + 1])
    rg = shutil.which("rg")
    if rg is None:
        print("rg not found on PATH (Debian package 'ripgrep'); nothing to compare against", file=sys.stderr)
        return
    cases = {
        "grep": (
            [rg, "-n", "--no-heading", "--no-require-git", GREP_PATTERN, "."],
            GrepTool(), {"pattern": GREP_PATTERN},
        ),
        "glob": (
            [rg, "--files", "--hidden", "--no-require-git", "--glob", GLOB_PATTERN, "."],
            GlobTool(), {"pattern": GLOB_PATTERN},
        ),
    }
    results: dict[str, dict[str, float]] = {}
    for name, (raw_argv, tool, args) in cases.items():
        _raw_rg(raw_argv, root)  # warm the page cache before timing anything
        raw = _median(lambda raw_argv=raw_argv: _raw_rg(raw_argv, root), repeats)
        via_rg = _median(lambda tool=tool, args=args: _tool(tool, args, root, "rg"), repeats)
        via_py = _median(lambda tool=tool, args=args: _tool(tool, args, root, "python"), max(3, repeats // 2))
        results[name] = {
            "rg_raw_s": raw, "tool_rg_s": via_rg, "tool_python_s": via_py,
            "ratio_rg": via_rg / raw, "ratio_python": via_py / raw,
        }
    os.environ.pop("NYZHI_SEARCH_ENGINE", None)
    if as_json:
        print(json.dumps({"root": str(root), "repeats": repeats, "results": results}, indent=2))
        return
    print(f"tree: {root} (median of {repeats} runs)")
    for name, r in results.items():
        print(
            f"  {name:5} raw rg {r['rg_raw_s'] * 1000:7.1f} ms | tool (rg) {r['tool_rg_s'] * 1000:7.1f} ms "
            f"= {r['ratio_rg']:.2f}x (target <= 1.5x) | tool (python walker) "
            f"{r['tool_python_s'] * 1000:7.1f} ms = {r['ratio_python']:.2f}x"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
