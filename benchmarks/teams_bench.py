"""Team inboxes and the task board: messages per second, and what the lock adds to a write.

    python -m benchmarks teams [--json] [--quick]

The baseline, measured in the same run, is one plain ``atomic_write`` of the same JSON
(temp + fsync + rename + directory fsync): the least any durable write costs on this disk.
Figures:

* messages/s in one process: ``deliver`` from lead to alice, then alice's ``read_unread``
  (two locked read-modify-writes per message: the append and the mark-read);
* messages/s with a trio reader woken by the ``InboxWatcher`` (the sender in a worker thread,
  the reader waking on the FIFO poke and reading in a worker thread);
* messages/s across processes: a child ``python`` process sends, this process reads on poke
  (timed from the child's "go" to the last message read);
* a task update (lock + read + checks + atomic write) against the plain atomic write of the
  same task JSON; target: at most 1.5x (the lock and the read must stay small next to the
  fsyncs every write pays anyway); and the lock alone (open, flock, close), uncontended.

Each message round trip costs about two baseline writes, so messages/s is roughly
1 / (2 x baseline); the ratio printed is each round trip over one baseline write.

At scale (docs/teams.md, "A hundred teammates"):

* team event cost at 10 and 100 members: one round of a message to a member, the lead's
  quiescence check, the member reading it and going idle, the check again (the lead's
  ``TeamRuntime`` on real files); the ratio 100 / 10 is the target: flat (about 1). Beside it,
  the old check (``full_quiet``: every inbox and status file) at the same sizes;
* memory per in-process member at 100: a real runtime (an in-process model that answers at
  once) spawns 100 idle teammates; the resident set after, minus before, over 100, and that
  over the whole runtime's resident set before them (a process teammate costs at least one).

Timings are the best of several repeats (the machine is shared). Nothing is asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from benchmarks._figures import printed_as_json, verdict
from nyzhi import convert
from nyzhi.config.fsutil import atomic_write
from nyzhi.team_files.inbox import deliver
from nyzhi.team_files.locking import file_lock
from nyzhi.team_files.store import Member, TeamConfig, TeamStore
from nyzhi.team_files.watch import InboxWatcher

REPEATS = 3
TARGET_UPDATE_RATIO = 1.5

SENDER = """
import sys
from nyzhi.team_files.inbox import deliver
from nyzhi.team_files.locking import file_lock
from nyzhi.team_files.store import TeamStore
store = TeamStore({"XDG_DATA_HOME": sys.argv[1]})
print("ready", flush=True)
sys.stdin.readline()
for i in range(int(sys.argv[2])):
    deliver(store, "bench", "bob", "alice", f"message {i}")
"""


def _child_env() -> dict[str, str]:
    """This environment, with this checkout first on the path: the child runs this nyzhi."""
    here = str(Path(__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": here + (os.pathsep + path if path else "")}


def _store(root: Path) -> TeamStore:
    root.mkdir(parents=True, exist_ok=True)
    store = TeamStore({"XDG_DATA_HOME": str(root)})
    store.create(TeamConfig("bench", members=[Member("alice"), Member("bob")]))
    return store


def _baseline(root: Path, n: int) -> float:
    """One plain atomic write of a task's JSON, per call."""
    path = root / "plain" / "1.json"
    store = _store(root / "b")
    data = json.dumps(convert.unstructure(store.board("bench").create("subject")), indent=1).encode()
    t0 = time.perf_counter()
    for _ in range(n):
        atomic_write(path, data, mode=0o600)
    return (time.perf_counter() - t0) / n


def _updates(root: Path, n: int) -> float:
    """One task update under the board lock, per call (alternating owners, so each writes)."""
    board = _store(root).board("bench")
    task = board.create("subject")
    t0 = time.perf_counter()
    for i in range(n):
        board.update(task.id, owner="alice" if i % 2 else "", by="lead")
    return (time.perf_counter() - t0) / n


def _lock_alone(root: Path, n: int) -> float:
    """The board lock taken and released, uncontended, per call."""
    path = root / "tasks" / ".lock"
    t0 = time.perf_counter()
    for _ in range(n):
        with file_lock(path):
            pass
    return (time.perf_counter() - t0) / n


def _in_process(root: Path, n: int) -> float:
    store = _store(root)
    inbox = store.inbox("bench", "alice")
    t0 = time.perf_counter()
    for i in range(n):
        deliver(store, "bench", "lead", "alice", f"message {i}")
        inbox.read_unread()
    return n / (time.perf_counter() - t0)


async def _watched(root: Path, n: int) -> float:
    store = _store(root)
    inbox = store.inbox("bench", "alice")
    received = 0

    async def send() -> None:
        for i in range(n):
            await trio.to_thread.run_sync(deliver, store, "bench", "lead", "alice", f"m {i}")

    t0 = time.perf_counter()
    async with InboxWatcher(inbox.dir, "alice", fallback=5) as watcher, trio.open_nursery() as nursery:
        nursery.start_soon(send)
        while received < n:
            await watcher.wait()
            received += len(await trio.to_thread.run_sync(inbox.read_unread))
    return n / (time.perf_counter() - t0)


async def _across_processes(root: Path, n: int) -> float:
    store = _store(root)
    inbox = store.inbox("bench", "alice")
    received = 0
    async with InboxWatcher(inbox.dir, "alice", fallback=5) as watcher:
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-c", SENDER, str(root), str(n)], env=_child_env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            line = b""
            while not line.endswith(b"\n"):
                chunk = await proc.stdout.receive_some(64)
                if not chunk:
                    raise RuntimeError(f"the sender exited before it was ready ({line!r})")
                line += chunk
            t0 = time.perf_counter()
            await proc.stdin.send_all(b"go\n")
            while received < n:
                await watcher.wait()
                received += len(await trio.to_thread.run_sync(inbox.read_unread))
            elapsed = time.perf_counter() - t0
            await proc.wait()
        finally:
            proc.kill()
    return n / elapsed


# --- at scale ----------------------------------------------------------------------------------


def _lead_of(root: Path, n: int):
    """A lead's TeamRuntime over a real team of ``n`` members, all idle but m0 (running, so
    the team is never done and every check is an ordinary one)."""
    from nyzhi.core import events as ev
    from nyzhi.core.runtime.teams.control import Running, TeamRuntime

    env = {"XDG_DATA_HOME": str(root)}
    store = TeamStore(env)
    names = [f"m{i}" for i in range(n)]
    store.create(TeamConfig("scale", members=[Member(m) for m in names]))
    for m in names:
        store.set_status("scale", m, status="running" if m == "m0" else "idle")

    async def emit(event):
        await teams.on_event(event)

    teams = TeamRuntime(system=None, factory=None, tree=None, emit=emit, hooks=None,
                        session_id="bench", env=env)
    for m in names:
        path = ev.teammate_path("scale", m)
        teams.members[path] = Running("scale", m, path, "in-process")
    return teams, store


async def _event_cost(root: Path, n: int, rounds: int, full: bool) -> float:
    """Seconds per event round (see the module's docstring); ``full``: the old check."""
    from nyzhi.core import events as ev

    teams, store = _lead_of(root, n)
    check = teams.full_quiet if full else teams.quiet
    await check("scale")
    t0 = time.perf_counter()
    for i in range(rounds):
        member = f"m{1 + i % (n - 1)}"
        sent = deliver(store, "scale", "m0", member, "ping")
        await teams.messages_sent("scale", sent)
        await check("scale")
        store.inbox("scale", member).read_unread()
        await teams.on_event(ev.AgentStatus(agent=ev.teammate_path("scale", member),
                                            status="idle"))
        await check("scale")
    return (time.perf_counter() - t0) / rounds


class _AtOnce:
    """An in-process model that answers at once (the members stay idle anyway)."""

    name = "bench"
    model = "bench-model"

    async def stream(self, request):
        from nyzhi.provider import types as pt

        yield pt.TextDelta("done")
        yield pt.Stop("end_turn")


async def _member_memory(ws: Path, n: int) -> tuple[float, float]:
    """(bytes per in-process member, the runtime's resident set before them)."""
    import gc

    from benchmarks.subagents_bench import rss_bytes
    from nyzhi.core import events as ev
    from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime

    options = RuntimeOptions(cwd=ws, provider_instance=_AtOnce(), trust="full", ephemeral=True,
                             team="mem")
    async with open_runtime(options) as rt:
        await rt.teams.wait_quiet("mem")
        gc.collect()
        before = rss_bytes()
        for i in range(n):
            await rt.teams.spawn_teammate("mem", f"m{i}", "", "worker", None, ev.MAIN_AGENT)
        await rt.teams.wait_quiet("mem")
        gc.collect()
        return (rss_bytes() - before) / n, before


def _scale(root: Path, quick: bool) -> dict[str, float]:
    from benchmarks._isolated import isolated_home

    rounds = 20 if quick else 100
    cost: dict[tuple[int, bool], float] = {}
    for r in range(REPEATS):
        for n in (10, 100):
            for full in (False, True):
                got = trio.run(_event_cost, root / f"ev{r}-{n}-{full}", n, rounds, full)
                cost[n, full] = min(cost.get((n, full), float("inf")), got)
    ws = root / "ws"
    (ws / ".nyzhi").mkdir(parents=True)
    saved = os.environ.pop("XDG_DATA_HOME", None)
    try:
        with isolated_home(root / "home"):
            per_member, base = trio.run(_member_memory, ws, 100)
    finally:
        if saved is not None:
            os.environ["XDG_DATA_HOME"] = saved
    return {
        "event_us_10": round(cost[10, False] * 1e6, 1),
        "event_us_100": round(cost[100, False] * 1e6, 1),
        "event_cost_100_vs_10": round(cost[100, False] / cost[10, False], 3),
        "full_check_event_us_10": round(cost[10, True] * 1e6, 1),
        "full_check_event_us_100": round(cost[100, True] * 1e6, 1),
        "full_check_100_vs_10": round(cost[100, True] / cost[10, True], 3),
        "in_process_member_kib": round(per_member / 1024, 1),
        "in_process_member_vs_runtime": round(per_member / base, 4),
    }


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    n = 100 if quick else 400
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = upd = float("inf")
        for r in range(REPEATS):  # interleaved, so load changes hit both alike
            base = min(base, _baseline(root / f"base{r}", n))
            upd = min(upd, _updates(root / f"upd{r}", n))
        lock = min(_lock_alone(root / f"lock{r}", n * 10) for r in range(REPEATS))
        local = max(_in_process(root / f"local{r}", n) for r in range(REPEATS))
        watched = max(trio.run(_watched, root / f"watch{r}", n) for r in range(REPEATS))
        cross = max(trio.run(_across_processes, root / f"cross{r}", n) for r in range(REPEATS))
        scale = _scale(root / "scale", quick)
    ratio = upd / base
    figures = {
        "atomic_write_us": round(base * 1e6, 1),
        "task_update_us": round(upd * 1e6, 1),
        "task_update_vs_atomic_write": round(ratio, 3),
        "lock_take_release_us": round(lock * 1e6, 2),
        "lock_share_of_atomic_write": round(lock / base, 4),
        "messages_per_s_in_process": round(local, 1),
        "messages_per_s_watched": round(watched, 1),
        "messages_per_s_across_processes": round(cross, 1),
        **scale,
    }
    if printed_as_json(argv, figures):
        return
    print(f"plain atomic write              {base * 1e6:9.1f} us  (baseline)")
    print(f"task update under the lock      {upd * 1e6:9.1f} us  x{ratio:.3f} "
          f"({verdict(ratio, TARGET_UPDATE_RATIO)} the target: at most x{TARGET_UPDATE_RATIO}; "
          "noisy, the fsyncs vary)")
    print(f"lock take + release alone       {lock * 1e6:9.2f} us  x{lock / base:.4f}")
    for label, rate in (("in one process (send + read)", local),
                        ("trio reader woken by the FIFO", watched),
                        ("across processes (FIFO)", cross)):
        print(f"messages/s, {label:30} {rate:8.0f}  "
              f"(one message = x{1 / (rate * base):.2f} baseline writes)")
    print(f"team event, 10 members          {scale['event_us_10']:9.1f} us  (baseline)")
    print(f"team event, 100 members         {scale['event_us_100']:9.1f} us  "
          f"x{scale['event_cost_100_vs_10']:.3f} (target: flat, about x1)")
    print(f"old full check, 10 / 100        {scale['full_check_event_us_10']:9.1f} / "
          f"{scale['full_check_event_us_100']:.1f} us  x{scale['full_check_100_vs_10']:.3f}")
    print(f"memory per in-process member    {scale['in_process_member_kib']:9.1f} KiB "
          f"(x{scale['in_process_member_vs_runtime']:.4f} of the runtime before them)")
