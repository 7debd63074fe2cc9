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

import json
import sys
import tempfile
import time
from pathlib import Path

import trio

from nyzhi.tools.base import ToolContext, TrustMode
from nyzhi.tools.builtin.files_write import EditTool, Step, check_unchanged, record_seen
from nyzhi.tools.execution import ToolCallRequest, execute_calls
from nyzhi.tools.gates import Gates, TrustPolicy
from nyzhi.tools.ledger import FileLedger
from nyzhi.tools.registry import ToolRegistry
from nyzhi.tools.sandbox import SandboxLevel, SandboxPolicy

REPEATS = 5
TARGET_OVERHEAD = 0.05
BODY = "".join(f"line_{i} = {i}  # some code of realistic width, a comment or two\n"
               for i in range(320))  # ~20 KB


def _context(root: Path, guard: bool) -> ToolContext:
    return ToolContext(
        workspace_root=root, cwd=root, agent_path="/agents/main/w",
        sandbox=SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, root, allow_temp=False),
        seen=FileLedger() if guard else None,
    )


async def _edits(root: Path, guard: bool, calls: int) -> float:
    registry = ToolRegistry()
    registry.register(EditTool())
    gates = Gates(trust=TrustPolicy(mode=TrustMode.FULL))
    ctx = _context(root, guard)
    target = root / "app.py"
    target.write_text("value = 0\n" + BODY)
    if ctx.seen is not None:
        ctx.seen.saw(target.resolve(), target.read_bytes())  # as a read would
    requests = [
        [ToolCallRequest(f"c{i}", "edit", {"file_path": "app.py", "old_string": f"value = {i}\n",
                                          "new_string": f"value = {i + 1}\n"})]
        for i in range(calls)
    ]
    t0 = time.perf_counter()
    for batch in requests:
        outcome = (await execute_calls(batch, registry=registry, gates=gates, ctx=ctx))[0]
        if outcome.result.is_error:
            raise RuntimeError(outcome.result.output)
    return (time.perf_counter() - t0) / calls


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
    if "--json" in argv:
        json.dump(figures, sys.stdout)
        print()
        return
    verdict = "meets" if share <= TARGET_OVERHEAD else "misses"
    print(f"edit call (20 KB), no guard   {plain * 1e6:9.1f} us  (baseline)")
    print(f"edit call, with the guard     {guarded * 1e6:9.1f} us  x{guarded / plain:.3f} "
          "(noisy: the write's fsync dominates)")
    print(f"guard alone (check + record)  {alone * 1e6:9.2f} us  x{share:.4f} of an edit call "
          f"({verdict} the target: at most {TARGET_OVERHEAD:.0%})")


if __name__ == "__main__":
    main(sys.argv[1:])
