"""The file tools do their disk I/O in worker threads, never on the trio thread (issue 14 §4).

Each test holds a real resource the tool's disk work needs (the pool's thread tokens, or the
transaction lock) and checks that the trio loop keeps running while the tool waits for it. A
tool that did its I/O on the trio thread would either finish without the resource or block
the whole loop; a guard timer releases the lock after 10 s so a regression fails instead of
hanging.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import trio
import trio.testing
from _toolctx import make_ctx

from nyzhi.tools.builtin.files_read import FileInfoTool, ListDirTool, ReadTool, TailFileTool
from nyzhi.tools.builtin.files_write import EditTool, MultiEditTool, WriteTool
from nyzhi.tools.builtin.planning import TodoWriteTool
from nyzhi.tools.builtin.search import GlobTool
from nyzhi.tools.offload import io_limiter
from nyzhi.tools.undo import TRANSACTION_LOCK

CALLS = [
    (WriteTool, {"file_path": "new.txt", "content": "x\n"}),
    (EditTool, {"file_path": "a.txt", "old_string": "one", "new_string": "uno"}),
    (ReadTool, {"file_path": "a.txt"}),
    (TailFileTool, {"path": "a.txt"}),
    (ListDirTool, {"path": "."}),
    (FileInfoTool, {"path": "a.txt"}),
    (GlobTool, {"pattern": "*.txt"}),
    (TodoWriteTool, {"todos": [{"id": "1", "content": "c", "status": "pending"}]}),
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n")
    return root


@pytest.mark.parametrize(("tool", "args"), CALLS, ids=[t.name for t, _ in CALLS])
async def test_disk_work_waits_for_the_io_pool(ws: Path, tool, args) -> None:
    ctx = make_ctx(ws, session_id="s1")
    limiter = io_limiter()
    holders = [object() for _ in range(int(limiter.total_tokens))]
    for holder in holders:
        await limiter.acquire_on_behalf_of(holder)
    results = []

    async def call() -> None:
        results.append(await tool().run(args, ctx))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call)
        await trio.testing.wait_all_tasks_blocked()
        assert results == []  # waiting for a thread, with the loop free
        assert limiter.statistics().tasks_waiting == 1
        for holder in holders:
            limiter.release_on_behalf_of(holder)
    assert not results[0].is_error, results[0].output


async def test_a_write_runs_in_a_thread_while_the_loop_keeps_going(ws: Path) -> None:
    ctx = make_ctx(ws)
    assert TRANSACTION_LOCK.acquire(timeout=5)
    guard = threading.Timer(10, TRANSACTION_LOCK.release)
    guard.start()
    try:
        results = []

        async def call() -> None:
            results.append(await WriteTool().run({"file_path": "b.txt", "content": "b\n"}, ctx))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            await trio.testing.wait_all_tasks_blocked()
            # The tool's thread is blocked on the lock; the trio loop is not.
            assert results == [] and not (ws / "b.txt").exists()
            guard.cancel()
            TRANSACTION_LOCK.release()
    finally:
        guard.cancel()
    assert results[0].output.startswith("Created b.txt")
    assert (ws / "b.txt").read_text() == "b\n"


async def test_a_started_write_finishes_and_is_recorded_when_cancelled(ws: Path) -> None:
    ctx = make_ctx(ws)
    assert TRANSACTION_LOCK.acquire(timeout=5)
    guard = threading.Timer(10, TRANSACTION_LOCK.release)
    guard.start()
    try:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(WriteTool().run, {"file_path": "c.txt", "content": "c\n"}, ctx)
                await trio.testing.wait_all_tasks_blocked()
                scope.cancel()
                guard.cancel()
                TRANSACTION_LOCK.release()
    finally:
        guard.cancel()
    assert scope.cancel_called  # the cancel came while the thread ran: it did not cut it short
    assert (ws / "c.txt").read_text() == "c\n"
    assert [c.path.name for c in ctx.changes.changes if c.kind == "file"] == ["c.txt"]


async def test_concurrent_edits_of_one_file_all_land(ws: Path) -> None:
    # Writes run in threads now; the transaction lock keeps read-modify-write whole, so no
    # edit is lost to another that read the file before it was written.
    (ws / "m.txt").write_text("".join(f"line {i}\n" for i in range(20)))
    ctx = make_ctx(ws)
    async with trio.open_nursery() as nursery:
        for i in range(20):
            args = {"file_path": "m.txt", "old_string": f"line {i}\n", "new_string": f"LINE {i}\n"}
            nursery.start_soon(EditTool().run, args, ctx)
        args = {"edits": [{"file": "a.txt", "replacements": [{"old": "two", "new": "dos"}]}]}
        nursery.start_soon(MultiEditTool().run, args, ctx)
    assert (ws / "m.txt").read_text() == "".join(f"LINE {i}\n" for i in range(20))
    assert (ws / "a.txt").read_text() == "one\ndos\n"
    assert len({c.batch for c in ctx.changes.changes}) == 21


async def test_concurrent_todowrites_both_reach_the_file(ws: Path) -> None:
    ctx = make_ctx(ws, session_id="s2")
    async with trio.open_nursery() as nursery:
        for tid in ("a", "b"):
            todos = [{"id": tid, "content": f"task {tid}", "status": "pending"}]
            nursery.start_soon(TodoWriteTool().run, {"todos": todos}, ctx)
    saved = (ws / ".nyzhi" / "todos" / "s2.json").read_text()
    assert '"task a"' in saved and '"task b"' in saved
