"""How the console draws things (tmux against the fake LLM): Markdown tables and headings,
themes, slash-command headings, the approval call line and collapsed listings."""

from __future__ import annotations

import pytest

from nyzhi.testing.fake_llm import open_fake_llm, reply
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")

TABLE_ANSWER = """## Sizes

| file | lines |
|------|------:|
| a.py | 7 |
| long_name.py | 1234 |

done."""


async def test_a_markdown_table_renders_aligned_and_a_heading_keeps_a_marker(
        workspace, home, configure):
    async with open_fake_llm(script=[reply(TABLE_ANSWER)]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "sizes?")
            screen = await pane.wait_for("done.")
    lines = screen.splitlines()
    assert any(line.strip() == "▌▌ Sizes" for line in lines)
    assert not any("|---" in line or "| a.py |" in line for line in lines)  # no raw pipes
    rows = [line.rstrip() for line in lines if "a.py" in line or "long_name.py" in line
            or "file" in line and "lines" in line]
    assert len(rows) == 3
    assert len({len(r) for r in rows}) == 1  # every row is as wide: the columns line up
    assert rows[1].rindex("7") == rows[2].rindex("4")  # ---: aligns the column right
    assert any(line.lstrip().startswith("├") for line in lines)  # the rule under the header
