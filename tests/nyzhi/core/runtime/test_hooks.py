import json
import os

import pytest
import trio

from nyzhi.core.runtime.hooks import (
    HOOK_EVENTS,
    HookConfigError,
    HookRunner,
    HookSpec,
    hooks_from_config,
    load_claude_hooks,
)
from nyzhi.testing.waits import settled

# Logs "<event>|<tool>|<file>|<session>" then the stdin JSON, one entry per two lines.
LOGGER = (
    'printf "%s|%s|%s|%s\\n" "$NYZHI_HOOK_EVENT" "$NYZHI_TOOL_NAME" "$NYZHI_FILE_PATH" '
    '"$NYZHI_SESSION_ID" >> {log}; cat >> {log}; echo >> {log}'
)


def logger(log):
    return LOGGER.replace("{log}", str(log))


def read_log(log):
    if not log.exists():
        return []
    lines = log.read_text().splitlines()
    return [(lines[i].split("|"), json.loads(lines[i + 1])) for i in range(0, len(lines), 2)]


PAYLOADS = {
    "session_start": {"source": "startup"},
    "user_prompt_submit": {"prompt": "hello"},
    "pre_tool_use": {"tool_name": "edit", "tool_input": {"path": "src/a.py"}, "tool_use_id": "c1"},
    "post_tool_use": {"tool_name": "edit", "tool_input": {"path": "src/a.py"},
                      "tool_response": "ok", "is_error": False},
    "after_edit": {"tool_name": "write", "file_path": "src/b.py"},
    "after_turn": {"turn_id": "t1", "text": "done"},
    "subagent_start": {"agent": "/agents/main/sub-1", "role": "explorer"},
    "subagent_stop": {"agent": "/agents/main/sub-1", "result": "found it"},
    "session_end": {"reason": "exit"},
    "teammate_idle": {"team": "crew", "member": "alice", "agent": "/team/crew/alice"},
    "task_completed": {"team": "crew", "task_id": "3", "subject": "ship", "owner": "bob"},
    "worktree_create": {"team": "crew", "member": "alice", "path": "/w/.nyzhi/worktrees/alice"},
    "worktree_remove": {"team": "crew", "member": "alice", "path": "/w/.nyzhi/worktrees/alice"},
    "post_tool_use_failure": {"tool_name": "bash", "tool_args": {"command": "false"},
                              "error": "exit 1", "success": False},
    "permission_request": {"tool_name": "write", "tool_args": {"file_path": "src/c.py"},
                           "summary": "write src/c.py"},
    "notification": {"notification_type": "permission_prompt",
                     "message": "nyz needs your permission to use write"},
    "compact_context": {"trigger": "auto", "reason": "threshold", "before_tokens": 9000},
    "config_change": {"key": "trust", "previous": "off", "value": "autoedit",
                      "source": "command"},
}


async def test_every_event_fires_with_its_payload(tmp_path):
    log = tmp_path / "log"
    specs = [HookSpec(e, logger(log)) for e in HOOK_EVENTS]
    runner = HookRunner(specs, tmp_path, session_id="sess-1")
    assert set(PAYLOADS) == set(HOOK_EVENTS)
    for event in HOOK_EVENTS:
        outcome = await runner.fire(event, PAYLOADS[event])
        assert not outcome.blocked and outcome.warnings == ()
        assert [r.exit_code for r in outcome.results] == [0]
    entries = read_log(log)
    assert [env[0] for env, _ in entries] == list(HOOK_EVENTS)
    for (env, body), event in zip(entries, HOOK_EVENTS, strict=True):
        assert body["hook_event_name"] == event
        assert body["session_id"] == "sess-1" and body["cwd"] == str(tmp_path)
        for key, value in PAYLOADS[event].items():
            assert body[key] == value
        assert env[3] == "sess-1"
    by_event = {env[0]: env for env, _ in entries}
    assert by_event["pre_tool_use"][1:3] == ["edit", "src/a.py"]
    assert by_event["after_edit"][1:3] == ["write", "src/b.py"]


async def test_unknown_event_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="unknown hook event"):
        await HookRunner([], tmp_path).fire("on_lunch", {})
    with pytest.raises(HookConfigError, match="unknown hook event"):
        HookSpec("on_lunch", "true")


async def test_no_matching_hook_is_free(tmp_path):
    runner = HookRunner([HookSpec("after_turn", "exit 1")], tmp_path)
    assert not runner.has("pre_tool_use") and runner.has("after_turn")
    outcome = await runner.fire("pre_tool_use", {"tool_name": "bash"})
    assert outcome.results == () and not outcome.blocked


async def test_tool_and_path_matchers(tmp_path):
    log = tmp_path / "log"
    runner = HookRunner([
        HookSpec("pre_tool_use", logger(log), tool_pattern="write|edit"),
        HookSpec("after_edit", logger(log), path_patterns=("*.py",)),
        HookSpec("after_edit", logger(log), path_patterns=("docs/",)),
    ], tmp_path)
    await runner.fire("pre_tool_use", {"tool_name": "read", "tool_input": {"path": "a"}})
    await runner.fire("pre_tool_use", {"tool_name": "edit_notes", "tool_input": {}})  # fullmatch
    await runner.fire("pre_tool_use", {"tool_name": "edit", "tool_input": {}})
    await runner.fire("after_edit", {"tool_name": "write", "file_path": str(tmp_path / "pkg/x.py")})
    await runner.fire("after_edit", {"tool_name": "write", "file_path": "docs/guide.md"})
    await runner.fire("after_edit", {"tool_name": "write", "file_path": "notes.txt"})
    await runner.fire("after_edit", {"tool_name": "write"})  # no path: path hooks skip
    got = [(env[0], env[1], env[2]) for env, _ in read_log(log)]
    assert got == [
        ("pre_tool_use", "edit", ""),
        ("after_edit", "write", str(tmp_path / "pkg/x.py")),
        ("after_edit", "write", "docs/guide.md"),
    ]


async def test_block_by_exit_code_2_stops_later_hooks(tmp_path):
    log = tmp_path / "log"
    runner = HookRunner([
        HookSpec("pre_tool_use", "echo 'no rm -rf please' >&2; exit 2"),
        HookSpec("pre_tool_use", logger(log)),
    ], tmp_path)
    outcome = await runner.fire("pre_tool_use", {"tool_name": "bash"})
    assert outcome.blocked and outcome.message == "no rm -rf please"
    assert len(outcome.results) == 1 and not log.exists()


@pytest.mark.parametrize("stdout, reason", [
    ('{"decision": "block", "reason": "protected file"}', "protected file"),
    ('{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", '
     '"permissionDecisionReason": "not on main"}}', "not on main"),
    ('{"continue": false, "stopReason": "frozen"}', "frozen"),
])
async def test_block_by_json_decision(tmp_path, stdout, reason):
    spec = HookSpec("pre_tool_use", f"cat > /dev/null; echo '{stdout}'")
    outcome = await HookRunner([spec], tmp_path).fire("pre_tool_use", {"tool_name": "write"})
    assert outcome.blocked and outcome.message == reason and not outcome.approved


@pytest.mark.parametrize("stdout", [
    '{"decision": "approve"}',
    '{"hookSpecificOutput": {"permissionDecision": "allow"}}',
])
async def test_approve_decision(tmp_path, stdout):
    spec = HookSpec("pre_tool_use", f"echo '{stdout}'")
    outcome = await HookRunner([spec], tmp_path).fire("pre_tool_use", {"tool_name": "bash"})
    assert outcome.approved and not outcome.blocked


async def test_user_prompt_submit_context_and_block(tmp_path):
    runner = HookRunner([
        HookSpec("user_prompt_submit", "echo 'branch: main'"),
        HookSpec("user_prompt_submit",
                 """echo '{"hookSpecificOutput": {"additionalContext": "tests pass"}}'"""),
    ], tmp_path)
    outcome = await runner.fire("user_prompt_submit", {"prompt": "hi"})
    assert not outcome.blocked and outcome.context == "branch: main\ntests pass"
    blocker = HookRunner([HookSpec("user_prompt_submit",
                                   """echo '{"decision": "block", "reason": "secret"}'""")], tmp_path)
    outcome = await blocker.fire("user_prompt_submit", {"prompt": "my key is ..."})
    assert outcome.blocked and outcome.message == "secret"


async def test_non_blocking_events_never_block_but_give_feedback(tmp_path):
    runner = HookRunner([HookSpec("post_tool_use", "echo 'lint: 3 errors' >&2; exit 2")], tmp_path)
    outcome = await runner.fire("post_tool_use", {"tool_name": "edit"})
    assert not outcome.blocked and outcome.message == "lint: 3 errors"
    runner = HookRunner([HookSpec("after_turn", "echo plain text")], tmp_path)
    outcome = await runner.fire("after_turn", {})
    assert outcome.context == "" and outcome.results[0].stdout == "plain text\n"


async def test_failures_are_warnings_unless_fail_closed(tmp_path):
    failing = "echo oops >&2; exit 3"
    outcome = await HookRunner([HookSpec("pre_tool_use", failing)], tmp_path).fire(
        "pre_tool_use", {"tool_name": "bash"})
    assert not outcome.blocked
    assert outcome.warnings == ("pre_tool_use hook `echo oops >&2; exit 3` exited with status 3: oops",)
    outcome = await HookRunner([HookSpec("pre_tool_use", failing, block=True)], tmp_path).fire(
        "pre_tool_use", {"tool_name": "bash"})
    assert outcome.blocked and "exited with status 3" in outcome.message
    missing_cwd = HookRunner([HookSpec("after_turn", "true")], tmp_path / "gone")
    outcome = await missing_cwd.fire("after_turn", {})
    assert "could not start" in outcome.warnings[0]


async def _wait_dead(pid):
    """Wait (event-driven, via a pidfd) until ``pid`` has exited."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with trio.fail_after(60):
            await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def _ends(pid: int) -> bool:
    """True once ``pid`` is gone or a zombie (bounded): a process killed a moment ago may
    still be exiting on a busy machine; a leaked one never ends."""
    return await settled(lambda: [pid] if _alive(pid) else []) == []


async def test_timeout_kills_the_process_group(tmp_path):
    pidfile = tmp_path / "pid"
    cmd = f"sleep 300 & echo $! > {pidfile}; wait"
    runner = HookRunner([HookSpec("after_turn", cmd, timeout=1.0)], tmp_path)
    outcome = await runner.fire("after_turn", {})
    result = outcome.results[0]
    assert result.timed_out and result.exit_code is None
    assert "timed out after 1s" in outcome.warnings[0]
    grandchild = int(pidfile.read_text())
    await _wait_dead(grandchild)
    assert await _ends(grandchild)


async def test_cancellation_kills_the_process_group(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cmd = f"sleep 300 & echo $! > {fifo}; wait"
    runner = HookRunner([HookSpec("pre_tool_use", cmd, timeout=600)], tmp_path)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runner.fire, "pre_tool_use", {"tool_name": "bash"})
        async with await trio.open_file(fifo) as f:  # returns once the hook has written
            grandchild = int(await f.read())
        assert _alive(grandchild)
        nursery.cancel_scope.cancel()
    await _wait_dead(grandchild)
    assert await _ends(grandchild)


async def test_background_children_do_not_outlive_the_hook(tmp_path):
    pidfile = tmp_path / "pid"
    cmd = f"sleep 300 >/dev/null 2>&1 & echo $! > {pidfile}"
    outcome = await HookRunner([HookSpec("after_turn", cmd)], tmp_path).fire("after_turn", {})
    assert outcome.results[0].exit_code == 0
    child = int(pidfile.read_text())
    await _wait_dead(child)
    assert await _ends(child)


async def test_file_placeholder_is_quoted_and_big_unread_stdin_is_fine(tmp_path):
    target = tmp_path / "a file; rm -rf x.py"
    runner = HookRunner([HookSpec("after_edit", "printf '%s' {file} > out.txt")], tmp_path)
    big = "y" * 300_000  # more than a pipe buffer; the hook never reads stdin
    outcome = await runner.fire("after_edit", {"file_path": str(target), "content": big})
    assert outcome.results[0].exit_code == 0
    assert (tmp_path / "out.txt").read_text() == str(target)


def test_hooks_from_config_reads_original_and_new_keys():
    specs = hooks_from_config([
        {"event": "after_edit", "command": "cargo fmt", "pattern": "*.rs, src/", "timeout": 5},
        {"event": "pre_tool_use", "command": "guard", "tool_name": "bash", "block": True},
        {"event": "pre_tool_use", "command": "guard2", "tools": ["write", "multi_edit"]},
        {"event": "subagent_end", "command": "notify", "hook_type": "command"},
        {"event": "post_tool_use", "command": "x", "matcher": "mcp__.*", "paths": ["*.py"]},
    ])
    assert specs[0] == HookSpec("after_edit", "cargo fmt", None, ("*.rs", "src/"), 5.0)
    assert specs[1].block and specs[1].tool_pattern == "bash" and specs[1].timeout == 30.0
    assert specs[2].matches("multi_edit", []) and not specs[2].matches("write_x", [])
    assert specs[3].event == "subagent_stop"
    assert specs[4].matches("mcp__git__log", ["a/b.py"])


@pytest.mark.parametrize("entry, error", [
    ({"event": "pre_tool_use"}, r"agent.hooks\[0\].command: required"),
    ({"command": "x"}, r"agent.hooks\[0\].event: required"),
    ({"event": "lunch", "command": "x"}, r"agent.hooks\[0\]: unknown hook event 'lunch'"),
    ({"event": "after_turn", "command": "x", "timout": 3}, r"unknown key\(s\) timout"),
    ({"event": "after_turn", "command": "x", "timeout": 0}, r"\.timeout: expected a positive"),
    ({"event": "after_turn", "command": "x", "hook_type": "prompt"}, r"'prompt' hooks are not"),
    ({"event": "pre_tool_use", "command": "x", "tool_name": "("}, r"bad tool pattern"),
    ({"event": "after_turn", "command": "x", "block": "yes"}, r"\.block: expected true"),
])
def test_hooks_from_config_errors(entry, error):
    with pytest.raises(HookConfigError, match=error):
        hooks_from_config([entry])


async def test_claude_settings_are_read_and_mapped(tmp_path):
    log = tmp_path / "log"
    (tmp_path / ".claude").mkdir()
    settings = {
        "permissions": {"allow": []},
        "hooks": {
            "PreToolUse": [{"matcher": "Write|Edit", "hooks": [
                {"type": "command", "command": logger(log), "timeout": 5}]}],
            "PostToolUse": [{"hooks": [{"type": "command", "command": "true"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "true"}]}],
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "true"}]}],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "true"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "true"},
                                {"type": "prompt", "prompt": "are we done?"}]}],
            "SubagentStop": [{"hooks": [{"type": "command", "command": "true"}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
            "Elicitation": [{"hooks": [{"type": "command", "command": "true"}]}],
        },
    }
    (tmp_path / ".claude/settings.json").write_text(json.dumps(settings))
    (tmp_path / ".claude/settings.local.json").write_text(json.dumps({"hooks": {
        "SubagentStart": [{"hooks": [{"type": "command", "command": "true"}]}]}}))
    specs, notes = load_claude_hooks(tmp_path)
    assert [(s.claude_event, s.event) for s in specs] == [
        ("PreToolUse", "pre_tool_use"), ("PostToolUse", "post_tool_use"),
        ("UserPromptSubmit", "user_prompt_submit"), ("SessionStart", "session_start"),
        ("SessionEnd", "session_end"), ("Stop", "after_turn"), ("SubagentStop", "subagent_stop"),
        ("Notification", "notification"), ("SubagentStart", "subagent_start"),
    ]
    assert specs[0].timeout == 5 and specs[1].timeout == 60
    assert specs[3].tool_pattern is None  # SessionStart's matcher is not a tool matcher
    assert any("Elicitation hooks have no nyzhi equivalent" in n for n in notes)
    assert any("'prompt' hooks are not supported" in n for n in notes)
    runner = HookRunner(specs, tmp_path)
    await runner.fire("pre_tool_use", {"tool_name": "read", "tool_input": {}})
    await runner.fire("pre_tool_use", {"tool_name": "edit", "tool_input": {"path": "a.py"}})
    entries = read_log(log)
    assert len(entries) == 1
    assert entries[0][1]["hook_event_name"] == "PreToolUse"
    # Claude's shape: its tool name, an absolute path (nyzhi.core.runtime.hooks.claude_io)
    assert entries[0][1]["tool_name"] == "Edit"
    assert entries[0][1]["tool_input"] == {"path": str(tmp_path / "a.py")}


def test_claude_settings_missing_or_broken(tmp_path):
    assert load_claude_hooks(tmp_path) == ([], [])
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude/settings.json").write_text("{broken")
    specs, notes = load_claude_hooks(tmp_path)
    assert specs == [] and "not valid JSON" in notes[0] and "settings.json" in notes[0]


async def test_nyzhi_and_claude_payload_names_are_mirrored(tmp_path):
    log = tmp_path / "log"
    runner = HookRunner([HookSpec("post_tool_use", logger(log), path_patterns=("*.py",))], tmp_path)
    await runner.fire("post_tool_use", {"tool_name": "edit", "tool_args": {"path": "m.py"},
                                        "output": "ok", "success": True, "session_id": "s9"})
    [(env, body)] = read_log(log)
    assert env == ["post_tool_use", "edit", "m.py", "s9"]
    assert body["tool_input"] == {"path": "m.py"} and body["tool_response"] == "ok"


def test_config_schema_keys_accepted():
    [spec] = hooks_from_config([{"event": "after_turn", "command": "x", "prompt": None,
                                 "instructions": None, "model": None}])
    assert spec.command == "x"


def test_the_readme_names_every_hook_event_that_fires():
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[4] / "README.md").read_text()
    paragraph = readme.split("**Hooks.**", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`([a-z_]+)`", paragraph))
    assert named == set(HOOK_EVENTS)
    assert f"{len(HOOK_EVENTS)} events" in paragraph
