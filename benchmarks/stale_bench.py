"""Cost of the stale-write guard per ``edit`` call, against the same call without it.

    python -m benchmarks stale [--json] [--quick]

One call is a real ``edit`` through ``execute_calls`` (gates in trust mode full, the sandbox's
path check, the write lease, the atomic write and the change record) on a 20 KB file. With the
guard, the agent's ledger already holds the file (as after a ``read``), the call hashes the
current bytes, compares, and records the new ones. The calls with and without are timed
interleaved; since the write's fsync makes them noisy, the guard's own work (check + record on
the same bytes) is also timed alone. Target: the guard costs at most 5 % of an edit call.
Timings are the best of several repeats. Nothing here is asserted.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import trio

from benchmarks._edit_calls import BODY, edit_context, per_edit_call
from benchmarks._figures import printed_as_json, verdict
from nyzhi.tools.base import ToolContext
from nyzhi.tools.builtin.files_write import Step, check_unchanged, record_seen
from nyzhi.tools.ledger import FileLedger

REPEATS = 5
TARGET_OVERHEAD = 0.05


def _context(root: Path, guard: bool) -> ToolContext:
    return edit_context(root, seen=FileLedger() if guard else None)


async def _edits(root: Path, guard: bool, calls: int) -> float:
    ctx = _context(root, guard)
    target = root / "app.py"
    target.write_text("value = 0\n" + BODY)
    if ctx.seen is not None:
        ctx.seen.saw(target.resolve(), target.read_bytes())  # as a read would
    return await per_edit_call(
        ctx, [("app.py", f"value = {i}\n", f"value = {i + 1}\n") for i in range(calls)])


def _guard_alone(root: Path, rounds: int) -> float:
    """The guard's own work on one 20 KB file: the check and the record after the write."""
    ctx = _context(root, True)
    path = root / "alone.py"
    data = BODY.encode()
    path.write_bytes(data)
    ctx.seen.saw(path.resolve(), data)
    steps = [Step(path=path, before=data, after=data)]
    t0 = time.perf_counter()
    for _ in range(rounds):
        check_unchanged(ctx, steps)
        record_seen(ctx, steps)
    return (time.perf_counter() - t0) / rounds


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    calls = 100 if quick else 500
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        plain, guarded = float("inf"), float("inf")
        for _ in range(REPEATS):  # interleaved, so load changes hit both alike
            plain = min(plain, trio.run(_edits, root, False, calls))
            guarded = min(guarded, trio.run(_edits, root, True, calls))
        alone = min(_guard_alone(root, calls * 4) for _ in range(REPEATS))
    share = alone / plain
    figures = {
        "edit_call_us": round(plain * 1e6, 1),
        "edit_call_guarded_us": round(guarded * 1e6, 1),
        "guard_alone_us": round(alone * 1e6, 2),
        "guard_share_of_edit_call": round(share, 4),
    }
    if printed_as_json(argv, figures):
        return
    print(f"edit call (20 KB), no guard   {plain * 1e6:9.1f} us  (baseline)")
    print(f"edit call, with the guard     {guarded * 1e6:9.1f} us  x{guarded / plain:.3f} "
          "(noisy: the write's fsync dominates)")
    print(f"guard alone (check + record)  {alone * 1e6:9.2f} us  x{share:.4f} of an edit call "
          f"({verdict(share, TARGET_OVERHEAD)} the target: at most {TARGET_OVERHEAD:.0%})")


if __name__ == "__main__":
    main(sys.argv[1:])
