"""Claude Code hooks run as Claude Code runs them (issue 52), from a project's
``.claude/settings.json``, against the real runtime and the fake LLM.

The hook scripts are written the way the public ones are (Anthropic's command validator and
file guard examples, a formatter, a ralph-style Stop loop): they read Claude Code's payload
and check ``tool_name == "Bash"``, ``tool_input["file_path"]`` and so on. Each test would fail
with nyz's own names (``bash``, a relative ``path``): the script would exit 0 and allow.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import trio

from nyzhi.core.loop.agent import UserInput
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.cli import json_lines, run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

PY = sys.executable


def claude_settings(ws, hooks: dict) -> None:
    (ws / ".claude").mkdir(exist_ok=True)
    (ws / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))


def hook_script(ws, name: str, body: str) -> str:
    """A hook script under .claude/hooks and the command settings.json runs it with."""
    folder = ws / ".claude" / "hooks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(body))
    return f'{PY} "$CLAUDE_PROJECT_DIR/.claude/hooks/{name}"'


def command_hook(command: str, matcher: str | None = None) -> list[dict]:
    group: dict = {"hooks": [{"type": "command", "command": command, "timeout": 20}]}
    if matcher is not None:
        group["matcher"] = matcher
    return [group]


async def ask(rt, prompt):
    handle = await rt.submit(prompt) if hasattr(rt, "submit") else await rt.ask(UserInput(prompt))
    return await handle.wait()


BASH_VALIDATOR = """
    import json, re, sys
    data = json.load(sys.stdin)
    if data.get("tool_name") != "Bash":
        sys.exit(0)
    command = data.get("tool_input", {}).get("command", "")
    if re.search(r"\\brm\\s+-rf\\b", command):
        print("rm -rf is not allowed here; delete files one by one", file=sys.stderr)
        sys.exit(2)
"""


async def test_pre_tool_use_on_bash_exit_2_refuses_rm_rf(workspace, configure):
    (workspace / "build").mkdir()
    (workspace / "build" / "keep.o").write_text("x")
    claude_settings(workspace, {"PreToolUse": command_hook(
        hook_script(workspace, "bash_validator.py", BASH_VALIDATOR), "Bash")})
    script = [reply(tool_calls=[tool_call("bash", {"command": "rm -rf build"})]), reply("ok")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await ask(rt, "clean up")
    assert (workspace / "build" / "keep.o").exists()
    assert "rm -rf is not allowed here" in server.requests[1].tool_results()[0]


FILE_GUARD = """
    import json, os, sys
    data = json.load(sys.stdin)
    path = data.get("tool_input", {}).get("file_path", "")
    if data.get("tool_name") in ("Read", "Edit", "Write") and os.path.isabs(path) \\
            and os.path.basename(path).startswith(".env"):
        print(json.dumps({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": "secrets files are off limits"}}))
"""


async def test_permission_decision_deny_keeps_dot_env_out(workspace, configure):
    (workspace / ".env").write_text("API_TOKEN=hunter2-secret\n")
    claude_settings(workspace, {"PreToolUse": command_hook(
        hook_script(workspace, "file_guard.py", FILE_GUARD), "Read|Edit|Write")})
    script = [reply(tool_calls=[tool_call("read", {"file_path": ".env"})]), reply("ok")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await ask(rt, "show the env")
    result = server.requests[1].tool_results()[0]
    assert "secrets files are off limits" in result
    assert "hunter2" not in json.dumps(server.requests[1].json)


FORMATTER = """
    import json, os, sys
    data = json.load(sys.stdin)
    path = data["tool_input"]["file_path"]
    if not os.path.isabs(path) or data["tool_response"].get("filePath") != path:
        sys.exit(1)
    if path.endswith(".py"):
        with open(path) as fh:
            lines = [line.rstrip() for line in fh]
        with open(path, "w") as fh:
            fh.write("\\n".join(lines) + "\\n")
"""


async def test_post_tool_use_formatter_on_edit_and_write(workspace, configure):
    claude_settings(workspace, {"PostToolUse": command_hook(
        hook_script(workspace, "format.py", FORMATTER), "Edit|Write")})
    (workspace / "n.py").write_text("a = 0\n")
    script = [
        reply(tool_calls=[tool_call("write", {"file_path": "m.py", "content": "x = 1   \n"})]),
        reply(tool_calls=[tool_call("read", {"file_path": "n.py"})]),
        reply(tool_calls=[tool_call("edit", {"file_path": "n.py", "old_string": "a = 0",
                                              "new_string": "y = 2    "})]),
        reply("formatted"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            assert (await ask(rt, "write it")).text == "formatted"
    assert (workspace / "m.py").read_text() == "x = 1\n"
    assert (workspace / "n.py").read_text() == "y = 2\n", server.requests[3].tool_results()


STOP_ONCE = """
    import json, sys
    data = json.load(sys.stdin)
    if data.get("stop_hook_active"):
        sys.exit(0)
    print(json.dumps({"decision": "block", "reason": "Run the tests before you stop."}))
"""


async def test_stop_hook_blocks_once_and_the_agent_goes_on(workspace, configure):
    claude_settings(workspace, {"Stop": command_hook(
        hook_script(workspace, "stop_once.py", STOP_ONCE))})
    script = [reply("done, I think"), reply("tests pass, really done")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            outcome = await ask(rt, "fix it")
    assert outcome.text == "tests pass, really done"
    assert len(server.requests) == 2
    assert server.requests[1].last_user_text() == "Run the tests before you stop."


async def test_stop_hook_loop_is_bounded_by_the_steps(workspace, configure):
    always = hook_script(workspace, "always.py", """
        import json
        print(json.dumps({"decision": "block", "reason": "again"}))
    """)
    claude_settings(workspace, {"Stop": command_hook(always)})
    extra = "[agent]\nmax_steps = 3\n"
    async with open_fake_llm(script=[reply(f"a{i}") for i in range(5)]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            outcome = await ask(rt, "go")
    assert outcome.stop_reason == "max_steps" and len(server.requests) == 3


LOGGER = """
    import json, os, sys
    data = json.load(sys.stdin)
    with open(os.environ["HOOK_LOG"], "a") as fh:
        fh.write(json.dumps(data) + "\\n")
"""

COMMON = {"session_id", "transcript_path", "cwd", "permission_mode", "hook_event_name"}
# Each event's own fields, as Claude Code's hooks reference documents them.
DOCUMENTED = {
    "SessionStart": {"source", "model"},
    "UserPromptSubmit": {"prompt"},
    "PreToolUse": {"tool_name", "tool_input", "tool_use_id"},
    "PostToolUse": {"tool_name", "tool_input", "tool_response", "tool_use_id"},
    "Stop": {"stop_hook_active"},
    "SessionEnd": {"reason"},
}


async def test_payload_has_every_documented_field(workspace, configure, monkeypatch, tmp_path):
    log = tmp_path / "payloads.jsonl"
    monkeypatch.setenv("HOOK_LOG", str(log))
    logger = hook_script(workspace, "log.py", LOGGER)
    claude_settings(workspace, {event: command_hook(logger, "*" if "Tool" in event else None)
                                for event in DOCUMENTED})
    script = [
        reply(tool_calls=[tool_call("read", {"file_path": "a.txt"}, id="call_read_1")]),
        reply(tool_calls=[tool_call("edit", {"file_path": "a.txt", "old_string": "one",
                                              "new_string": "two"}, id="call_edit_1")]),
        reply("edited"),
    ]
    (workspace / "a.txt").write_text("one\n")
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="autoedit")) as rt:
            await ask(rt, "edit a.txt")
            session_id = rt.session_id
    payloads = [json.loads(line) for line in log.read_text().splitlines()]
    by_event = {p["hook_event_name"]: p for p in payloads}
    assert set(by_event) == set(DOCUMENTED)
    for event, fields in DOCUMENTED.items():
        assert COMMON | fields <= set(by_event[event]), (event, sorted(by_event[event]))
        p = by_event[event]
        assert p["session_id"] == session_id and p["cwd"] == str(workspace)
        assert p["permission_mode"] == "acceptEdits"
    pre, post = by_event["PreToolUse"], by_event["PostToolUse"]
    assert pre["tool_name"] == post["tool_name"] == "Edit"
    assert pre["tool_input"] == {"file_path": str(workspace / "a.txt"), "old_string": "one",
                                 "new_string": "two"}
    assert pre["tool_use_id"] == post["tool_use_id"] == "call_edit_1"
    assert isinstance(post["tool_response"], dict)
    assert post["tool_response"]["filePath"] == str(workspace / "a.txt")
    assert post["tool_response"]["success"] is True
    assert by_event["UserPromptSubmit"]["prompt"] == "edit a.txt"
    assert by_event["SessionStart"]["source"] == "startup"
    assert by_event["Stop"]["stop_hook_active"] is False
    # transcript_path: the conversation in Claude Code's JSONL shape
    text = Path(by_event["Stop"]["transcript_path"]).read_text()  # noqa: ASYNC240
    lines = [json.loads(x) for x in text.splitlines()]
    assert [(x["type"], x["message"]["role"]) for x in lines] == [
        ("user", "user"), *[("assistant", "assistant"), ("user", "user")] * 2,
        ("assistant", "assistant")]
    assert lines[0]["message"]["content"] == "edit a.txt"
    assert lines[1]["message"]["content"][-1]["name"] == "Read"
    lines = lines[2:]
    assert lines[1]["message"]["content"][-1] == {
        "type": "tool_use", "id": "call_edit_1", "name": "Edit",
        "input": {"file_path": str(workspace / "a.txt"), "old_string": "one",
                  "new_string": "two"}}
    assert lines[2]["message"]["content"][0]["tool_use_id"] == "call_edit_1"
    assert all(x["sessionId"] == session_id for x in lines)
    assert lines[1]["parentUuid"] == lines[0]["uuid"]
    assert lines[-1]["message"]["content"] == [{"type": "text", "text": "edited"}]
    assert os.stat(by_event["Stop"]["transcript_path"]).st_mode & 0o077 == 0


async def test_session_start_output_reaches_the_first_request(workspace, configure):
    """Claude's SessionStart additionalContext and nyz's own session_start stdout (issue 56)."""
    context = hook_script(workspace, "context.py", """
        import json
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                 "additionalContext": "BRANCH is feature-x"}}))
    """)
    claude_settings(workspace, {"SessionStart": command_hook(context, "startup")})
    extra = '[[agent.hooks]]\nevent = "session_start"\ncommand = "echo NYZ_START_NOTE"\n'
    async with open_fake_llm(script=[reply("a"), reply("b")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await ask(rt, "hello")
            await ask(rt, "again")
    first = server.requests[0].last_user_text()
    assert "BRANCH is feature-x" in first and "NYZ_START_NOTE" in first
    assert "BRANCH" not in server.requests[1].last_user_text()  # once, not every prompt


async def test_updated_input_and_continue_false(workspace, configure):
    rewrite = hook_script(workspace, "rewrite.py", """
        import json, sys
        data = json.load(sys.stdin)
        cmd = data["tool_input"]["command"]
        if cmd.startswith("touch stop"):
            print(json.dumps({"continue": False, "stopReason": "enough for today"}))
        else:
            print(json.dumps({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "allow",
                "updatedInput": {"command": "touch rewritten"}}}))
    """)
    claude_settings(workspace, {"PreToolUse": command_hook(rewrite, "Bash")})
    script = [reply(tool_calls=[tool_call("bash", {"command": "touch original"})]),
              reply(tool_calls=[tool_call("bash", {"command": "touch stop-here"})]),
              reply("never asked")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            outcome = await ask(rt, "touch things")
    assert (workspace / "rewritten").exists() and not (workspace / "original").exists()
    assert not (workspace / "stop-here").exists()
    assert outcome.stop_reason == "hook_stop" and len(server.requests) == 2


async def test_skipped_project_hooks_are_a_stream_json_event(workspace, home, configure):
    async with open_fake_llm(script=[reply("hello")]) as server:
        # the provider in the user's config: the unapproved project's is gated with its hooks
        configure(workspace, server.url_for("openai"), approve=False)
        claude_settings(workspace, {"PreToolUse": command_hook("true", "Bash")})  # unapproved
        with trio.fail_after(120):
            proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "hi")
    events = json_lines(proc.stdout)
    notices = [e for e in events if e["type"] == "notice"]
    assert any(n["kind"] == "untrusted_project" and "hooks" in n["message"]
               for n in notices), (events, proc.stderr)
    assert events[-1]["type"] == "result"


async def test_permission_decision_ask_asks_even_for_a_read(workspace, configure):
    """``ask`` takes the call to a person even where it would run unasked (a read-only tool,
    trust full); headless nobody can answer, so it is refused."""
    asker = hook_script(workspace, "ask.py", """
        import json
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "ask", "permissionDecisionReason": "confirm reads"}}))
    """)
    claude_settings(workspace, {"PreToolUse": command_hook(asker, "Read")})
    (workspace / "notes.txt").write_text("SECRET-NOTES\n")
    script = [reply(tool_calls=[tool_call("read", {"file_path": "notes.txt"})]), reply("ok"),
              reply(tool_calls=[tool_call("glob", {"pattern": "*.txt"})]), reply("ok")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await ask(rt, "read it")
            await ask(rt, "list")
    refused = server.requests[1].tool_results()[0]
    assert "needs approval" in refused and "SECRET-NOTES" not in refused
    assert "notes.txt" in server.requests[3].tool_results()[0]  # Glob: the matcher is Read
