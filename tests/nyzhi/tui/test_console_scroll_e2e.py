"""Issue 54: an answer taller than the screen can be read to its end. The view follows a
streaming answer; End, Ctrl-End and PageDown repeated reach its last line after scrolling up.
In tmux at 80x24, against the fake LLM."""

from __future__ import annotations

import pytest

from nyzhi.testing.fake_llm import open_fake_llm, reply
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")

LINES = [f"line {n:02d} of the long answer" for n in range(1, 81)]
ANSWER = "\n\n".join(LINES)  # markdown paragraphs: one row each (and a blank between)


async def test_a_long_answer_is_followed_and_every_scroll_key_reaches_its_end(
        workspace, home, configure):
    async with open_fake_llm(script=[reply(ANSWER, chunk_size=40)]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "write a lot")
            screen = await pane.wait_for("line 80 of the long answer", limit_s=60)
            assert "line 01 of" not in screen  # followed to the end, not left on its top
            for _ in range(10):
                await pane.keys("PageUp")
            screen = await pane.wait_for("line 01 of the long answer")
            assert "line 80 of" not in screen
            await pane.keys("End")
            screen = await pane.wait_for("line 80 of the long answer")
            assert "PageDown to the end" not in screen
            for _ in range(10):
                await pane.keys("PageUp")
            await pane.wait_for("line 01 of the long answer")
            await pane.keys("C-End")
            await pane.wait_for("line 80 of the long answer")
            for _ in range(10):
                await pane.keys("PageUp")
            await pane.wait_for("line 01 of the long answer")
            for _ in range(14):  # PageDown repeated: a page at a time, to the very end
                await pane.keys("PageDown")
            screen = await pane.wait_for("line 80 of the long answer")
            assert "PageDown to the end" not in screen


async def test_the_readline_keys_edit_the_input(workspace, home, configure):
    """Ctrl-U clears the line (it did nothing), Ctrl-A/E, Ctrl-W, Alt-B/F, Alt-Backspace,
    Ctrl-K and Ctrl-Y edit as in a shell; the request shows what was sent."""
    async with open_fake_llm(script=[reply("one"), reply("two")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await pane.type("throw this away")
            await pane.wait_for("› throw this away")
            await pane.keys("C-u")
            await pane.wait_for(lambda screen: "throw this away" not in screen)
            await pane.type("alpha beta gamma")
            await pane.keys("C-w")  # gamma cut
            await pane.keys("C-a")
            await pane.type("say ")
            await pane.keys("C-e")
            await pane.keys("C-y")  # gamma back at the end
            await pane.keys("M-b", "M-b")  # before "beta"
            await pane.keys("C-k")  # "beta gamma" cut
            await pane.keys("M-BSpace")  # "alpha" cut -> "say "
            await pane.keys("C-y")  # "alpha" back... the last cut
            await pane.keys("Enter")
            await pane.wait_for("one")
    assert server.requests[0].last_user_text().strip() == "say alpha"


async def test_on_exit_the_console_says_how_to_resume(workspace, home, configure):
    """Issue 54: the console closed without a word; it now says how to come back."""
    async with open_fake_llm(script=[reply("noted")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "remember this")
            await pane.wait_for("noted")
            await say(pane, "/quit")
            assert await pane.wait_exit() == 0
            screen = await pane.history()
    text = screen.replace("\n", "")  # the pane wraps the line at 80 columns
    assert "resume it with `nyz --continue`" in text and "`nyz --session " in text, screen
    session_id = text.split("nyz: session ", 1)[1].split(" ", 1)[0]
    sessions = home / ".local" / "share" / "nyzhi" / "sessions"
    assert any(session_id in p.name for p in sessions.iterdir())
