"""Write leases: one writer per real path across the agents of a runtime tree."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing

from nyzhi.tools.base import Tool, ToolContext
from nyzhi.tools.builtin.files_write import EditTool
from nyzhi.tools.execution import ToolCallRequest, execute_calls
from nyzhi.tools.gates import Gates, TrustMode, TrustPolicy
from nyzhi.tools.leases import LeaseBusy, LeaseTable
from nyzhi.tools.registry import ToolRegistry
from nyzhi.tools.sandbox import SandboxLevel, SandboxPolicy


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("a = 1\nb = 2\n")
    return root


def agent_ctx(ws: Path, path: str, table: LeaseTable) -> ToolContext:
    return ToolContext(
        workspace_root=ws, cwd=ws, agent_path=path, leases=table,
        sandbox=SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, ws, allow_temp=False),
    )


def registry_with(*tools: Tool) -> ToolRegistry:
    registry = ToolRegistry()
    for tool in tools:
        registry.register(tool)
    return registry


FULL = Gates(trust=TrustPolicy(mode=TrustMode.FULL))


async def run_call(registry, ctx, name, args):
    outcomes = await execute_calls([ToolCallRequest(f"c-{name}", name, args)], registry=registry,
                                   gates=FULL, ctx=ctx)
    return outcomes[0].result


async def test_two_agents_race_to_edit_one_file_and_neither_edit_is_lost(ws, slow_append):
    table = LeaseTable()
    slow = slow_append
    registry = registry_with(slow, EditTool())
    worker1 = agent_ctx(ws, "/agents/main/worker-1", table)
    worker2 = agent_ctx(ws, "/agents/main/worker-2", table)
    results = {}

    async def first():
        results[1] = await run_call(registry, worker1, "slow_append",
                                    {"path": "src/app.py", "line": "c = 3"})

    async def second():
        # the same file by another spelling: the lease is on the real path
        results[2] = await run_call(registry, worker2, "edit", {
            "file_path": "src/../src/app.py", "old_string": "a = 1", "new_string": "a = 10"})

    async with trio.open_nursery() as nursery:
        nursery.start_soon(first)
        await slow.entered.wait()
        assert table.holder_of(ws / "src" / "app.py") == "/agents/main/worker-1"
        nursery.start_soon(second)
        await trio.testing.wait_all_tasks_blocked()
        # the edit is parked on the lease, not done: without the lease it would have written
        # now and the slow append would overwrite it with its stale copy
        assert 2 not in results
        assert (ws / "src" / "app.py").read_text() == "a = 1\nb = 2\n"
        slow.release.set()
    assert not results[1].is_error and not results[2].is_error, results
    assert (ws / "src" / "app.py").read_text() == "a = 10\nb = 2\nc = 3\n"
    assert table.held_by("/agents/main/worker-1") == table.held_by("/agents/main/worker-2") == []


async def test_a_holder_past_the_bound_gives_the_named_error(ws, autojump_clock, slow_append):
    table = LeaseTable()  # the default bound: 30 s
    slow = slow_append
    registry = registry_with(slow, EditTool())
    holder = agent_ctx(ws, "/agents/main/worker-2", table)
    waiter = agent_ctx(ws, "/agents/main/worker-1", table)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_call, registry, holder, "slow_append",
                           {"path": "src/app.py", "line": "x"})
        await slow.entered.wait()
        start = trio.current_time()
        result = await run_call(registry, waiter, "edit", {
            "file_path": "src/app.py", "old_string": "b = 2", "new_string": "b = 20"})
        waited = trio.current_time() - start
        slow.release.set()
    assert result.is_error
    assert result.output.startswith("/agents/main/worker-2 is editing src/app.py")
    assert result.metadata["lease_holder"] == "/agents/main/worker-2"
    assert 30 <= waited < 31
    assert "b = 20" not in (ws / "src" / "app.py").read_text()


async def test_symlinks_share_the_lease_and_reads_take_none(ws, autojump_clock):
    table = LeaseTable(wait=5)
    os.symlink(ws / "src" / "app.py", ws / "link.py")
    lease = await table.acquire([ws / "link.py"], "/agents/main/a")
    assert table.holder_of(ws / "src" / "app.py") == "/agents/main/a"
    with pytest.raises(LeaseBusy, match=r"^/agents/main/a is editing src/app\.py \(waited 5 s"):
        await table.acquire(["src/app.py"], "/agents/main/b", root=ws)
    # the holder itself does not wait for its own lease, and only the outer lease releases it
    inner = await table.acquire([ws / "src" / "app.py"], "/agents/main/a", wait=0)
    table.release(inner)
    assert table.holder_of(ws / "src" / "app.py") == "/agents/main/a"
    table.release(lease)
    assert table.holder_of(ws / "src" / "app.py") is None


async def test_leases_are_released_when_the_call_is_cancelled(ws, slow_append):
    table = LeaseTable()
    slow = slow_append
    registry = registry_with(slow)
    ctx = agent_ctx(ws, "/agents/main/w", table)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_call, registry, ctx, "slow_append",
                               {"path": "src/app.py", "line": "x"})
            await slow.entered.wait()
            assert table.held_by("/agents/main/w")
            scope.cancel()
    assert table.held_by("/agents/main/w") == []


async def test_release_all_frees_an_agent_and_its_subtree_and_wakes_waiters(ws):
    table = LeaseTable()
    await table.acquire([ws / "a"], "/agents/main/w")
    await table.acquire([ws / "b"], "/agents/main/w/child")
    await table.acquire([ws / "c"], "/agents/main/w2")
    got = []

    async def wait_for_a():
        got.append(await table.acquire([ws / "a", ws / "b"], "/agents/main/other"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait_for_a)
        await trio.testing.wait_all_tasks_blocked()
        assert got == []
        freed = table.release_all("/agents/main/w")
        assert sorted(freed) == [ws / "a", ws / "b"]
    assert got[0].holder == "/agents/main/other"
    assert table.holder_of(ws / "c") == "/agents/main/w2"  # a sibling with a similar name


async def test_a_call_takes_all_its_paths_or_none(ws, autojump_clock):
    """Two calls each wanting both files never deadlock holding one each."""
    table = LeaseTable(wait=1)
    first = await table.acquire([ws / "x"], "/agents/main/a")
    with pytest.raises(LeaseBusy):
        await table.acquire([ws / "y", ws / "x"], "/agents/main/b")
    assert table.holder_of(ws / "y") is None  # b took nothing while it waited
    table.release(first)


async def test_contexts_derived_from_one_share_its_table(ws):
    ctx = ToolContext(workspace_root=ws, cwd=ws)
    child = attrs.evolve(ctx, agent_path="/agents/main/child")
    assert child.leases is ctx.leases and isinstance(ctx.leases, LeaseTable)
    assert ToolContext(workspace_root=ws, cwd=ws).leases is not ctx.leases
