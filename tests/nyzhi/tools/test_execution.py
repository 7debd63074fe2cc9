"""execute_calls: ordering, streaming, errors, cancellation; bash through the whole pipeline."""

from pathlib import Path

import pytest
import trio
from _fakes import Reader, Registry, Writer, make_tool
from _procs import marker_seconds, settled_alive

from nyzhi.tools.base import Permission, SandboxLevel, ToolContext, ToolResult, TrustMode
from nyzhi.tools.builtin.bash import BashTool
from nyzhi.tools.execution import (
    CANCELLED_TEXT,
    ToolCallFinished,
    ToolCallRequest,
    ToolCallStarted,
    ToolOutputDelta,
    execute_calls,
)
from nyzhi.tools.gates import Gates, TrustPolicy
from nyzhi.tools.sandbox import SandboxPolicy

FULL = Gates(trust=TrustPolicy(mode=TrustMode.FULL))


def ctx_for(ws: Path) -> ToolContext:
    return ToolContext(
        workspace_root=ws,
        cwd=ws,
        sandbox=SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, ws, allow_temp=False),
    )


async def test_read_only_calls_overlap_and_mutating_calls_do_not(tmp_path: Path):
    a_in, b_in = trio.Event(), trio.Event()
    log: list[str] = []

    async def ro_a(args, ctx):
        a_in.set()
        await b_in.wait()  # deadlocks unless b runs at the same time
        log.append("a")
        return ToolResult("a")

    async def ro_b(args, ctx):
        b_in.set()
        await a_in.wait()
        log.append("b")
        return ToolResult("b")

    active = {"n": 0, "max": 0}

    async def mut(args, ctx):
        active["n"] += 1
        active["max"] = max(active["max"], active["n"])
        await trio.lowlevel.checkpoint()
        await trio.testing.wait_all_tasks_blocked()  # give an overlapping call every chance
        log.append(f"m{args['i']}")
        active["n"] -= 1
        return ToolResult("m")

    reg = Registry(
        make_tool("ro_a", Permission.READ_ONLY, ro_a),
        make_tool("ro_b", Permission.READ_ONLY, ro_b),
        make_tool("mut", Permission.NEEDS_APPROVAL, mut),
    )
    calls = [
        ToolCallRequest("1", "ro_a", {}),
        ToolCallRequest("2", "ro_b", {}),
        ToolCallRequest("3", "mut", {"i": 1}),
        ToolCallRequest("4", "mut", {"i": 2}),
        ToolCallRequest("5", "ro_a", {}),
    ]
    a_in2 = trio.Event()

    async def ro_a_last(args, ctx):  # the last read runs after both mutations
        log.append("last")
        a_in2.set()
        return ToolResult("last")

    with trio.fail_after(10):
        outcomes = await execute_calls(calls[:4], registry=reg, gates=FULL, ctx=ctx_for(tmp_path))
    assert [o.call_id for o in outcomes] == ["1", "2", "3", "4"]
    assert sorted(log[:2]) == ["a", "b"] and log[2:] == ["m1", "m2"]
    assert active["max"] == 1
    reg.tools["ro_a"] = make_tool("ro_a", Permission.READ_ONLY, ro_a_last)
    log.clear()
    await execute_calls(calls[2:], registry=reg, gates=FULL, ctx=ctx_for(tmp_path))
    assert log == ["m1", "m2", "last"]  # a read after a write sees the write


async def test_errors_become_results_in_order(tmp_path: Path):
    async def boom(args, ctx):
        raise RuntimeError("kaput")

    reg = Registry(Reader(), Writer(), make_tool("boom", Permission.READ_ONLY, boom))
    calls = [
        ToolCallRequest("1", "reader", None, "invalid tool arguments: not valid JSON"),
        ToolCallRequest("2", "nope", {}),
        ToolCallRequest("3", "boom", {}),
        ToolCallRequest("4", "writer", {"path": "a"}),  # headless, trust off: denied
        ToolCallRequest("5", "reader", {"path": "x"}),
    ]
    outcomes = await execute_calls(calls, registry=reg, gates=Gates(), ctx=ctx_for(tmp_path))
    texts = [o.result.output for o in outcomes]
    assert [o.result.is_error for o in outcomes] == [True, True, True, True, False]
    assert "Invalid arguments" in texts[0] and "JSON" in texts[0]
    assert "Unknown tool `nope`" in texts[1]
    assert "RuntimeError: kaput" in texts[2]
    assert "Permission denied" in texts[3] and "--trust" in texts[3]
    assert outcomes[3].decision is not None and not outcomes[3].decision.allowed
    assert texts[4] == "read x" and outcomes[4].decision.allowed


async def test_registry_fence_is_the_first_gate(tmp_path: Path):
    class Fenced(Registry):
        def is_allowed(self, name):
            return name != "reader"

    outcomes = await execute_calls(
        [ToolCallRequest("1", "reader", {})],
        registry=Fenced(Reader()),
        gates=FULL,
        ctx=ctx_for(tmp_path),
    )
    assert "not available for this agent role" in outcomes[0].result.output


async def test_events_stream_with_call_ids(tmp_path: Path):
    events = []

    async def on_event(event):
        events.append(event)

    calls = [ToolCallRequest("c1", "bash", {"command": "echo one; echo two"})]
    outcomes = await execute_calls(
        calls, registry=Registry(BashTool()), gates=FULL, ctx=ctx_for(tmp_path), on_event=on_event
    )
    assert isinstance(events[0], ToolCallStarted) and events[0].call_id == "c1"
    deltas = "".join(e.text for e in events if isinstance(e, ToolOutputDelta))
    assert deltas == "one\ntwo\n"
    assert isinstance(events[-1], ToolCallFinished) and events[-1].outcome is outcomes[0]
    assert (
        outcomes[0].result.metadata["exit_code"] == 0 and outcomes[0].result.output == "one\ntwo\n"
    )


async def test_bash_calls_run_one_at_a_time_in_order(tmp_path: Path):
    order = []

    async def on_event(event):
        if isinstance(event, ToolCallStarted | ToolCallFinished):
            cid = event.call_id if isinstance(event, ToolCallStarted) else event.outcome.call_id
            order.append((type(event).__name__, cid))

    calls = [
        ToolCallRequest("1", "bash", {"command": "echo a >> log.txt"}),
        ToolCallRequest("2", "bash", {"command": "echo b >> log.txt"}),
        ToolCallRequest("3", "bash", {"command": "cat log.txt"}),
    ]
    outcomes = await execute_calls(
        calls, registry=Registry(BashTool()), gates=FULL, ctx=ctx_for(tmp_path), on_event=on_event
    )
    assert outcomes[2].result.output == "a\nb\n"
    starts_and_ends = [kind[8] for kind, _ in order]  # 'S'tarted / 'F'inished
    assert starts_and_ends == ["S", "F", "S", "F", "S", "F"]
    assert [cid for _, cid in order] == ["1", "1", "2", "2", "3", "3"]


async def test_cancellation_yields_a_result_for_every_call_and_kills_processes(tmp_path: Path):
    mark = marker_seconds()
    ready = trio.Event()

    async def on_event(event):
        if isinstance(event, ToolOutputDelta) and "ready" in event.text:
            ready.set()

    calls = [
        ToolCallRequest("1", "bash", {"command": "echo done-first"}),
        ToolCallRequest(
            "2", "bash", {"command": f"sleep {mark} & echo ready; wait", "timeout": 600}
        ),
        ToolCallRequest("3", "bash", {"command": "echo never"}),
    ]
    into: list = []
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: execute_calls(
                    calls,
                    registry=Registry(BashTool()),
                    gates=FULL,
                    ctx=ctx_for(tmp_path),
                    on_event=on_event,
                    into=into,
                )
            )
            await ready.wait()
            scope.cancel()
    assert scope.cancelled_caught
    assert [o.call_id for o in into] == ["1", "2", "3"]
    assert into[0].result.output == "done-first\n" and not into[0].cancelled
    assert into[1].cancelled and into[1].result.is_error and into[1].result.output == CANCELLED_TEXT
    assert into[2].cancelled and CANCELLED_TEXT in into[2].result.output
    assert await settled_alive(f"sleep {mark}") == []


def test_needs_exactly_one_context_source():
    with pytest.raises(TypeError):
        trio.run(lambda: execute_calls([], registry=Registry(), gates=FULL))


async def test_a_burst_of_calls_is_gated_one_per_scheduler_batch(tmp_path: Path):
    """100 agents calling at once must not gate all 100 calls in one batch of the trio
    scheduler: the loop (timers, the console's keys) would wait behind all of them."""
    batch = {"n": 0}
    seen: list[int] = []

    class Counted(Reader):
        def target_paths(self, args):  # runs in the gate's synchronous part
            seen.append(batch["n"])
            return []

    async def pacer() -> None:  # runs once per scheduler batch
        while True:
            batch["n"] += 1
            await trio.lowlevel.checkpoint()

    registry, ctx = Registry(Counted()), ctx_for(tmp_path)

    async def agent(i: int) -> None:
        await execute_calls([ToolCallRequest(f"c{i}", "reader", {})], registry=registry,
                            gates=FULL, ctx=ctx)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pacer)
        async with trio.open_nursery() as agents:
            for i in range(100):
                agents.start_soon(agent, i)
        nursery.cancel_scope.cancel()
    assert len(seen) == 100
    # Without admission every gate shares one batch; with it, at most a couple share one.
    assert max(seen.count(n) for n in set(seen)) <= 2


async def test_admission_is_not_held_while_a_call_waits_for_approval(tmp_path: Path):
    from nyzhi.tools.gates import ApprovalDecision

    asked, release = trio.Event(), trio.Event()

    async def approver(request):
        asked.set()
        await release.wait()
        return ApprovalDecision.deny("no")

    ran = trio.Event()

    async def quick(args, ctx):
        ran.set()
        return ToolResult("ok")

    registry = Registry(Writer(), make_tool("quick", Permission.READ_ONLY, quick))
    ctx = ctx_for(tmp_path)
    asking = Gates(trust=TrustPolicy(mode=TrustMode.OFF), approver=approver)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: execute_calls(
            [ToolCallRequest("w", "writer", {"path": "a.txt"})], registry=registry, gates=asking,
            ctx=ctx))
        await asked.wait()
        with trio.fail_after(60):  # a deadlock, if admission were held across the prompt
            [outcome] = await execute_calls([ToolCallRequest("q", "quick", {})],
                                            registry=registry, gates=FULL, ctx=ctx)
        assert ran.is_set() and outcome.result.output == "ok"
        release.set()
