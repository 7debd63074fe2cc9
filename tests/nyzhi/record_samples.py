"""One of each record kind nyzhi persists or sends, with every field set and with defaults:
the golden JSON in ``data/records/golden.json`` is what the hand-written ``to_json`` code wrote
for exactly these (tests/nyzhi/test_convert_golden.py)."""

from __future__ import annotations

from typing import Any


def samples() -> dict[str, list[Any]]:
    from nyzhi.core import events as ev
    from nyzhi.core.loop.state_record import Failure, StateRecord
    from nyzhi.core.prompt_env import Environment
    from nyzhi.core.runtime.sessions.records import SessionMeta
    from nyzhi.team_files.board import Task
    from nyzhi.team_files.inbox import Message
    from nyzhi.team_files.store import Member, TeamConfig

    env = Environment("Linux x86_64", "2026-11-20", "python", "main", True, True)
    return {
        "event": [
            ev.SessionStart("s-1", cwd="/w", provider="openai", model="m", prompt={
                "chars": 10, "sections": ["identity"], "environment": {
                    "platform": "Linux", "date": "2026-11-20", "project_type": None,
                    "git_branch": "main", "git_dirty": False, "in_git": True}}),
            ev.TurnStart("t1", "fix the bug — ünïcode ✓"),
            ev.TextDelta("tok ", agent="/agents/main/sub-1"),
            ev.ThinkingDelta("hmm"),
            ev.ToolStart("c1", "read", '{"path": "a.py"}'),
            ev.ToolOutputDelta("c1", "line\n"),
            ev.ToolDone("c1", "read", "x = 1\n", duration_ms=0.4,
                        metadata={"lines": 1, "nested": {"a": [1, 2]}}),
            ev.ToolDone("c2", "bash", is_error=True),
            ev.ApprovalRequest("r1", "c3", "bash", summary="rm -rf build", preview="$ rm"),
            ev.UserQuestion("q1", "c4", "which?", options=[{"value": "a", "label": "A"}],
                            allow_custom=False),
            ev.Retry(1, 5, 2000, reason="429"),
            ev.Usage(1200, 40, 100, 5, 0.001, 5000, 300, 0.02),
            ev.Compaction(9000, 2000, "summary", "/tmp/archive.jsonl"),
            ev.Compaction(9000, 2000),
            ev.AgentStatus("running", detail="role: reviewer", step=3, tokens=100, cost_usd=0.5,
                           agent="/team/t/alice"),
            ev.TurnComplete("t1", "done", steps=4, stop_reason="end_turn"),
            ev.Error("boom", kind="provider", retryable=True),
            ev.Result("the answer", session_id="s-1", usage={"input_tokens": 5}),
            ev.Result("the answer"),
            ev.IndexProgress(10, 20, 3, 40, "src/a.py", 1.5, True, "indexed"),
            ev.TeamMessage("t", "lead", "alice", "hi", "message", "m1"),
            ev.TaskUpdate("t", "3", "subject", "completed", "alice", unblocked=["4", "5"]),
            ev.TaskUpdate("t", "4"),
            ev.AutopilotPhase("qa", "add a flag", 2, "why"),  # issue 37
            ev.Notice("hooks not approved", kind="untrusted_project"),  # issue 52
            ev.ProcessStart("bg_1", "python3 -m http.server", pid=42, sandboxed=True),  # 51
            ev.ProcessOutputDelta("bg_1", "Serving HTTP ✓\n", skipped=3),  # issue 51
            ev.ProcessExit("bg_1", "python3 -m http.server", "killed", -9,
                           last_lines=["GET / 200"]),  # issue 51
            ev.GenericEvent("from_the_future", "/agents/main", {"x": 1, "type": "ignored"}),
        ],
        "task": [
            Task("1", "write it", "all of it", "Writing it", "in_progress", "alice", ["2"], [],
                 "2026-11-20T10:00:00.000Z", "2026-11-20T10:00:01.000Z"),
            Task("2", "test it", blocked_by=["1"], status="blocked"),
        ],
        "message": [
            Message("m1", "lead", "alice", "hello ✓", "2026-11-20T10:00:00.000Z"),
            Message("m2", "bob", "lead", "idle", "t", read=True, kind="idle_notification"),
        ],
        "member": [
            Member("alice", role="reviewer", model="m1", agent_type="teammate", color="#fff",
                   worktree="/w/alice"),
            Member("bob"),
        ],
        "team_config": [
            TeamConfig("t", created_at="2026-11-20T10:00:00.000Z",
                       members=[Member("lead", agent_type="leader"), Member("alice", model="m")],
                       teammate_mode="process", cwd="/w", default_model="dm",
                       default_role="coder", max_steps=40, worktrees=True, detach=True,
                       trust="ask"),
            TeamConfig("u", created_at="2026-11-20T10:00:00.000Z"),
        ],
        "environment": [env, Environment()],
        "state_record": [
            StateRecord("fix the bug", [{"id": "1", "content": "read", "status": "pending"}],
                        [("src/a.py", "edited"), ("new.py", "created")],
                        Failure("pytest -q", "1 failed")),
            StateRecord(),
        ],
        "session_meta": [
            SessionMeta("s-1", "a title", "2026-11-20T10:00:00+00:00", "2026-11-20T10:01:00+00:00",
                        "/w", "/w", "openai", "m", 4,
                        {"input_tokens": 5, "output_tokens": 1, "cache_read_tokens": 0,
                         "cache_write_tokens": 0, "cost_usd": 0.5}, 1234),
            SessionMeta("s-2"),
        ],
    }
