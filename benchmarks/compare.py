"""Today's figures against an earlier commit's, measured in one run: the A/B an issue asks for.

    python -m benchmarks.compare [--against=REV] [--rounds=N] [--quick] [NAME ...]

Each named benchmark (default: the start-up, per-step, console and ACP-sessions figures the
session protocol must not lose) runs as ``python -m benchmarks NAME --json`` once on this tree
and once on REV (a temporary ``git worktree``, removed afterwards), alternating which goes
first in each round, so both meet the same machine. The benchmark *code* is this tree's in
both: REV's worktree gets this tree's ``benchmarks/`` copied over, so only the product differs.
Every numeric figure is printed as the median over rounds for each side and their ratio
(this tree / REV); for times and memory, below 1 is better. The default REV is the last
commit before the session protocol (issue 50) began.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BEFORE_PROTOCOL = "aa263c1"
DEFAULT = ("startup", "runtime", "console", "acp_sessions")


def _figures(value: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    """The numeric leaves of a benchmark's JSON, by dotted key."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield prefix, float(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _figures(item, f"{prefix}.{key}" if prefix else str(key))


def _last_json(text: str) -> Any:
    """The last JSON value a benchmark printed (after its ``== name`` header, possibly
    indented over several lines)."""
    decoder = json.JSONDecoder()
    found = None
    index = 0
    while (start := text.find("{", index)) != -1:
        try:
            found, end = decoder.raw_decode(text, start)
        except ValueError:
            index = start + 1
            continue
        index = end
    if found is None:
        raise ValueError("printed no JSON")
    return found


def run_one(tree: Path, name: str, flags: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-m", "benchmarks", name, "--json", *flags],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"{name} on {tree.name}: exit {done.returncode}: {tail[0]}")
    return dict(_figures(_last_json(done.stdout)))


def compare(rev: str, names: list[str], rounds: int, flags: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="nyz-compare-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), rev], cwd=ROOT,
                       check=True, capture_output=True)
        try:
            shutil.rmtree(base / "benchmarks")
            shutil.copytree(ROOT / "benchmarks", base / "benchmarks",
                            ignore=shutil.ignore_patterns("__pycache__"))
            _prepare(base)
            for name in names:
                _compare_one(name, base, rev, rounds, flags)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT,
                           capture_output=True)


def _prepare(tree: Path) -> None:
    """What ``make install`` does for this tree, done for REV's: its bytecode compiled and its
    start-up code cache built, so neither side pays a first-run compile."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", "actors", "nyzhi",
                    "benchmarks"], cwd=tree, env=env, capture_output=True)
    if (tree / "nyzhi" / "codecache.py").is_file():
        subprocess.run([sys.executable, "-m", "nyzhi.codecache"], cwd=tree, env=env,
                       capture_output=True)


def _compare_one(name: str, base: Path, rev: str, rounds: int, flags: list[str]) -> None:
    print(f"== {name}: this tree against {rev}", flush=True)
    sides: dict[str, list[dict[str, float]]] = {"head": [], "base": []}
    try:
        for n in range(rounds):
            order = [("head", ROOT), ("base", base)]
            for side, tree in order if n % 2 == 0 else order[::-1]:
                sides[side].append(run_one(tree, name, flags))
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
        print(f"  not compared: {exc}")
        return
    keys = [k for k in sides["head"][0] if all(k in r for r in sides["head"] + sides["base"])]
    for key in keys:
        head = statistics.median(r[key] for r in sides["head"])
        was = statistics.median(r[key] for r in sides["base"])
        ratio = f"{head / was:.3f}x" if was else "n/a"
        print(f"  {key}: {head:.4g} (was {was:.4g}) {ratio}")


def main(argv: list[str]) -> int:
    rev, rounds = BEFORE_PROTOCOL, 1
    names: list[str] = []
    flags: list[str] = []
    for arg in argv:
        if arg.startswith("--against="):
            rev = arg.split("=", 1)[1]
        elif arg.startswith("--rounds="):
            rounds = max(1, int(arg.split("=", 1)[1]))
        elif arg.startswith("-"):
            flags.append(arg)
        else:
            names.append(arg)
    compare(rev, names or list(DEFAULT), rounds, flags)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
