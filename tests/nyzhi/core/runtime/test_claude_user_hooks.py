"""The user's own Claude Code hooks (``~/.claude/settings.json``, where Claude Code reads them)
run in nyz as the project's Claude hooks do, with Claude's names and payload, but without a
project approval: the user wrote them (issue 52). The real runtime, a real hook script."""

from __future__ import annotations

import json
import sys
import textwrap

from nyzhi.core.runtime.hooks.claude import load_user_claude_hooks
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

GUARD = """
    import json, sys
    data = json.load(sys.stdin)
    if data.get("tool_name") == "Bash" and "forbidden" in data["tool_input"].get("command", ""):
        print("your own hook refuses that", file=sys.stderr)
        sys.exit(2)
"""


def user_hooks(home, hooks: dict) -> None:
    (home / ".claude").mkdir(exist_ok=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))


async def test_user_hooks_run_without_a_project_approval(home, workspace, configure):
    (home / "guard.py").write_text(textwrap.dedent(GUARD))
    user_hooks(home, {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": f"{sys.executable} {home / 'guard.py'}"}]}]})
    script = [reply(tool_calls=[tool_call("bash", {"command": "touch forbidden"})]),
              reply("ok")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), approve=False)  # project not approved
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await (await rt.submit("go")).wait()
    assert not (workspace / "forbidden").exists()
    assert "your own hook refuses that" in server.requests[1].tool_results()[0]


def test_home_as_the_workspace_is_read_once_as_the_project(home):
    user_hooks(home, {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]})
    assert len(load_user_claude_hooks(home / "elsewhere")[0]) == 1
    assert load_user_claude_hooks(home) == ([], [])  # the project's file: read, gated, there


def test_a_broken_user_settings_file_is_one_line(home):
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text("{not json")
    specs, notes = load_user_claude_hooks(home / "ws")
    assert specs == [] and len(notes) == 1 and "settings.json: not valid JSON" in notes[0]
