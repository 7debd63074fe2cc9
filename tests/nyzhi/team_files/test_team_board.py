"""The task board: ids, the dependency graph, claiming, and mending after a crash."""

from __future__ import annotations

import json

import pytest

from nyzhi.team_files.board import TaskBoard, TaskStatus, check_task_id
from nyzhi.team_files.errors import TaskClaimError, TeamError


@pytest.fixture
def board(tmp_path):
    return TaskBoard(tmp_path / "tasks" / "t")


def statuses(board: TaskBoard) -> dict[str, str]:
    return {t.id: str(t.status) for t in board.list()}


def test_ids_count_up_and_files_use_the_originals_keys(board):
    a = board.create("A", description="first", active_form="doing A")
    b = board.create("B", blocked_by=[a.id])
    assert (a.id, b.id) == ("1", "2")
    raw = json.loads((board.dir / "2.json").read_text())
    assert raw["blockedBy"] == ["1"] and raw["status"] == "blocked"
    assert json.loads((board.dir / "1.json").read_text())["blocks"] == ["2"]
    assert board.get("1").active_form == "doing A" and board.get("#1").description == "first"
    assert json.loads(board.mark_path.read_text()) == 2


def test_three_task_graph_unblocks_in_order(board):
    a, b = board.create("A"), board.create("B")
    c = board.create("C", blocked_by=[a.id, b.id, a.id])
    assert c.status == TaskStatus.BLOCKED and c.blocked_by == ["1", "2"]
    with pytest.raises(TeamError, match="task 3 is blocked by unfinished tasks 1, 2"):
        board.update("3", status="in_progress", by="carol")
    change = board.update("1", status="in_progress", by="alice")
    assert change.task.owner == "alice" and not change.completed
    change = board.update("1", status="completed", by="alice")
    assert change.completed and change.unblocked == []
    assert board.get("3").blocked_by == ["2"] and statuses(board)["3"] == "blocked"
    with pytest.raises(TeamError, match="blocked by unfinished tasks 2;"):
        board.update("3", status="completed")
    change = board.update("2", status="completed", by="bob")
    assert [t.id for t in change.unblocked] == ["3"] and change.unblocked[0].status == "pending"
    assert statuses(board) == {"1": "completed", "2": "completed", "3": "pending"}
    assert board.update("3", status="in_progress", by="carol").task.owner == "carol"
    assert not board.update("1", status="completed").completed  # only the first time


def test_deleting_a_blocker_unblocks_too(board):
    a = board.create("A")
    board.create("B", blocked_by=[a.id])
    change = board.update("1", status="deleted")
    assert [t.id for t in change.unblocked] == ["2"] and not change.completed
    assert statuses(board)["2"] == "pending"
    with pytest.raises(TeamError, match="task 1 is deleted"):
        board.update("1", status="pending")
    with pytest.raises(TeamError, match="task 1 is deleted; it cannot block"):
        board.create("C", blocked_by=["1"])
    assert [t.id for t in board.list("deleted")] == ["1"]


def test_a_task_depending_on_a_completed_one_starts_pending(board):
    board.create("A")
    board.update("1", status="completed")
    assert board.create("B", blocked_by=["1"]).status == TaskStatus.PENDING


def test_claim_rules(board):
    board.create("A")
    board.update("1", status="in_progress", by="alice")
    with pytest.raises(TaskClaimError, match="task 1 is owned by alice"):
        board.update("1", status="in_progress", by="bob")
    with pytest.raises(TaskClaimError, match="task 1 is owned by alice"):
        board.update("1", owner="bob", by="lead")
    assert board.get("1").owner == "alice"
    board.update("1", status="in_progress", by="alice")  # the owner again: fine
    board.update("1", owner="", by="lead")  # released
    assert board.get("1").owner is None
    assert board.update("1", owner="bob", by="lead").task.owner == "bob"
    assert board.update("1", status="completed", by="lead").task.owner == "bob"
    board.create("B")
    assert board.update("2", status="in_progress").task.owner is None  # nobody named


def test_bad_input_is_a_clear_error(board):
    with pytest.raises(TeamError, match="needs a subject"):
        board.create("  ")
    with pytest.raises(TeamError, match="no task 7 to depend on"):
        board.create("X", blocked_by=["7"])
    with pytest.raises(TeamError, match=r"no task 9 on this board \(task_list shows"):
        board.update("9", status="completed")
    with pytest.raises(TeamError, match="invalid task status 'done': use one of pending"):
        board.update("1", status="done")
    with pytest.raises(TeamError, match="invalid task id '../x'"):
        check_task_id("../x")
    with pytest.raises(TeamError, match="invalid task status"):
        board.list("done")
    assert board.list() == [] and not (board.dir / "1.json").exists()


def test_ids_are_never_reused(board):
    for s in "ABC":
        board.create(s)
    board.mark_path.unlink()  # a lost mark: the files still count
    assert board.create("D").id == "4"
    board.delete_all()
    assert board.list() == [] and board.create("E").id == "1"
    assert [t.id for t in board.list()] == ["1"]


def test_list_sorts_by_number(board):
    for i in range(11):
        board.create(f"T{i}")
    assert [t.id for t in board.list()][-3:] == ["9", "10", "11"]
    board.update("10", status="completed")
    assert [t.id for t in board.list("completed")] == ["10"]


def test_a_crash_between_completing_and_unblocking_is_mended(board):
    board.create("A")
    board.create("B", blocked_by=["1"])
    # what a kill -9 after writing the completed task (before its dependents) leaves behind
    raw = json.loads((board.dir / "1.json").read_text())
    raw["status"] = "completed"
    (board.dir / "1.json").write_text(json.dumps(raw))
    assert statuses(board)["2"] == "blocked"
    change = board.update("2", status="in_progress", by="alice")
    assert change.task.status == "in_progress" and change.task.blocked_by == []
    board.create("C")
    board.create("D", blocked_by=["3"])
    raw = json.loads((board.dir / "3.json").read_text())
    raw["status"] = "deleted"
    (board.dir / "3.json").write_text(json.dumps(raw))
    mended = board.update("4", owner="bob").task  # any update of the dependent mends it
    assert mended.status == "pending" and mended.blocked_by == [] and mended.owner == "bob"
