"""Claude Code's statusLine in the console (issue 52): the project's command, fed Claude
Code's status JSON, is the status bar; unapproved, it does not run."""

from __future__ import annotations

import json
import sys

import pytest

from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import open_fake_llm, reply
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console

STATUS = """\
import json, os, sys
d = json.load(sys.stdin)
print(f"SL {d['hook_event_name']} {d['model']['id']} "
      f"{os.path.basename(d['workspace']['project_dir'])} {len(d['session_id'])} "
      f"{'total_cost_usd' in d['cost']}")
"""


def status_settings(ws, script: str = STATUS) -> None:
    (ws / ".claude").mkdir(exist_ok=True)
    (ws / ".claude" / "status.py").write_text(script)
    (ws / ".claude" / "settings.json").write_text(json.dumps({"statusLine": {
        "type": "command", "command": f"{sys.executable} .claude/status.py"}}))


@pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")
async def test_status_line_command_is_the_status_bar(workspace, home, configure):
    status_settings(workspace)
    async with open_fake_llm(script=[reply("hello")]) as server:
        configure(workspace, server.url_for("openai"))  # approves the project as it is now
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            screen = await pane.wait_for("SL Status fake-model-1 ws 36 True")
            assert screen.splitlines()[-1].strip().startswith("SL Status")


async def test_an_unapproved_status_line_does_not_run(workspace, configure):
    async with open_fake_llm(script=[reply("hello")]) as server:
        # the provider in the user's own config: an unapproved project keeps nothing gated
        configure(workspace, server.url_for("openai"), approve=False)
        status_settings(workspace)  # never approved
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert rt.status_line is None
            assert "statusLine (runs a program)" in rt.untrusted_notice
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert rt.status_line is not None
