"""How the console draws things (tmux against the fake LLM): Markdown tables and headings,
themes, slash-command headings, the approval call line and collapsed listings."""

from __future__ import annotations

import re

import pytest

from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
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


def _colours_at(escaped: str, text: str) -> tuple[str, str]:
    """The (foreground, background) SGR codes in force where ``text`` starts on a
    ``capture-pane -e`` screen ("" for the terminal's default): tmux writes only changes,
    so the state is followed from the top of the screen."""
    fg = bg = ""
    for match in re.finditer(r"\x1b\[([0-9;]*)m", escaped[: escaped.index(text)]):
        parts = match.group(1).split(";")
        i = 0
        while i < len(parts):
            code = int(parts[i] or 0)
            if code in (38, 48):  # 38;5;N or 38;2;R;G;B: one colour
                size = 3 if parts[i + 1:i + 2] == ["5"] else 5
                value = ";".join(parts[i:i + size])
                fg, bg = (value, bg) if code == 38 else (fg, value)
                i += size
                continue
            if code == 0:
                fg = bg = ""
            elif code == 39:
                fg = ""
            elif code == 49:
                bg = ""
            elif 30 <= code <= 37 or 90 <= code <= 97:
                fg = str(code)
            elif 40 <= code <= 47 or 100 <= code <= 107:
                bg = str(code)
            i += 1
    return fg, bg


async def test_light_theme_body_text_uses_the_terminal_default_colours(
        workspace, home, configure):
    """Black body text was invisible on a dark terminal: the body is drawn in the terminal's
    default foreground (no colour code before it), the theme follows COLORFGBG when [tui]
    theme is auto (the default), and /theme NAME picks one."""
    async with open_fake_llm(script=[reply("plain body words here")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, env={"COLORFGBG": "0;15"}) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "/status")
            await pane.wait_for(lambda s: re.search(r"theme\s+light", s) is not None)
            await say(pane, "hello")
            await pane.wait_for("plain body words here")
            escaped = await pane.tmux("capture-pane", "-p", "-e")
            assert _colours_at(escaped, "plain body words") == ("", "")  # the terminal's own
            await say(pane, "/theme high-contrast")
            await pane.wait_for("theme: high-contrast")
            escaped = await pane.tmux("capture-pane", "-p", "-e")
            assert _colours_at(escaped, "plain body words") == ("97", "40")  # white on black
            # the blank row between two blocks is black too, not the terminal's background
            between = escaped[escaped.index("plain body words here"):
                              escaped.index("› /theme high-contrast")]
            assert "\n\n" in between and "\x1b[49m" not in between and "\x1b[0m" not in between
            await say(pane, "/theme purple")
            await pane.wait_for("/theme: expected one of auto")


async def test_slash_command_output_is_headed_by_the_command(workspace, home, configure):
    async with open_fake_llm(script=[reply("unused")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "/context")
            await pane.wait_for("compaction at")
            await say(pane, "/hooks")
            screen = await pane.wait_for("no hooks")
    lines = [line.rstrip() for line in screen.splitlines()]
    first, second = lines.index("› /context"), lines.index("› /hooks")
    assert first < second
    assert any("compaction at" in line for line in lines[first + 1:second])  # /context's output
    assert lines[second - 1] == ""  # a blank line parts one command from the last
    assert any("no hooks" in line for line in lines[second + 1:])
    assert server.requests == []


async def test_the_approval_call_line_reads_like_the_tool_card(workspace, home, configure):
    """Not the absolute path twice and raw JSON: key=value pairs, the path relative."""
    target = workspace / "notes" / "a.txt"
    script = [reply(tool_calls=[tool_call("write", {"file_path": str(target),
                                                    "content": "hello"})]),
              reply("written")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "write it")
            screen = await pane.wait_for("Approve write?")
            call = next(line for line in screen.splitlines() if "call:" in line)
            assert "file_path='notes/a.txt'" in call and "content='hello'" in call
            assert str(workspace) not in screen and '{"' not in screen
            await pane.keys("y")
            screen = await pane.wait_for("written")
            assert "write file_path='notes/a.txt'" in screen  # the card: relative too
    assert target.read_text() == "hello"


async def test_a_collapsed_listing_shows_its_first_lines(workspace, home, configure):
    """list_dir reads from the top: its collapsed card keeps the first entries (a bash card
    keeps the tail, as test_a_tool_card_shows_the_tail_of_its_output checks)."""
    for i in range(1, 21):
        (workspace / f"entry-{i:02d}.txt").write_text("x")
    script = [reply(tool_calls=[tool_call("list_dir", {"path": "."})]), reply("listed")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, "--trust", "full") as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "list")
            screen = await pane.wait_for("listed")
    card = screen[screen.index("⚙ list_dir"):screen.index("listed")]
    assert "entry-01.txt" in card and "entry-20.txt" not in card
    more = next(line for line in card.splitlines() if "more line(s)" in line)
    assert card.index("entry-01.txt") < card.index(more)  # the cut is said below the lines
