"""``nyz team start`` on a terminal: the console is the lead's front end. The lead's --task
is its first prompt, the teammate's events show in the agent tree under /team/<team>/<member>,
and /team shows the team and messages a teammate. Driven in tmux against the fake LLM."""

from __future__ import annotations

import pytest
import trio

from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")


async def test_team_start_in_the_console(workspace, home, configure):
    got = trio.Event()

    def from_user(_request):
        got.set()
        return reply("AMY-GOT-USER")

    script = PerAgent({
        "LEAD-TASK": [
            reply(tool_calls=[tool_call("send_team_message", {
                "to": "amy", "message": "AMY-JOB: report back"})]),
            reply("asked amy"),
            reply("LEAD-HEARD-AMY"),
        ],
        "AMY-JOB": [
            reply(tool_calls=[tool_call("send_team_message", {
                "to": "lead", "message": "AMY-REPORT"})]),
            reply("reported"),
            from_user,  # woken by the /team message
        ],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, "team", "start", "crew", "--members",
                                "amy:worker", "--task", "LEAD-TASK") as pane:
            await pane.wait_for(INPUT_READY)
            await pane.wait_for("LEAD-HEARD-AMY", limit_s=60)  # amy's report woke the lead
            await say(pane, "/team")
            screen = await pane.wait_for("team crew (in-process)")
            assert "amy" in screen and "lead" in screen
            await say(pane, "/team amy from the console")
            await pane.wait_for("sent to amy")
            with trio.fail_after(30):
                await got.wait()
            await pane.keys("F2")
            screen = await pane.wait_for("amy [")
            assert "amy [" in screen  # the teammate is in the agent tree
    woken = script.seen["AMY-JOB"][-1].transcript()
    assert ("user", "[message from user]\n> from the console") in woken
