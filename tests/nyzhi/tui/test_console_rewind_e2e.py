"""The checkpoint commands in the real console (tmux) against the fake LLM: ``/undo all``,
``/rewind`` (the list, the code, the conversation), ``/checkpoint save|list|restore``, a
restore refused over a file changed outside nyz until ``force``, and ``/retry``."""

from __future__ import annotations

import pytest

from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")


def write(path: str, content: str):
    return tool_call("write", {"file_path": path, "content": content})


async def test_undo_all_rewind_checkpoint_and_retry_in_the_console(workspace, home, configure):
    script = [
        reply(tool_calls=[write("a.txt", "v1\n")]), reply("answer one"),
        reply(tool_calls=[write("b.txt", "b\n"), tool_call(
            "edit", {"file_path": "a.txt", "old_string": "v1", "new_string": "v2"})]),
        reply("answer two"),
        reply(tool_calls=[write("c.txt", "c\n")]), reply(tool_calls=[write("d.txt", "d\n")]),
        reply("answer three"),
        reply("answer two again"),
    ]
    a, b, c, d = (workspace / n for n in ("a.txt", "b.txt", "c.txt", "d.txt"))
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, "--trust", "full") as pane:
            await pane.wait_for(INPUT_READY)

            async def command(line: str, shows: str) -> str:
                await pane.keys("C-l")  # clears the screen: what follows is this command's
                await pane.wait_for(lambda s: shows not in s)
                await say(pane, line)
                return await pane.wait_for(shows)

            for prompt, answer in (("ONE", "answer one"), ("TWO", "answer two"),
                                   ("THREE", "answer three")):
                await say(pane, prompt)
                await pane.wait_for(answer)
            assert c.exists() and d.exists()

            # /undo all: both tool calls of the last turn, not the turns before.
            screen = await command("/undo all", "removed")
            assert "c.txt" in screen and "d.txt" in screen
            assert not c.exists() and not d.exists()
            assert a.read_text() == "v2\n" and b.exists()

            screen = await command("/rewind", "not tracked")
            assert "1. ONE" in screen and "2. TWO" in screen and "3. THREE" in screen
            await command("/checkpoint save mark", "checkpoint mark saved")

            # The code only, to before prompt 2: b.txt goes, a.txt is v1 again.
            await command("/rewind 2 code", "restored")
            assert a.read_text() == "v1\n" and not b.exists()
            screen = await command("/checkpoint list", "named checkpoints")
            assert "mark" in screen and "undo-restore-" in screen
            assert "3. THREE" in screen  # the conversation was not rewound

            # The named checkpoint brings back the files as they were when it was saved.
            await command("/checkpoint restore mark code", "restored")
            assert a.read_text() == "v2\n" and b.read_text() == "b\n"

            # A file changed outside nyz since nyz wrote it is not overwritten without force.
            a.write_text("my own edit\n")
            screen = await command("/rewind 2 code", "changed outside nyz")
            assert "a.txt" in screen and "force" in screen
            assert a.read_text() == "my own edit\n" and b.exists()
            await command("/rewind 2 code force", "restored")
            assert a.read_text() == "v1\n" and not b.exists()

            # The conversation only, to before prompt 3: THREE leaves the list.
            await command("/rewind 3 conversation", "conversation: back to")
            screen = await command("/rewind", "not tracked")
            assert "2. TWO" in screen and "THREE" not in screen

            # /retry: back to before prompt 2 (its files and its answer), then TWO again.
            await command("/retry", "answer two again")
            assert not b.exists() and a.read_text() == "v1\n"
    sent = [text for role, text in server.requests[-1].transcript() if role == "user"]
    assert sent == ["ONE", "TWO"]
    assert len(server.requests) == len(script)
