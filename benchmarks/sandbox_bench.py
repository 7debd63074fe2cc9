"""What issue 29's protections cost: the masks on a sandboxed command, the neutralised git.

    python -m benchmarks sandbox [--json] [--quick]

1. A sandboxed ``bash`` call's start-up (``true`` under bubblewrap, workspace-write, through
   ``LocalExecutor``) with the credential masks and the read-only configuration binds, against
   the same call without them, interleaved. HOME is a temporary directory holding every path
   of the built-in list, so every mask is really mounted. Target: at most 1.2x.
2. ``git_status`` and ``git_diff`` through the tools (neutralised: a ``git config`` listing
   of the repository's drivers, then git with the overrides), against the plain single git
   run the tools made before (``git --no-pager -c color.ui=false status ...``).

Each figure is the median per call, the variants alternating call by call (the machine is
shared). Nothing here is asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

TARGET = 1.2


def _home(root: Path) -> None:
    from nyzhi.tools.credentials import BUILTIN_HIDE

    home = root / "home"
    for entry, _ in BUILTIN_HIDE:
        path = home / entry[2:]
        path.parent.mkdir(parents=True, exist_ok=True)
        if "." in path.name[1:] or path.name == ".netrc":
            path.write_text("secret\n")
        else:
            path.mkdir(exist_ok=True)
            (path / "secret").write_text("secret\n")
    for sub in (".local/share/nyzhi/sessions", ".local/state/nyzhi"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    (home / ".local/share/nyzhi/auth.json").write_text("{}")
    os.environ["HOME"] = str(home)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        os.environ.pop(var, None)


def _policies(ws: Path):
    from nyzhi.tools.sandbox import SandboxLevel, SandboxPolicy

    class Unmasked(SandboxPolicy):
        """The same policy without the masks and protections: the baseline."""

        def _masks(self, keep):  # type: ignore[override]
            return []

        def _protections(self, ws, cwd):  # type: ignore[override]
            return []

    masked = SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, ws)
    plain = Unmasked(SandboxLevel.WORKSPACE_WRITE, ws)
    return masked, plain


async def _timed(run, calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await run()
        out.append(time.perf_counter() - t0)
    return out


def _bash(policy, ws: Path):
    from nyzhi.tools.executors import LocalExecutor

    ex = LocalExecutor()

    async def run() -> None:
        res = await ex.run("true", cwd=ws, sandbox=policy, timeout=30)
        if res.exit_code != 0:
            raise RuntimeError(res.output)

    return run


def _git_tool(tool, ws: Path):
    from nyzhi.tools.base import ToolContext

    ctx = ToolContext(workspace_root=ws, cwd=ws)

    async def run() -> None:
        res = await tool.run({}, ctx)
        if res.is_error:
            raise RuntimeError(res.output)

    return run


def _git_plain(args: list[str], ws: Path):
    """What the git tools ran before: one plain git process."""
    from nyzhi.tools.builtin._proc import run_argv

    argv = ["git", "--no-pager", "-c", "color.ui=false", *args]
    env = {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "PAGER": "cat", "LC_ALL": "C"}

    async def run() -> None:
        res = await run_argv(argv, cwd=ws, env=env)
        if res.returncode != 0:
            raise RuntimeError(res.err_text)

    return run


def _repo(ws: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "b@example.com")
    git("config", "user.name", "b")
    for i in range(50):
        (ws / f"f{i}.txt").write_text(f"line {i}\n" * 20)
    git("add", "-A")
    git("commit", "-qm", "files")
    (ws / "f1.txt").write_text("changed\n")


async def _measure(ws: Path, quick: bool) -> dict[str, float]:
    """Median per call of each variant, the variants alternating call by call (the machine is
    shared: load moves slower than one call)."""
    from nyzhi.tools.builtin.git import GitDiffTool, GitStatusTool

    masked, plain = _policies(ws)
    variants = {
        "bash_masked": _bash(masked, ws),
        "bash_plain": _bash(plain, ws),
        "status_after": _git_tool(GitStatusTool(), ws),
        "status_before": _git_plain(
            ["status", "--porcelain=v1", "--branch", "--untracked-files=all"], ws),
        "diff_after": _git_tool(GitDiffTool(), ws),
        "diff_before": _git_plain(["diff"], ws),
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for run in variants.values():
        await run()  # warm up
    for _ in range(15 if quick else 80):
        for name, run in variants.items():
            samples[name] += await _timed(run, 1)
    return {name: statistics.median(v) for name, v in samples.items()}


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        try:
            _home(root)
            ws = root / "ws"
            ws.mkdir()
            _repo(ws)
            best = trio.run(_measure, ws, quick)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    ratios = {
        "bash_masks_ratio": best["bash_masked"] / best["bash_plain"],
        "git_status_ratio": best["status_after"] / best["status_before"],
        "git_diff_ratio": best["diff_after"] / best["diff_before"],
    }
    if "--json" in argv:
        json.dump({**{k: round(v * 1000, 3) for k, v in best.items()},
                   **{k: round(v, 3) for k, v in ratios.items()}}, sys.stdout)
        print()
        return
    print(f"sandboxed bash start-up: {best['bash_masked'] * 1000:.2f} ms with masks, "
          f"{best['bash_plain'] * 1000:.2f} ms without: {ratios['bash_masks_ratio']:.2f}x "
          f"(target <= {TARGET}x)")
    print(f"git_status: {best['status_after'] * 1000:.2f} ms neutralised, "
          f"{best['status_before'] * 1000:.2f} ms plain: {ratios['git_status_ratio']:.2f}x")
    print(f"git_diff:   {best['diff_after'] * 1000:.2f} ms neutralised, "
          f"{best['diff_before'] * 1000:.2f} ms plain: {ratios['git_diff_ratio']:.2f}x")
