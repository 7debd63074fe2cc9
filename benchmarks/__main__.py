"""Run every benchmark module (``benchmarks/*_bench.py``), or those named on the command line.

Each module exposes ``main(argv: list[str]) -> None`` and prints its figures as ratios against a
baseline measured in the same process run; ``--json`` asks for machine-readable output.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

from nyzhi import process

# The in-process benchmarks (runtime steps, subagents, teams…) measure nyz's runtime as nyz
# runs it, with the interpreter tunings its entry point makes (nyzhi.process), not an
# embedding program's.
process.claim()


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = [a for a in argv if not a.startswith("-")]
    flags = [a for a in argv if a.startswith("-")]
    modules = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.endswith("_bench"))
    if names:
        modules = [m for m in modules if any(n in m for n in names)]
    for name in modules:
        print(f"== {name}", flush=True)
        importlib.import_module(f"benchmarks.{name}").main(flags)
    return 0


raise SystemExit(main(sys.argv[1:]))
