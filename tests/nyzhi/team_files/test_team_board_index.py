"""The board's index: listing reads one file, not one per task; an index that a crash left
stale, that is missing or corrupt, or that disagrees with the task files is rebuilt from them
(the task files are the truth)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nyzhi.team_files import locking
from nyzhi.team_files.board import TaskBoard

ROOT = Path(__file__).resolve().parents[3]


def _board(tmp_path: Path, n: int = 5) -> TaskBoard:
    board = TaskBoard(tmp_path / "tasks" / "t")
    for i in range(n):
        board.create(f"task {i + 1}", blocked_by=[str(i)] if i else [])
    return board


def test_listing_reads_the_index_not_every_task(tmp_path):
    board = _board(tmp_path, 50)
    before = locking.COUNTS["reads"]
    tasks = TaskBoard(board.dir).list()
    assert locking.COUNTS["reads"] - before == 1  # index.json alone
    assert [t.subject for t in tasks] == [f"task {i}" for i in range(1, 51)]
    assert [t.status for t in tasks[:2]] == ["pending", "blocked"]
    assert board.list(status="blocked") == tasks[1:]


def test_the_index_follows_every_change(tmp_path):
    board = _board(tmp_path, 3)
    board.update("1", status="in_progress", by="amy")
    board.update("1", status="completed", by="amy")  # unblocks 2
    fresh = TaskBoard(board.dir)
    listed = {t.id: t for t in fresh.list()}
    assert listed["1"].status == "completed" and listed["1"].owner == "amy"
    assert listed["2"].status == "pending" and listed["2"].blocked_by == []
    assert listed == {t.id: fresh.get(t.id) for t in fresh.list()}  # same as the files
    assert fresh.rebuilds == 0


@pytest.mark.parametrize("damage", ["missing", "garbage", "wrong shape", "stale ids"])
def test_a_damaged_index_is_rebuilt(tmp_path, damage):
    board = _board(tmp_path, 4)
    if damage == "missing":
        board.index_path.unlink()
    elif damage == "garbage":
        board.index_path.write_bytes(b"\x00{not json")
    elif damage == "wrong shape":
        board.index_path.write_text('{"tasks": 3}')
    else:  # a task file removed behind the index's back
        (board.dir / "4.json").unlink()
    fresh = TaskBoard(board.dir)
    tasks = fresh.list()
    expected = 3 if damage == "stale ids" else 4
    assert [t.id for t in tasks] == [str(i) for i in range(1, expected + 1)]
    assert fresh.rebuilds == 1
    assert TaskBoard(board.dir).list() == tasks  # rebuilt on disk: the next reader trusts it
    before = locking.COUNTS["reads"]
    TaskBoard(board.dir).list()
    assert locking.COUNTS["reads"] - before == 1


CRASH = """
import os, sys
from nyzhi.team_files.board import TaskBoard
board = TaskBoard(sys.argv[1])
def die(by_id):  # killed after the task files, before the index
    os._exit(9)
board._write_index = die
board.update("1", status="completed", by="amy")
"""


def test_a_crash_between_task_files_and_index_is_mended(tmp_path):
    board = _board(tmp_path, 2)
    proc = subprocess.run([sys.executable, "-c", CRASH, str(board.dir)],
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 9
    assert board.dirty_path.exists()  # the marker says the index is stale
    fresh = TaskBoard(board.dir)
    tasks = {t.id: t for t in fresh.list()}
    assert tasks["1"].status == "completed"  # the task file's truth, not the old index
    assert fresh.rebuilds == 1 and not board.dirty_path.exists()
    # and the board carries on: the dependent is mended when it is next changed
    change = fresh.update("2", status="in_progress", by="ben")
    assert change.task.status == "in_progress" and change.task.blocked_by == []


def test_delete_all_removes_the_index(tmp_path):
    board = _board(tmp_path, 2)
    board.delete_all()
    assert not board.index_path.exists() and board.list() == []
    assert board.create("again").id == "1"
