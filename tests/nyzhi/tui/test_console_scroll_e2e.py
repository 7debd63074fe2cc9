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


async def test_a_narrow_status_bar_keeps_context_and_cost(workspace, home, configure):
    """Issue 54: at 60 columns the bar was cut at "ct…"; the least useful parts go first."""
    from nyzhi.testing.cli import NYZ, nyz_env

    async with open_fake_llm(script=[reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        pane = TmuxPane(workspace.parent / "tmux-narrow.sock", width=60, height=20)
        await pane.start(NYZ, cwd=workspace, env=nyz_env(home))
        try:
            screen = await pane.wait_for(INPUT_READY)
            await pane.wait_for(lambda s: "ctx " in s.splitlines()[-1] or
                                "ctx " in s.rstrip().splitlines()[-1])
            screen = await pane.screen()
        finally:
            pane.kill()
    bar = screen.rstrip().splitlines()[-1]
    assert "ctx " in bar and "$0.0" in bar and "…" not in bar, bar
    assert "fake-model-1" in bar  # the model stays; its provider's name went first


async def test_the_conversation_warns_as_context_passes_75_percent(
        workspace, home, configure, approve_project):
    """Issue 54: a warning in the conversation as context use passes 75% (here at once: the
    system prompt and tools alone fill most of a small window), said once, not at every
    status refresh."""
    async with open_fake_llm(script=[reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        config = workspace / ".nyzhi" / "config.toml"
        config.write_text(config.read_text().replace(
            'api_key = "sk-test-key"\n', 'api_key = "sk-test-key"\ncontext_window = 6000\n'))
        approve_project(workspace)
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            screen = await pane.wait_for("full (")
            assert "/compact" in screen
            await say(pane, "/status")  # status refreshes: no second warning
            await pane.wait_for("session ")
            screen = await pane.history()
    text = screen.replace("\n", "")
    assert text.count("full (") == 1, screen


def test_each_context_mark_is_said_once_until_use_falls_back_under_it():
    from types import SimpleNamespace

    from nyzhi.tui.status import StatusBar

    said: list[str] = []
    console = SimpleNamespace(_context_warned=set(), note=lambda m: said.append(m[1]))

    def at(used: int) -> None:
        StatusBar._warn_context(console, SimpleNamespace(context_used=used,
                                                         context_window=1000))

    for used in (700, 760, 800, 910, 950, 400, 800):
        at(used)
    assert [m.split(" full")[0] for m in said] == [
        "context 76%", "context 91%", "context 80%"]  # back under after a compaction: again
