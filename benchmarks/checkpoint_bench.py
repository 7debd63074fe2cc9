"""Cost of checkpoints per edited file, against the edit itself.

    python -m benchmarks checkpoint [--json] [--quick]

One call is a real ``edit`` through ``execute_calls`` (gates in trust mode full, the sandbox's
path check, the write lease, the atomic write with its fsyncs, the change record) on a 20 KB
file. Every call edits another file, so every call is the first change of its file in the
turn: the worst case, where the checkpoint stores the old bytes (hash, a blob written and
renamed, a ``before`` record) besides the ``after`` record every write gets. The calls with
and without checkpoints are timed interleaved; since the edit's fsyncs make them noisy, the
checkpoint's own work (``before_write`` + ``after_write`` on a new 20 KB file) is also timed
alone. The turn's end makes the turn's blobs and records durable at once (an fsync per blob,
one for the journal): that is reported per file apart, as it is paid once per turn, after
the answer, not in the edit.

Target: the checkpoint costs at most 10 % of the edit. Timings are the best of several
repeats. Nothing here is asserted.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import trio

from benchmarks._edit_calls import BODY, edit_context, per_edit_call
from benchmarks._figures import printed_as_json, verdict
from nyzhi.core.runtime.checkpoints import CheckpointStore, Recorder
from nyzhi.tools.base import ChangeLog, FileChange

REPEATS = 5
TARGET_OVERHEAD = 0.10


def _recorder(root: Path, changes: ChangeLog, run: int) -> Recorder:
    store = CheckpointStore(root.parent / f"{root.name}-store")
    recorder = Recorder(store.journal(f"bench-{run}"), root, changes)
    recorder.begin("prompt", "benchmark turn")
    return recorder


async def _edits(root: Path, checkpoints: bool, calls: int, run: int) -> tuple[float, float]:
    """(seconds per edit call, seconds per file of the turn-end sync)."""
    ctx = edit_context(root, "/agents/main")
    recorder = _recorder(root, ctx.changes, run) if checkpoints else None
    for i in range(calls):  # distinct bytes per file and run: every blob is a new one
        (root / f"f{i}.py").write_text(f"# run {run} file {i}\nvalue = 0\n{BODY}")
    per_call = await per_edit_call(
        ctx, [(f"f{i}.py", "value = 0\n", "value = 1\n") for i in range(calls)])
    sync = 0.0
    if recorder is not None:
        t0 = time.perf_counter()
        recorder.close()  # the turn's end: blobs and journal made durable
        sync = (time.perf_counter() - t0) / calls
    return per_call, sync


def _alone(root: Path, rounds: int, run: int) -> float:
    """The checkpoint's own work for one newly edited 20 KB file."""
    changes = ChangeLog()
    recorder = _recorder(root, changes, 1000 + run)
    batches = [[FileChange(path=root / f"alone{i}.py",
                           before=f"# alone {run} {i}\n{BODY}".encode(),
                           after=f"# alone {run} {i}\n{BODY}x".encode(), tool="edit")]
               for i in range(rounds)]
    t0 = time.perf_counter()
    for batch in batches:
        recorder.before_write(batch)
        recorder.after_write(batch)
    elapsed = (time.perf_counter() - t0) / rounds
    recorder.close()
    return elapsed


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    calls = 50 if quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        plain = kept = sync = float("inf")
        for run in range(REPEATS):  # interleaved, so load changes hit both alike
            plain = min(plain, trio.run(_edits, root, False, calls, run)[0])
            with_cp, turn_sync = trio.run(_edits, root, True, calls, run)
            kept, sync = min(kept, with_cp), min(sync, turn_sync)
        alone = min(_alone(root, calls, run) for run in range(REPEATS))
    share = alone / plain
    figures = {
        "edit_call_us": round(plain * 1e6, 1),
        "edit_call_with_checkpoint_us": round(kept * 1e6, 1),
        "checkpoint_alone_us": round(alone * 1e6, 2),
        "checkpoint_share_of_edit_call": round(share, 4),
        "turn_end_sync_per_file_us": round(sync * 1e6, 1),
        "turn_end_sync_share_of_edit_call": round(sync / plain, 4),
    }
    if printed_as_json(argv, figures):
        return
    print(f"edit call (20 KB), no checkpoints   {plain * 1e6:9.1f} us  (baseline)")
    print(f"edit call, first change of the file {kept * 1e6:9.1f} us  x{kept / plain:.3f} "
          "(noisy: the edit's fsyncs dominate)")
    print(f"checkpoint alone (blob + records)   {alone * 1e6:9.2f} us  x{share:.4f} of an edit "
          f"call ({verdict(share, TARGET_OVERHEAD)} the target: at most {TARGET_OVERHEAD:.0%})")
    print(f"turn-end sync, per file changed     {sync * 1e6:9.1f} us  x{sync / plain:.3f} "
          "(once per turn, after the answer)")


if __name__ == "__main__":
    main(sys.argv[1:])
