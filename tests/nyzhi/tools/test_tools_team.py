"""The nine team tools through a ToolContext: on the files alone, and with a team control.

The control here records what the tools tell the runtime (the team runtime is its own module,
tested end to end there); the store underneath is the real one, on real files.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path

import pytest
import trio
import trio.testing
from _toolctx import make_ctx

from nyzhi.team_files.store import Member, TeamConfig, TeamStore
from nyzhi.tools.base import Permission
from nyzhi.tools.builtin.agents import AgentControlError
from nyzhi.tools.builtin.team import (
    NO_RUNTIME,
    TEAMMATE_TOOLS,
    TOOLS,
    ReadInboxTool,
    SendTeamMessageTool,
    SpawnTeammateTool,
    TaskCreateTool,
    TaskListTool,
    TaskUpdateTool,
    TeamCreateTool,
    TeamDeleteTool,
    TeamListTool,
)
from nyzhi.tools.registry import default_registry


class RecordingControl:
    """Stands in for the team runtime: records each call, answers spawn like it would."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    async def team_created(self, config, caller_path):
        self.calls.append(("team_created", config.name, caller_path))

    async def team_deleted(self, name):
        self.calls.append(("team_deleted", name, TeamStore().exists(name)))

    async def messages_sent(self, team, messages):
        self.calls.append(("messages_sent", team, [(m.sender, m.text) for m in messages]))

    async def task_changed(self, team, change):
        self.calls.append(("task_changed", team, change.task.id, change.completed,
                           [t.id for t in change.unblocked]))

    async def spawn_teammate(self, team, name, message, role, model, caller_path):
        if name == "busy":
            raise AgentControlError("thread limit reached (6 agents)")
        self.calls.append(("spawn_teammate", team, name, message, role, model, caller_path))
        return {"member": name, "path": f"/team/{team}/{name}"}


@pytest.fixture
def ws(tmp_path: Path, home) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def team(ws) -> str:
    TeamStore().create(TeamConfig("t", members=[Member("alice"), Member("bob")]))
    return "t"


def ok(result) -> str:
    assert not result.is_error, result.output
    return result.output


def test_registered_with_permissions_and_deferral():
    registry = default_registry()
    for cls in TOOLS:
        tool = registry.get(cls.name)
        assert isinstance(tool.load(), cls)  # the manifest's entry is this class's tool
        expected = Permission.NEEDS_APPROVAL if cls.name == "team_delete" else Permission.READ_ONLY
        assert tool.permission is expected and not tool.writes_files
        assert registry.is_deferred(cls.name) == (cls.name not in TEAMMATE_TOOLS)
    assert len(TOOLS) == 9


async def test_team_create_list_and_delete_on_files_alone(ws):
    ctx = make_ctx(ws)
    out = ok(await TeamCreateTool().run(
        {"name": "alpha", "members": [{"name": "alice", "role": "worker"},
                                      {"name": "bob", "model": "m2"}]}, ctx))
    assert out == "team 'alpha' created; you are 'lead'; members: alice (worker), bob (default)"
    config = TeamStore().load("alpha")
    assert config.names() == ["lead", "alice", "bob"] and config.cwd == str(ws)
    assert config.member("bob").model == "m2"
    await TaskCreateTool().run({"subject": "A", "team": "alpha"}, ctx)
    listed = ok(await TeamListTool().run({}, ctx))
    assert listed == "alpha: lead, alice, bob (in-process); tasks 0/1 completed"
    again = await TeamCreateTool().run({"name": "alpha"}, ctx)
    assert again.is_error and "team 'alpha' already exists" in again.output
    bad = await TeamCreateTool().run({"name": "beta", "members": ["alice"]}, ctx)
    assert bad.is_error and "'members' must be an array" in bad.output
    assert ok(await TeamDeleteTool().run({"name": "alpha"}, ctx)) == "team 'alpha' deleted"
    assert ok(await TeamListTool().run({}, ctx)) == "no teams (team_create makes one)"
    gone = await TeamDeleteTool().run({"name": "alpha"}, ctx)
    assert gone.is_error and "no team 'alpha'" in gone.output


async def test_no_team_is_a_clear_error_for_every_team_scoped_tool(ws):
    ctx = make_ctx(ws)
    for tool, args in [(SendTeamMessageTool, {"to": "a", "message": "x"}), (ReadInboxTool, {}),
                       (TaskCreateTool, {"subject": "x"}), (TaskListTool, {}),
                       (TaskUpdateTool, {"task_id": "1", "status": "completed"}),
                       (TeamDeleteTool, {})]:
        result = await tool().run(args, ctx)
        assert result.is_error and "no team: pass '" in result.output, tool.name
        assert "team_create" in result.output


async def test_messages_between_lead_and_members(ws, team):
    lead = make_ctx(ws, team_name=team)  # team_member unset: the lead
    alice = make_ctx(ws, team_name=team, team_member="alice")
    assert ok(await SendTeamMessageTool().run({"to": "alice", "message": "take task 1"}, lead)) \
        == "sent to alice"
    assert ok(await ReadInboxTool().run({}, alice)) == "[message from lead]\n> take task 1"
    assert ok(await ReadInboxTool().run({}, alice)) == "no new messages"
    # the original's parameter name still works, and 'all' skips the sender
    out = ok(await SendTeamMessageTool().run({"to": "all", "text": "done"}, alice))
    assert out == "sent to all (2 members)"
    assert ok(await ReadInboxTool().run({"team": team}, lead)) == "[message from alice]\n> done"
    bob = make_ctx(ws, team_name=team, team_member="bob")
    await SendTeamMessageTool().run({"to": "bob", "message": "second"}, lead)
    assert ok(await ReadInboxTool().run({}, bob)) == \
        "[message from alice]\n> done\n\n[message from lead]\n> second"
    unknown = await SendTeamMessageTool().run({"to": "carol", "message": "hi"}, lead)
    assert unknown.is_error and "members: lead, alice, bob" in unknown.output
    empty = await SendTeamMessageTool().run({"to": "bob"}, lead)
    assert empty.is_error and "'message' is required" in empty.output


async def test_task_tools_walk_a_dependency_graph(ws, team):
    alice = make_ctx(ws, team_name=team, team_member="alice")
    bob = make_ctx(ws, team_name=team, team_member="bob")
    assert ok(await TaskCreateTool().run({"subject": "A"}, alice)) == "created #1 [pending] A"
    await TaskCreateTool().run({"subject": "B"}, alice)
    out = ok(await TaskCreateTool().run({"subject": "C", "blocked_by": ["1", 2]}, alice))
    assert out == "created #3 [blocked] C blocked by 1, 2"
    assert ok(await TaskUpdateTool().run({"task_id": "1", "status": "in_progress"}, alice)) == \
        "updated #1 [in_progress] A (owner alice)"
    claim = await TaskUpdateTool().run({"task_id": 1, "status": "in_progress"}, bob)
    assert claim.is_error and claim.output == "task 1 is owned by alice"
    early = await TaskUpdateTool().run({"task_id": "3", "status": "in_progress"}, bob)
    assert early.is_error and "blocked by unfinished tasks 1, 2" in early.output
    await TaskUpdateTool().run({"task_id": "1", "status": "completed"}, alice)
    out = ok(await TaskUpdateTool().run({"task_id": "2", "status": "completed"}, bob))
    assert out == "updated #2 [completed] B\nunblocked: #3 [pending] C"
    assert ok(await TaskListTool().run({}, bob)) == (
        "#1 [completed] A (owner alice)\n#2 [completed] B\n#3 [pending] C\n"
        "(2/3 completed)")
    assert ok(await TaskListTool().run({"filter": "pending"}, bob)) == "#3 [pending] C"
    assert ok(await TaskListTool().run({"filter": "blocked"}, bob)) == "no blocked tasks"
    bad = await TaskListTool().run({"filter": "done"}, bob)
    assert bad.is_error and "invalid task status 'done'" in bad.output
    nothing = await TaskUpdateTool().run({"task_id": "3"}, bob)
    assert nothing.is_error and "pass 'status' or 'owner'" in nothing.output
    await TaskUpdateTool().run({"task_id": "3", "status": "deleted"}, bob)
    assert "#3" not in ok(await TaskListTool().run({}, bob))  # deleted: hidden unless asked


async def test_the_control_hears_every_change(ws):
    control = RecordingControl()
    ctx = make_ctx(ws, teams=control, agent_path="/agents/main")
    await TeamCreateTool().run({"name": "t", "members": [{"name": "alice"}]}, ctx)
    ctx = make_ctx(ws, teams=control, agent_path="/agents/main", team_name="t")
    await SendTeamMessageTool().run({"to": "alice", "message": "hi"}, ctx)
    await TaskCreateTool().run({"subject": "A"}, ctx)
    await TaskCreateTool().run({"subject": "B", "blocked_by": ["1"]}, ctx)
    await TaskUpdateTool().run({"task_id": "1", "status": "completed"}, ctx)
    out = ok(await SpawnTeammateTool().run(
        {"name": "bob", "message": "review A", "role": "reviewer"}, ctx))
    assert json.loads(out) == {"member": "bob", "path": "/team/t/bob"}
    refused = await SpawnTeammateTool().run({"name": "busy", "message": "x"}, ctx)
    assert refused.is_error and refused.output == "thread limit reached (6 agents)"
    await TeamDeleteTool().run({}, ctx)
    assert control.calls == [
        ("team_created", "t", "/agents/main"),
        ("messages_sent", "t", [("lead", "hi")]),
        ("task_changed", "t", "1", False, []),
        ("task_changed", "t", "2", False, []),
        ("task_changed", "t", "1", True, ["2"]),
        ("spawn_teammate", "t", "bob", "review A", "reviewer", None, "/agents/main"),
        ("team_deleted", "t", True),  # told before the files go, so it can stop teammates
    ]
    assert not TeamStore().exists("t")


async def test_spawn_teammate_needs_the_runtime_and_a_good_name(ws, team):
    ctx = make_ctx(ws, team_name=team)
    result = await SpawnTeammateTool().run({"name": "carol", "message": "go"}, ctx)
    assert result.is_error and result.output == NO_RUNTIME
    ctx = make_ctx(ws, team_name=team, teams=RecordingControl())
    for name, match in [("lead", "'lead' is the team's lead"), ("all", "reserved"),
                        ("../x", "invalid member name")]:
        result = await SpawnTeammateTool().run({"name": name, "message": "go"}, ctx)
        assert result.is_error and match in result.output
    ghost = await SpawnTeammateTool().run({"name": "c", "message": "go", "team": "ghost"}, ctx)
    assert ghost.is_error and "no team 'ghost'" in ghost.output


async def test_board_work_waits_in_a_thread_with_the_loop_free(ws, team):
    """Another process holds the board's lock: the tool's thread waits for it while the trio
    loop keeps running. (A guard timer releases the lock after 10 s, so a tool that locked on
    the trio thread fails this test instead of hanging it.)"""
    ctx = make_ctx(ws, team_name=team, team_member="alice")
    await TaskCreateTool().run({"subject": "A"}, ctx)
    board = TeamStore().board(team)
    fd = os.open(board.lock_path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    once = threading.Lock()

    def release() -> None:
        if once.acquire(blocking=False):
            os.close(fd)

    guard = threading.Timer(10, release)
    guard.start()
    results = []

    async def call() -> None:
        results.append(await TaskUpdateTool().run({"task_id": "1", "status": "completed"}, ctx))

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            await trio.testing.wait_all_tasks_blocked()
            assert results == []  # its thread waits for the lock; this loop does not
            assert board.get("1").status == "pending"
            guard.cancel()
            release()
    finally:
        guard.cancel()
        release()
    assert ok(results[0]).startswith("updated #1 [completed]")
