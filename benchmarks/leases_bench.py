"""Cost of write leases per file-writing tool call, against the same call without a lease table.

    python -m benchmarks leases [--json] [--quick]

One call is a real ``edit`` through ``execute_calls`` (gates in trust mode full, the sandbox's
path check, the atomic write and the change record) on a file in a temporary workspace. With
leases, the call also takes and releases a lease on the target the gates resolved. The edit
calls with and without are timed interleaved; since the write's fsync makes them noisy, the
lease itself (take + release, uncontended) is also timed alone. Target: the lease costs at most
5 % of an edit call. A contended acquire (a waiter woken by a release) is timed
too, as the cost of handing a file from one agent to the next. Timings are the best of several
repeats (the machine is shared). Nothing here is asserted.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import trio

from benchmarks._edit_calls import edit_context, per_edit_call
from benchmarks._figures import printed_as_json, verdict
from nyzhi.tools.leases import LeaseTable

REPEATS = 5
TARGET_OVERHEAD = 0.05


async def _edits(root: Path, leases: LeaseTable | None, calls: int) -> float:
    ctx = edit_context(root, leases=leases)
    target = root / "app.py"
    target.write_text("value = 0\n")
    return await per_edit_call(
        ctx, [("app.py", f"value = {i}", f"value = {i + 1}") for i in range(calls)])


async def _handoffs(root: Path, rounds: int) -> float:
    """Two agents passing one lease back and forth: each acquire waits for the other's release."""
    table = LeaseTable()
    path = root / "shared.py"

    async def agent(name: str) -> None:
        for _ in range(rounds):
            async with table.hold([path], name):
                await trio.lowlevel.checkpoint()

    t0 = time.perf_counter()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent, "/agents/main/a")
        nursery.start_soon(agent, "/agents/main/b")
    return (time.perf_counter() - t0) / (2 * rounds)


async def _take_release(root: Path, rounds: int) -> float:
    """One uncontended lease taken and released, on a path the gates already resolved."""
    table = LeaseTable()
    paths = [root / "app.py"]
    t0 = time.perf_counter()
    for _ in range(rounds):
        async with table.hold(paths, "/agents/main/w", root=root, resolved=True):
            pass
    return (time.perf_counter() - t0) / rounds


def _best(fn, *args) -> float:
    return min(trio.run(fn, *args) for _ in range(REPEATS))


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    calls = 200 if quick else 1000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        plain, leased = float("inf"), float("inf")
        for _ in range(REPEATS):  # interleaved, so load changes hit both alike
            plain = min(plain, trio.run(_edits, root, None, calls))
            leased = min(leased, trio.run(_edits, root, LeaseTable(), calls))
        lease = _best(_take_release, root, calls * 10)
        handoff = _best(_handoffs, root, calls)
    overhead = lease / plain
    figures = {
        "edit_call_us": round(plain * 1e6, 1),
        "edit_call_with_lease_us": round(leased * 1e6, 1),
        "lease_take_release_us": round(lease * 1e6, 2),
        "lease_share_of_edit_call": round(overhead, 4),
        "contended_handoff_us": round(handoff * 1e6, 1),
    }
    if printed_as_json(argv, figures):
        return
    print(f"edit call, no leases        {plain * 1e6:9.1f} us  (baseline)")
    print(f"edit call, with a lease     {leased * 1e6:9.1f} us  x{leased / plain:.3f} "
          "(noisy: the write's fsync dominates)")
    print(f"lease take + release        {lease * 1e6:9.2f} us  x{overhead:.4f} of an edit call "
          f"({verdict(overhead, TARGET_OVERHEAD)} the target: at most {TARGET_OVERHEAD:.0%})")
    print(f"contended lease hand-off    {handoff * 1e6:9.1f} us  x{handoff / plain:.4f}")
