"""Benchmarks for the ``actors`` library, each against a raw-trio baseline in the same run.

    python -m benchmarks actors [--json] [--quick]
    python -m benchmarks.actors_bench [--json] [--quick]

Figures (targets from issue 30, raised from the earlier 1.3x / 3x / 6 KB):
  ask round trip       vs raw "task + channel + Event reply" ask      ratio <= 0.6
  tell throughput      vs raw ``await send`` / ``async for``         ratio >= 10
  spawn+stop 10,000    vs spawn+join of 10,000 raw tasks             ratio <= 2
  memory per idle actor (tracemalloc)                                 <= 3 KB
Each timing is the best of several repeats of the process's CPU time (the machine is shared
and noisy; the minimum is the least disturbed run). Nothing here is asserted in tests.
"""

from __future__ import annotations

import gc
import json
import math
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable

import trio
import trio.testing

import actors

REPEATS = 5
#: Every timing here is of one thread that never waits for I/O, so the process's CPU time is
#: the work itself; wall time would add whatever other processes on a shared machine took.
_now = time.process_time


def _best(fn: Callable[[], Awaitable[float]], repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        gc.collect()
        best = min(best, trio.run(fn))
    return best


# -- ask ----------------------------------------------------------------------------------------
class _Slot:
    __slots__ = ("event", "value")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.value: object = None


def raw_ask(n: int) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        send, receive = trio.open_memory_channel[tuple[int, _Slot]](100)

        async def server() -> None:
            async for msg, slot in receive:
                slot.value = msg
                slot.event.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            t0 = _now()
            for i in range(n):
                slot = _Slot()
                await send.send((i, slot))
                await slot.event.wait()
                assert slot.value == i
            elapsed = _now() - t0
            await send.aclose()
        return elapsed / n

    return run


def floor_ask(n: int) -> Callable[[], Awaitable[float]]:
    """trio's own floor for any ask: two tasks handing control back and forth with bare
    ``reschedule`` / ``wait_task_rescheduled`` (no message, no channel, no Event, no
    ``receive`` call). An ask cannot take fewer task steps: the actor's task must run to
    answer and the asker's must run to read the answer. (``ActorRef.ask`` yields once
    instead of parking, so half the time both steps share one scheduler batch; that saves a
    batch but costs the asker an extra step in the other half, about even.) Reported beside
    the baseline so the ask ratio can be read against what is physically possible."""

    async def run() -> float:
        from trio.lowlevel import Abort, current_task, reschedule, wait_task_rescheduled

        def abort(_: object) -> Abort:
            return Abort.SUCCEEDED

        tasks: dict[str, trio.lowlevel.Task] = {}

        async def server() -> None:
            tasks["server"] = current_task()
            while True:
                await wait_task_rescheduled(abort)
                reschedule(tasks["client"])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            await trio.testing.wait_all_tasks_blocked()
            tasks["client"] = current_task()
            t0 = _now()
            for _ in range(n):
                reschedule(tasks["server"])
                await wait_task_rescheduled(abort)
            elapsed = _now() - t0
            nursery.cancel_scope.cancel()
        return elapsed / n

    return run


class Echo(actors.Actor):
    async def receive(self, message: object) -> object:
        return message


def actor_ask(n: int, timeout: float | None) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        async with actors.open_system() as system:
            ref = system.spawn(Echo)
            await ref.wait_running()
            t0 = _now()
            for i in range(n):
                assert await ref.ask(i, timeout=timeout) == i
            elapsed = _now() - t0
        return elapsed / n

    return run


# -- tell -------------------------------------------------------------------------------------
def raw_tell(n: int) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        send, receive = trio.open_memory_channel[int](100)
        done = trio.Event()

        async def consumer() -> None:
            count = 0
            async for _ in receive:
                count += 1
                if count == n:
                    done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consumer)
            await trio.testing.wait_all_tasks_blocked()
            t0 = _now()
            for i in range(n):
                await send.send(i)
            await done.wait()
            elapsed = _now() - t0
            await send.aclose()
        return elapsed / n

    return run


class Counter(actors.Actor):
    def __init__(self, n: int, done: trio.Event) -> None:
        self.n, self.done, self.count = n, done, 0

    async def receive(self, message: object) -> None:
        self.count += 1
        if self.count == self.n:
            self.done.set()


def actor_tell(n: int) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        done = trio.Event()
        async with actors.open_system() as system:
            ref = system.spawn(Counter, n, done)
            await ref.wait_running()
            t0 = _now()
            for i in range(n):
                await ref.tell(i)
            await done.wait()
            elapsed = _now() - t0
        return elapsed / n

    return run


def actor_tell_nowait(n: int) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        done = trio.Event()
        async with actors.open_system() as system:
            ref = system.spawn(Counter, n, done, mailbox_size=n)
            await ref.wait_running()
            t0 = _now()
            for i in range(n):
                ref.tell_nowait(i)
            await done.wait()
            elapsed = _now() - t0
        return elapsed / n

    return run


# -- spawn + stop ---------------------------------------------------------------------------------
def raw_spawn(n: int) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        t0 = _now()
        sends = []
        async with trio.open_nursery() as nursery:
            for _ in range(n):
                send, receive = trio.open_memory_channel[object](0)
                sends.append(send)

                async def task(receive: trio.MemoryReceiveChannel[object] = receive) -> None:
                    async for _ in receive:
                        pass

                nursery.start_soon(task)
            await trio.testing.wait_all_tasks_blocked()
            for send in sends:
                send.close()
        return _now() - t0

    return run


class Idle(actors.Actor):
    async def receive(self, message: object) -> None:
        pass


def actor_spawn(n: int) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        t0 = _now()
        async with actors.open_system() as system:
            for _ in range(n):
                system.spawn(Idle)
            await trio.testing.wait_all_tasks_blocked()
        return _now() - t0

    return run


# -- memory -------------------------------------------------------------------------------------
def _memory(n: int, make: Callable[[trio.Nursery, actors.ActorSystem], None]) -> float:
    result: list[float] = []

    async def run() -> None:
        async with actors.open_system() as system, trio.open_nursery() as nursery:
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(n):
                make(nursery, system)
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            after = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            result.append((after - before) / n)
            nursery.cancel_scope.cancel()

    trio.run(run)
    return result[0]


def raw_task_memory(n: int) -> float:
    keep: list[object] = []

    def make(nursery: trio.Nursery, system: actors.ActorSystem) -> None:
        send, receive = trio.open_memory_channel[object](0)
        keep.append(send)

        async def task() -> None:
            async for _ in receive:
                pass

        nursery.start_soon(task)

    return _memory(n, make)


def actor_memory(n: int) -> float:
    def make(nursery: trio.Nursery, system: actors.ActorSystem) -> None:
        system.spawn(Idle)

    return _memory(n, make)


# -- report -------------------------------------------------------------------------------------
def measure(quick: bool = False) -> list[dict[str, object]]:
    repeats = 2 if quick else REPEATS
    n_ask = 2_000 if quick else 20_000
    n_tell = 20_000 if quick else 200_000
    n_spawn = 10_000
    rows: list[dict[str, object]] = []

    def row(name: str, unit: str, base: float, ours: float, target: str, ok: bool) -> None:
        rows.append(
            {
                "figure": name,
                "unit": unit,
                "baseline": base,
                "actors": ours,
                "ratio": ours / base if name != "tell throughput" else base / ours,
                "target": target,
                "met": ok,
            }
        )

    base = _best(raw_ask(n_ask), repeats)
    ours = _best(actor_ask(n_ask, actors.DEFAULT_ASK_TIMEOUT), repeats)
    row("ask round trip", "us/ask", base * 1e6, ours * 1e6, "<= 0.6x", ours / base <= 0.6)
    ours_nt = _best(actor_ask(n_ask, None), repeats)
    row("ask round trip (timeout=None)", "us/ask", base * 1e6, ours_nt * 1e6, "<= 0.6x",
        ours_nt / base <= 0.6)  # fmt: skip
    floor = _best(floor_ask(n_ask), repeats)
    row("trio floor: bare 2-task ping-pong", "us/ask", base * 1e6, floor * 1e6, "reference",
        True)  # fmt: skip

    base = _best(raw_tell(n_tell), repeats)
    ours = _best(actor_tell(n_tell), repeats)
    row("tell throughput", "us/msg", base * 1e6, ours * 1e6, ">= 10x", base / ours >= 10)
    ours_nw = _best(actor_tell_nowait(n_tell), repeats)
    rows.append(
        {
            "figure": "tell_nowait throughput",
            "unit": "us/msg",
            "baseline": base * 1e6,
            "actors": ours_nw * 1e6,
            "ratio": base / ours_nw,
            "target": ">= 10x",
            "met": base / ours_nw >= 10,
        }
    )

    base = _best(raw_spawn(n_spawn), repeats)
    ours = _best(actor_spawn(n_spawn), repeats)
    row("spawn+stop 10,000", "s", base, ours, "<= 2x", ours / base <= 2)

    n_mem = 2_000 if quick else 10_000
    base = raw_task_memory(n_mem)
    ours = actor_memory(n_mem)
    row("memory per idle actor", "bytes", base, ours, "<= 3072 B", ours <= 3072)
    return rows


def _explain_ask(rows: list[dict[str, object]]) -> None:
    """Say why an unmet ask target is unmet, from this run's own figures: how much of the
    target's budget trio's floor leaves for the work every actor ask does."""
    by_name = {r["figure"]: r for r in rows}
    ask, floor = by_name["ask round trip"], by_name["trio floor: bare 2-task ping-pong"]
    if ask["met"]:
        return
    base, ours, bare = (float(str(v)) for v in (ask["baseline"], ask["actors"], floor["actors"]))
    print(
        f"ask: trio's floor alone is {bare / base:.2f}x (two task steps, no work); the 0.6x "
        f"target leaves {0.6 * base - bare:.2f} us per ask for what every actor ask does on "
        f"top (a request slot, the mailbox, the actor's receive coroutine, the reply), which "
        f"takes {ours - bare:.2f} us here"
    )


def main(argv: list[str]) -> None:
    rows = measure(quick="--quick" in argv)
    if "--json" in argv:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'figure':32} {'baseline':>12} {'actors':>12} {'ratio':>7}  target    met")
    for r in rows:
        print(
            f"{r['figure']:32} {r['baseline']:>10.2f}{'':2} {r['actors']:>10.2f}{'':2} "
            f"{r['ratio']:>6.2f}x  {r['target']:9} {'yes' if r['met'] else 'NO'}   ({r['unit']})"
        )
    _explain_ask(rows)
    print(
        "ratios: ask/spawn = actors / baseline (lower is better); "
        "tell = baseline / actors (speed-up, higher is better); memory = raw task+channel "
        "baseline vs actor, target absolute"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
