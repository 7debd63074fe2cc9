"""Issue 54, the input side: Ctrl-G and /editor write the prompt in $EDITOR, the `/` command
menu, and the pickers (/resume). In tmux at 80x24, against the fake LLM."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from nyzhi.testing.fake_llm import open_fake_llm, reply
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")


def _editor_script(tmp: Path, prompt: str) -> Path:
    """An $EDITOR that records the draft it was given and the file's mode, then saves
    ``prompt`` (empty: saves an empty file)."""
    script = tmp / "fake-editor.sh"
    log = tmp / "editor.log"
    script.write_text(
        "#!/bin/sh\n"
        f'stat -c "%a" "$1" >> {log}\n'
        f'stat -c "%a" "$(dirname "$1")" >> {log}\n'
        f'cat "$1" >> {log}\n'
        f"echo >> {log}\n"
        f"printf '%s\\n' '{prompt}' > \"$1\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


async def test_ctrl_g_sends_the_prompt_written_in_the_editor(workspace, home, configure,
                                                             tmp_path):
    editor = _editor_script(tmp_path, "written in the editor")
    async with open_fake_llm(script=[reply("got it from the editor"),
                                     reply("second")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home,
                                env={"EDITOR": str(editor), "VISUAL": ""}) as pane:
            await pane.wait_for(INPUT_READY)
            await pane.type("a draft")
            await pane.wait_for("› a draft")
            await pane.keys("C-g")
            await pane.wait_for("got it from the editor", limit_s=30)
            # the screen came back whole and keeps its keys: /editor does the same
            await say(pane, "/editor")
            await pane.wait_for("second", limit_s=30)
    assert server.requests[0].last_user_text().strip() == "written in the editor"
    assert len(server.requests) == 2
    log = (tmp_path / "editor.log").read_text().splitlines()
    assert log[0] == "600" and log[1] == "700"  # private to the user
    assert log[2] == "a draft"  # the input's draft was given to the editor
    assert log[3:6] == ["600", "700", ""]  # /editor: the same, on an empty draft


async def test_an_empty_save_sends_nothing(workspace, home, configure, tmp_path):
    editor = _editor_script(tmp_path, "")
    async with open_fake_llm(script=[reply("the model answered")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home,
                                env={"EDITOR": str(editor), "VISUAL": ""}) as pane:
            await pane.wait_for(INPUT_READY)
            await pane.keys("C-g")
            await pane.wait_for("nothing sent")
            await say(pane, "typed by hand")
            await pane.wait_for("the model answered", limit_s=30)
    assert [r.last_user_text().strip() for r in server.requests] == ["typed by hand"]
