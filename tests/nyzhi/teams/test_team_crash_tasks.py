"""A team's tasks after a crash (issue 55): a task left in progress by a member whose
incarnation is gone goes back to pending when the member starts again, and a headless team
never reports success with tasks unfinished. Real stores on disk, the real runtime and the
real ``nyz team start --headless`` against the fake LLM."""

from __future__ import annotations

from nyzhi.core import events as ev
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.team_files.store import TeamStore
from nyzhi.testing.cli import json_lines, run_nyz
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call


def test_release_owned_by_puts_a_dead_owners_tasks_back(tmp_path):
    from nyzhi.team_files.board import TaskBoard

    board = TaskBoard(tmp_path / "tasks")
    ids = [board.create("amy's").id, board.create("ben's").id]
    board.update(ids[0], status="in_progress", by="amy")
    board.update(ids[1], status="in_progress", by="ben")
    released = board.release_owned_by(["amy"])
    assert [t.id for t in released] == [ids[0]]
    assert board.get(ids[0]).status == "pending" and board.get(ids[0]).owner is None
    assert board.get(ids[1]).status == "in_progress" and board.get(ids[1]).owner == "ben"
    assert {t.id for t in board.unfinished()} == set(ids)


async def test_a_restarted_member_finds_its_orphaned_task_pending(workspace, configure, home):
    script = PerAgent({"HELLO": [reply("hi")]})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True,
                                               team="crash")) as rt:
            board = TeamStore().board("crash")
            task = board.create("left behind")
            board.update(task.id, status="in_progress", by="amy")  # amy died mid-task
            await rt.teams.spawn_teammate("crash", "amy", "", "worker", None, ev.MAIN_AGENT)
            again = board.get(task.id)
    assert again.status == "pending" and again.owner is None


async def test_a_headless_team_with_tasks_unfinished_does_not_report_success(workspace, home,
                                                                             configure):
    script = PerAgent({"LEAD-TASK": [
        reply(tool_calls=[tool_call("task_create", {"subject": "never done"})]),
        reply("all done, I say"),
    ]})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        done = await run_nyz(workspace, home, "team", "start", "idle", "--members",
                             "amy:worker", "--task", "LEAD-TASK", "--headless",
                             "--output-format", "stream-json")
    assert done.returncode == 1, done.stderr.decode()[-2000:]
    result = json_lines(done.stdout)[-1]
    assert result["type"] == "result" and result["subtype"] == "teammate_error"
    assert "went quiet with 1 task(s) unfinished: #1 pending" in done.stdout.decode()
