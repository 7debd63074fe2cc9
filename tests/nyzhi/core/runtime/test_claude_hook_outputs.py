"""Every answer a Claude Code hook can give, read as Claude Code reads it
(``nyzhi.core.runtime.hooks.claude_out``), through real ``sh -c`` hook processes."""

from __future__ import annotations

import json

import pytest

from nyzhi.core.runtime.hooks import HookRunner, HookSpec


def claude_hook(event: str, claude_event: str, answer: dict | None = None, *,
                exit_code: int = 0, stderr: str = "", stdout: str = "") -> HookSpec:
    out = json.dumps(answer) if answer is not None else stdout
    command = f"cat >/dev/null; printf '%s' '{out}'; printf '%s' '{stderr}' >&2; exit {exit_code}"
    return HookSpec(event, command, claude_event=claude_event, source="test")


TOOL = {"tool_name": "bash", "tool_args": {"command": "ls"}, "call_id": "c1"}


@pytest.mark.parametrize(("spec", "payload", "expect"), [
    (claude_hook("user_prompt_submit", "UserPromptSubmit", {"hookSpecificOutput": {
        "hookEventName": "UserPromptSubmit", "additionalContext": "ticket ABC-1"}}),
     {"prompt": "hi"}, {"context": "ticket ABC-1", "blocked": False}),
    (claude_hook("user_prompt_submit", "UserPromptSubmit", stdout="plain context"),
     {"prompt": "hi"}, {"context": "plain context"}),
    (claude_hook("user_prompt_submit", "UserPromptSubmit",
                 {"decision": "block", "reason": "no secrets in prompts"}),
     {"prompt": "hi"}, {"blocked": True, "message": "no secrets in prompts"}),
    (claude_hook("pre_tool_use", "PreToolUse", {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "ask",
        "permissionDecisionReason": "check first"}}),
     TOOL, {"ask": True, "approved": False, "blocked": False}),
    (claude_hook("pre_tool_use", "PreToolUse", {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow"}}),
     TOOL, {"approved": True}),
    (claude_hook("pre_tool_use", "PreToolUse", {"decision": "block", "reason": "old style"}),
     TOOL, {"blocked": True, "message": "old style"}),
    (claude_hook("pre_tool_use", "PreToolUse", {"hookSpecificOutput": {
        "permissionDecision": "allow", "updatedInput": {"command": "ls -la"}}}),
     TOOL, {"updated_input": {"command": "ls -la"}}),
    (claude_hook("post_tool_use", "PostToolUse", {"decision": "block", "reason": "lint failed",
                                                  "hookSpecificOutput": {
                                                      "additionalContext": "3 warnings"}}),
     {**TOOL, "output": "x"}, {"feedback": "lint failed\n3 warnings", "blocked": False}),
    (claude_hook("post_tool_use", "PostToolUse", exit_code=2, stderr="tests broke"),
     {**TOOL, "output": "x"}, {"feedback": "tests broke"}),
    (claude_hook("post_tool_use", "PostToolUse", {"continue": False, "stopReason": "halt"}),
     {**TOOL, "output": "x"}, {"stop": True, "stop_reason": "halt"}),
    (claude_hook("session_start", "SessionStart", {"systemMessage": "welcome",
                                                   "suppressOutput": True}),
     {}, {"warnings": ("welcome",), "suppress": True}),
    (claude_hook("notification", "Notification", exit_code=2, stderr="ignored"),
     {"message": "m"}, {"blocked": False, "message": ""}),
    (claude_hook("after_turn", "Stop", exit_code=2, stderr="keep going"),
     {"text": "done"}, {"blocked": True, "message": "keep going"}),
    (claude_hook("after_turn", "Stop", {"continue": False, "stopReason": "enough",
                                        "decision": "block", "reason": "go on"}),
     {"text": "done"}, {"blocked": False, "stop": True}),
])
async def test_answers(tmp_path, spec, payload, expect):
    outcome = await HookRunner([spec], tmp_path).fire(spec.event, payload)
    for key, value in expect.items():
        assert getattr(outcome, key) == value, (key, outcome)


async def test_our_own_hooks_keep_nyz_payload(tmp_path):
    log = tmp_path / "log"
    spec = HookSpec("pre_tool_use", f"cat > {log}")
    await HookRunner([spec], tmp_path).fire("pre_tool_use", {
        "tool_name": "read", "tool_args": {"file_path": "a.py"}, "call_id": "c"})
    body = json.loads(log.read_text())
    assert body["tool_name"] == "read" and body["tool_args"] == {"file_path": "a.py"}
    assert body["hook_event_name"] == "pre_tool_use"
