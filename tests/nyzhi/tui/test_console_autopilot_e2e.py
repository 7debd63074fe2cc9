"""/autopilot in the console (tmux) against the fake LLM: its phases are notes in the
conversation, its subagents rows of the agent tree, and its report shows at the end."""

from __future__ import annotations

import json

import pytest

from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")


async def test_autopilot_runs_from_the_console(workspace, home, configure):
    (workspace / "Makefile").write_text("test:\n\t@test -f fixed.txt\n")
    script = PerAgent({
        "phase EXPAND": [reply("REQS: fixed.txt exists")],
        "phase PLAN": [reply("PLAN: write it")],
        "phase EXECUTE": [reply(tool_calls=[tool_call("write", {"file_path": "fixed.txt",
                                                                 "content": "ok\n"})]),
                          reply("WORK: wrote it")],
        "phase VALIDATE": [reply("VERDICT: APPROVE")],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra='[agent.trust]\nmode = "full"\n')
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "/autopilot add a marker file")
            screen = await pane.wait_for("Autopilot done", limit_s=60)
            assert "autopilot validate" in screen
            await pane.keys("C-l")
            await say(pane, "/autopilot")
            screen = await pane.wait_for("phases run:")
            assert "expand → plan → execute → qa → validate" in screen
            assert "planner-1, planner-2, worker-1, reviewer-1" in screen
    saved = json.loads((workspace / ".nyzhi" / "state" / "autopilot.json").read_text())
    assert saved["phase"] == "done"
    assert (workspace / "fixed.txt").read_text() == "ok\n"
