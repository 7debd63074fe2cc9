"""The three-task team graph the ``nyz team start`` end-to-end tests script (one host and
several): the lead makes tasks 1 → 2 → 3 and sends alice her job; alice does 1 and hands 2 to
bob; bob does it and hands 3 back to alice; alice does it and reports to the lead."""

from __future__ import annotations

from nyzhi.testing.fake_llm import PerAgent, reply, tool_call


def _calls(*calls):
    return reply(tool_calls=list(calls))


def team_script() -> PerAgent:
    return PerAgent({
        "LEAD-TASK": [
            _calls(tool_call("task_create", {"subject": "one"})),
            _calls(tool_call("task_create", {"subject": "two", "blocked_by": ["1"]})),
            _calls(tool_call("task_create", {"subject": "three", "blocked_by": ["2"]})),
            _calls(tool_call("send_team_message", {
                "to": "alice", "message": "ALICE-JOB: take task 1, then pass 2 to bob"})),
            reply("tasks assigned"),
            reply("the team finished"),  # woken by alice's report
        ],
        "ALICE-JOB": [
            _calls(tool_call("task_update", {"task_id": "1", "status": "in_progress"})),
            _calls(tool_call("task_update", {"task_id": "1", "status": "completed"})),
            _calls(tool_call("send_team_message", {
                "to": "bob", "message": "BOB-JOB: task 2 is unblocked, it is yours"})),
            reply("did task 1"),
            # woken by bob
            _calls(tool_call("task_update", {"task_id": "3", "status": "in_progress"})),
            _calls(tool_call("task_update", {"task_id": "3", "status": "completed"})),
            _calls(tool_call("send_team_message", {
                "to": "lead", "message": "ALL-DONE: tasks 1, 2 and 3 are completed"})),
            reply("did task 3"),
        ],
        "BOB-JOB": [
            _calls(tool_call("task_update", {"task_id": "2", "status": "in_progress"})),
            _calls(tool_call("task_update", {"task_id": "2", "status": "completed"})),
            _calls(tool_call("send_team_message", {
                "to": "alice", "message": "task 2 is done: task 3 is yours"})),
            reply("did task 2"),
        ],
    })
