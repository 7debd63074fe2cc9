"""Start-up time of ``nyz --help`` against a bare ``python -c pass``, in the same run.

    python -m benchmarks startup [--json] [--quick] [--runs N]

Target (from the issue): ``nyz --help`` <= 150 ms wall time. When it is over, the modules
with the largest cumulative import time (``python -X importtime``) are listed, so the slow
import can be made lazy. Nothing here is asserted in tests.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 150.0


def _venv_bin(name: str) -> Path:
    local = ROOT / ".venv" / "bin" / name
    return local if local.exists() else Path(sys.executable).parent / name


def time_command(cmd: list[str], runs: int) -> list[float]:
    times = []
    subprocess.run(cmd, capture_output=True, check=False)  # warm the page cache
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, check=False)
        times.append((time.perf_counter() - t0) * 1000)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return times


def slowest_imports(top: int = 10) -> list[tuple[str, float]]:
    """Top-level-ish modules by cumulative import time while building the ``nyz`` parser."""
    code = "from nyzhi.cli.main import build_parser; build_parser()"
    proc = subprocess.run([str(_venv_bin("python")), "-X", "importtime", "-c", code],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = [p.strip() for p in line[len("import time:"):].split("|")]
        try:
            cumulative = int(parts[1])
        except ValueError:
            continue
        name = parts[2]
        depth = (len(name) - len(name.lstrip())) // 2
        if depth <= 1:
            rows.append((name.strip(), cumulative / 1000))
    rows.sort(key=lambda r: -r[1])
    return rows[:top]


def main(argv: list[str]) -> None:
    as_json = "--json" in argv
    runs = 5 if "--quick" in argv else 15
    if "--runs" in argv:
        runs = int(argv[argv.index("--runs") + 1])
    python = str(_venv_bin("python"))
    nyz = str(_venv_bin("nyz"))
    base = time_command([python, "-c", "pass"], runs)
    help_ = time_command([nyz, "--help"], runs)
    result = {
        "runs": runs,
        "python_pass_ms": {"best": round(min(base), 1), "median": round(statistics.median(base), 1)},
        "nyz_help_ms": {"best": round(min(help_), 1), "median": round(statistics.median(help_), 1)},
        "overhead_ms_median": round(statistics.median(help_) - statistics.median(base), 1),
        "target_ms": TARGET_MS,
    }
    result["within_target"] = result["nyz_help_ms"]["median"] <= TARGET_MS
    if not result["within_target"]:
        result["slowest_imports_ms"] = slowest_imports()
    if as_json:
        print(json.dumps({"benchmark": "startup", **result}, indent=2))
        return
    print(f"start-up, {runs} runs each (best / median)")
    print(f"  python -c pass   {result['python_pass_ms']['best']:7.1f} / {result['python_pass_ms']['median']:7.1f} ms")
    print(f"  nyz --help       {result['nyz_help_ms']['best']:7.1f} / {result['nyz_help_ms']['median']:7.1f} ms"
          f"   (target <= {TARGET_MS:.0f} ms: {'ok' if result['within_target'] else 'OVER'})")
    print(f"  nyz overhead     {result['overhead_ms_median']:7.1f} ms (median)")
    for name, ms in result.get("slowest_imports_ms", []):
        print(f"    slow import: {name:<40} {ms:7.1f} ms cumulative")


if __name__ == "__main__":
    main(sys.argv[1:])
