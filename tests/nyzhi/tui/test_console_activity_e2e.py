"""The console's activity line (issue 33 item 3) and Esc closing panels and dialogs before it
cancels a turn (item 5), in tmux against the fake LLM. The fake server holds its reply until
the test releases it, so what the screen shows while the model has not answered is checked
with nothing racing it."""

from __future__ import annotations

import re

import pytest
import trio

from nyzhi.testing.fake_llm import hang, open_fake_llm, reply
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")

SPINNER_LINE = re.compile(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] thinking… · \d+\.\ds · Esc cancels")
STREAMING = re.compile(r"answering · \d+ tok/s · \d+\.\ds")


async def test_a_spinner_shows_within_half_a_second_then_tokens_per_second(
    workspace, home, configure
):
    release = trio.Event()
    answer = "Streaming words arrive one by one " * 4

    async def script(request):
        await release.wait()  # the model "thinks" until the test has seen the spinner
        return hang(reply(answer, chunk_size=8), after_frames=4)

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await pane.wait_for("/help for commands")  # the runtime is attached
            screen = await pane.screen()
            assert not SPINNER_LINE.search(screen)  # idle: no activity line
            await say(pane, "tell me something")
            # The model is held (release) until the spinner shows: it shows before any answer
            # can. A bound, not a moment: a loaded machine may take seconds to redraw tmux.
            with trio.fail_after(30):
                screen = await pane.wait_for(lambda s: bool(SPINNER_LINE.search(s)))
            assert "› tell me something" in screen
            release.set()
            await pane.wait_for(lambda s: bool(STREAMING.search(s)))
            await pane.keys("Escape")
            screen = await pane.wait_for("[cancelled]")
            screen = await pane.wait_for(lambda s: "answering" not in s and "thinking…" not in s)
            assert not SPINNER_LINE.search(screen)
    assert len(server.requests) == 1


LINE_SPINNER = re.compile(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] thinking… · \d+\.\ds · Ctrl-C cancels")


async def test_the_line_chat_rewrites_one_status_line_on_a_terminal(workspace, home, configure):
    release = trio.Event()

    async def script(request):
        await release.wait()
        return reply("Here is the answer.")

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, "chat", "--plain") as pane:
            await pane.wait_for(lambda s: s.rstrip().endswith(">"))  # the prompt
            await say(pane, "tell me something")
            with trio.fail_after(30):  # held until seen: before any answer could come
                await pane.wait_for(lambda s: bool(LINE_SPINNER.search(s)))
            # the clock rewrites the same line: later it still shows once, with a later time
            screen = await pane.wait_for(
                lambda s: bool(re.search(r"thinking… · (0\.[5-9]|[1-9]\d*\.\d)s", s)))
            assert len(LINE_SPINNER.findall(screen)) == 1, screen
            release.set()
            screen = await pane.wait_for("Here is the answer.")
            screen = await pane.wait_for(lambda s: "thinking…" not in s)
            lines = [line for line in screen.splitlines() if line.strip()]
            assert any(line.startswith("Here is the answer.") for line in lines), screen
    assert len(server.requests) == 1


async def test_piped_line_chat_output_has_no_status_line(workspace, home, configure):
    from nyzhi.testing.cli import run_nyz

    async with open_fake_llm(script=[reply("plain answer")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "chat", stdin=b"hello\n")
    out = proc.stdout.decode()
    assert "plain answer" in out and "thinking" not in out and "\x1b[K" not in out


async def test_esc_closes_the_agent_panel_and_a_dialog_before_it_cancels_the_turn(
    workspace, home, configure
):
    from nyzhi.testing.fake_llm import tool_call

    release = trio.Event()
    replies = iter([
        None,  # the first request waits for the test
        reply(tool_calls=[tool_call("write", {"file_path": "a.txt", "content": "A"})]),
        reply("not written, fine"),
    ])

    async def script(request):
        item = next(replies)
        if item is None:
            await release.wait()
            return reply("first answer")
        return item

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "one")
            await pane.wait_for(lambda s: bool(SPINNER_LINE.search(s)))
            await pane.keys("F2")
            screen = await pane.wait_for("Esc or F2 close")  # the panel says how it closes
            assert "Agents" in screen
            await pane.keys("Escape")
            screen = await pane.wait_for(lambda s: "Esc or F2 close" not in s)
            assert "[cancelled]" not in screen  # the panel closed; the turn runs on
            release.set()
            await pane.wait_for("first answer")

            await say(pane, "write a")
            screen = await pane.wait_for("Approve write?")
            assert "n or Esc no" in screen  # the dialog says how it closes
            await pane.keys("Escape")
            screen = await pane.wait_for("not written, fine")
            assert "Approve write?" not in screen and "[cancelled]" not in screen
    assert not (workspace / "a.txt").exists()
    assert len(server.requests) == 3
