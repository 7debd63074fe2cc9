"""The console's ``/thinking`` and its Alt-T cycle, driven in tmux against the fake LLM."""

from __future__ import annotations

import pytest

from nyzhi.testing.fake_llm import open_fake_llm, reply
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")


async def test_slash_thinking_then_alt_t_cycles_to_off(workspace, home, configure):
    async with open_fake_llm(script=[reply("ANSWER-ONE"), reply("ANSWER-TWO")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "/thinking high")
            await pane.wait_for("thinking: high on fake-model-1")
            await say(pane, "first")
            await pane.wait_for("ANSWER-ONE")
            await pane.keys("M-t")  # high -> off
            await pane.wait_for("thinking: off on fake-model-1 (no thinking parameter)")
            await say(pane, "second")
            await pane.wait_for("ANSWER-TWO")
    first, second = (r for r in server.requests if r.wire is not None)
    assert first.json["reasoning_effort"] == "high"
    assert "reasoning_effort" not in second.json
