"""The console's pieces that need no terminal: markdown, history file, completion, @path
attachment, palettes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from nyzhi.core.runtime.commands import COMMANDS
from nyzhi.tui import commands, markdown, theme
from nyzhi.tui.app import attach_files
from nyzhi.tui.history import History, history_path


def attrs_of(markup, text):
    return [a for a, t in markup if text in t]


def test_markdown_headings_lists_inline_and_fenced_code():
    md = markdown.render("# Title\n- item with `code`\n1. first\n```python\ndef f():\n    return 1\n```\nafter")
    assert attrs_of(md, "Title") == ["heading"]
    assert ("bullet", "• ") in md and ("bullet", "1. ") in md
    assert ("code", "code") in md
    assert "code_kw" in attrs_of(md, "def") + attrs_of(md, "return")  # Pygments is installed here
    assert attrs_of(md, "after") == ["body"]
    assert "```" not in "".join(t for _a, t in md)


def test_markdown_tables_align_by_terminal_width_even_while_streaming():
    text = "".join(t for _a, t in markdown.render(
        "| name | n |\n|:-:|---|\n| 日本 | a\\|b |\n| x | `y` |\n| half"))
    rows = [line for line in text.split("\n") if line.startswith("│")]
    assert rows[0] == "│ name │ n   │" and rows[1] == "│ 日本 │ a|b │"  # CJK: two columns
    assert rows[2] == "│  x   │ y   │"  # :-: centres; code ticks dropped
    assert rows[3].startswith("│ half")  # a row still streaming joins the table
    assert "|" not in text.replace("a|b", "")
    assert markdown.render("## Two")[:2] == [("bullet", "▌▌ "), ("heading", "Two")]


def test_an_approval_call_line_has_no_json_and_relative_paths():
    from nyzhi.tui.conversation import call_summary

    ws = "/w/my{ws}"
    both = f'{ws}/a.txt, {ws}/b  {{"file_path": "{ws}/a.txt", "n": 2}}'
    assert call_summary(both, ws) == "b file_path='a.txt' n=2"  # b: a path not in the args
    assert call_summary('{"pattern": "x"}', ws) == "pattern='x'"
    assert call_summary("echo {x}\nls", ws) == "echo {x}\nls"  # commands as they are
    cut = f'{ws}/a.txt  {{"content": "abc…'  # the gates cut long JSON: only shortened
    assert call_summary(cut, ws) == 'a.txt {"content": "abc…'


def test_markdown_open_fence_while_streaming_is_code():
    md = markdown.render("look:\n```\nls -la")
    assert attrs_of(md, "ls -la") == ["code"]


def test_history_persists_appends_and_skips_torn_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert history_path() == tmp_path / "nyzhi" / "history"
    h = History()
    h.add("first")
    h.add("two\nlines")
    h.add("two\nlines")  # a repeat is not stored twice
    with open(history_path(), "a") as f:
        f.write('"torn')  # a crash mid-write
    raw = history_path().read_text().splitlines()
    assert [json.loads(x) for x in raw[:2]] == ["first", "two\nlines"] and len(raw) == 3
    again = History()
    assert again.entries == ["first", "two\nlines"]
    assert again.older("draft") == "two\nlines"
    assert again.older("") == "first"
    assert again.older("") is None
    assert again.newer() == "two\nlines"
    assert again.newer() == "draft"  # back to what was being typed
    assert oct(os.stat(history_path()).st_mode & 0o777) == "0o600"
    assert again.search("lines", 2) == 1 and again.search("i", 1) == 0
    assert again.search("nothing", 2) is None


def test_tab_completes_commands_and_at_paths(tmp_path):
    assert commands.complete("/he", tmp_path) == ("/help ", ["help"])
    done, names = commands.complete("/s", tmp_path)
    assert done == "/s" and {"sandbox", "sessions", "spawn", "status"} <= set(names)
    assert commands.complete("/zz", tmp_path) == (None, [])
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("x")
    assert commands.complete("look at @sr", tmp_path)[0] == "look at @src/"
    assert commands.complete("look at @src/ma", tmp_path)[0] == "look at @src/main.py"


def test_at_path_attaches_files_and_listings_but_not_other_words(tmp_path):
    (tmp_path / "a.txt").write_text("alpha contents")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.py").write_text("")
    out = attach_files("read @a.txt and @d, mail me@example.com or @missing", tmp_path)
    assert '<file path="a.txt">\nalpha contents\n</file>' in out
    assert '<directory path="d">\nx.py\n</directory>' in out
    assert "missing" not in out.split("\n\n", 1)[1]
    assert attach_files("no attachments", tmp_path) == "no attachments"


def test_themes_cover_every_name_and_no_color_has_none():
    for name in theme.THEMES:
        assert [entry[0] for entry in theme.palette(name)] == list(theme.NAMES)
    mono = theme.palette("dark", no_color=True)
    assert {(fg, bg) for _n, fg, bg, _m in mono} == {("default", "default")}
    assert theme.next_theme("dark") == "light" and theme.next_theme("light") == "high-contrast"
    assert theme.next_theme("high-contrast") == "dark"
    for name in ("dark", "light"):  # body text in the terminal's own colours (issue 54)
        assert dict((e[0], e[1:]) for e in theme.palette(name))["body"] == ("default", "default")


def test_the_theme_follows_colorfgbg():
    assert theme.resolve("auto", {"COLORFGBG": "0;15"}) == "light"
    assert theme.resolve("auto", {"COLORFGBG": "15;default;0"}) == "dark"
    assert theme.resolve("auto", {"COLORFGBG": "junk"}) == "dark"
    assert theme.resolve("auto", {}) == "dark"
    assert theme.resolve("light", {"COLORFGBG": "15;0"}) == "light"  # a named theme wins
    assert theme.resolve("purple", {}) is None


def test_every_command_has_a_one_line_summary():
    for cmd in COMMANDS.values():
        assert cmd.summary and "\n" not in cmd.summary


def test_memory_command_lists_and_shows_what_memory_write_saved(home, tmp_path):
    """The console's /memory reads the files the memory tools write (issue 19)."""
    from nyzhi.core.runtime.commands import COMMANDS
    from nyzhi.core.runtime.commands.builtin import memory_text
    from nyzhi.knowledge.memory import MemoryStore

    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    assert "(no topics)" in memory_text(root)
    MemoryStore.for_workspace(root).write("build", "Run make test before committing.")
    listing = memory_text(root)
    assert "build: Run make test before committing." in listing
    assert "Run make test before committing." in memory_text(root, "build")
    assert "no topic 'deploy'" in memory_text(root, "deploy")
    assert "memory" in COMMANDS and not COMMANDS["memory"].needs_runtime


def test_each_command_is_one_line_of_help_in_80_columns():
    width = max(len(n) for n in COMMANDS) + 2
    too_long = [n for n, c in COMMANDS.items() if 3 + width + len(c.summary) > 80]
    assert too_long == []


def test_a_thinking_block_toggles_on_its_own_until_ctrl_o():
    from nyzhi.tui.conversation import Expansion, Stream

    stream = Stream()
    stream.add_thinking("\n".join(f"thought {i}" for i in range(1, 7)))
    stream.add_text("answer")
    stream.add_thinking("other 1\nother 2\nother 3\nother 4")
    one, two = stream.blocks()

    def shown(block):
        return block.text.text

    assert "thought 1" not in shown(one) and "thought 6" in shown(one)
    one.toggle()
    assert "thought 1" in shown(one) and "other 1" not in shown(two)
    one.select(True)
    assert shown(one).startswith("▶")
    Expansion.expanded = True  # Ctrl-O: every block follows it again
    try:
        stream.refresh_blocks()
        assert one.expanded is None and "other 1" in shown(two)
    finally:
        Expansion.expanded = False


def test_the_first_frame_draws_the_consoles_starting_layout():
    from nyzhi.tui.first_frame import screen

    out = screen(80, 24, no_color=False).decode()
    assert out.startswith("\x1b[?1049h\x1b[H\x1b[2J")  # urwid's alternate screen, cleared
    assert "nyz · starting…" in out
    assert "\x1b[22;1H" + "─" * 80 in out  # divider, input and status: the console's footer
    assert "\x1b[23;1H\x1b[93;1m› " in out
    assert "\x1b[24;1H\x1b[30;47m" + " starting…".ljust(80) in out
    assert out.endswith("\x1b[23;3H")  # the cursor after the prompt
    mono = screen(40, 10, no_color=True).decode()
    assert not re.search(r"\x1b\[[0-9;]*(3[0-7]|9[0-7]|4[0-7])[;m]", mono)
    assert "\x1b[10;1H\x1b[7m" in mono  # the status bar in reverse video
    assert screen(40, 10, no_color=True, utf8=False).decode("ascii").count("-" * 40) == 1


def test_the_first_frame_echoes_plain_typing_and_keeps_every_byte():
    import pty
    import termios

    from nyzhi.tui.first_frame import FirstFrame

    master, slave = pty.openpty()
    mode = termios.tcgetattr(slave)
    mode[3] &= ~(termios.ECHO | termios.ICANON)  # as paint() leaves it; "restored" to the same
    termios.tcsetattr(slave, termios.TCSANOW, mode)
    frame = FirstFrame(slave, mode, cols=12, out=slave)
    frame.start()

    def read_until(expected: bytes) -> bytes:
        got = b""
        while not got.endswith(expected):
            got += os.read(master, 100)
        return got

    try:
        os.write(master, b"ab\x7fc")
        assert read_until(b"c") == b"ab\b \bc"  # text and Backspace, drawn as typed
        os.write(master, b"xyz")
        assert read_until(b"z") == b"xyz"
        typed = frame.release()  # stops the thread and takes what is still queued
        assert typed == b"ab\x7fc" + b"xyz" and frame.shown == "acxyz"
        frame._draw(b"\x1b[Ad")  # an arrow cannot be drawn here: the echo ends
        assert frame.shown == "acxyz" and not frame.echoing
        short = FirstFrame(slave, mode, cols=6, out=slave)  # room for 3 characters
        short._draw(b"abcd")
        assert short.shown == "abc" and not short.echoing
        short.release()
    finally:
        os.close(master)
        os.close(slave)


def test_the_console_offers_every_command_and_the_chat_all_but_the_screen_ones():
    """One table (nyzhi.core.runtime.commands): the console has every feature a command needs; a front
    end with none (the line chat) is offered all but /clear, /agents, /theme, /resume and /editor."""
    from nyzhi.core.runtime.commands import available

    assert set(available(commands.FEATURES)) == set(COMMANDS)
    assert set(COMMANDS) - set(available(frozenset())) == {"clear", "agents", "theme", "resume",
                                                              "editor"}
    assert commands.complete("/ex", Path("."))[0] == "/export "  # aliases are not completed


def test_a_context_share_under_one_percent_reads_less_than_one():
    from nyzhi.core.protocol import context_share  # moved: the one status formatter

    assert context_share(732, 128_000) == "<1%"  # 0.57 %: not "0%" beside 732 tokens
    assert context_share(0, 128_000) == "0%"
    assert context_share(1280, 128_000) == "1%"
    assert context_share(64_000, 128_000) == "50%"
    assert context_share(200_000, 128_000) == "100%"


def test_the_readme_lists_the_commands_help_shows():
    """README.md's console command list is the one table's (``/help``), nothing more or less."""
    from nyzhi.core.runtime.commands import available

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    listed = readme.split("`/help` lists the commands:", 1)[1].split("(`/exit` too)", 1)[0]
    names = set(re.findall(r"/([a-z][a-z-]*)", listed))
    assert names | {"help"} == set(available(commands.FEATURES))


def test_the_agent_tree_shows_background_processes_under_their_agent_with_view_and_kill():
    from nyzhi.tools.background import BackgroundShell, ShellTable
    from nyzhi.tui.widgets import AgentPanel

    asked: list[tuple[str, str]] = []
    panel = AgentPanel(lambda _p: None, lambda _p, _s: None, lambda _p: None,
                       lambda shell_id, action: asked.append((shell_id, action)))
    table = ShellTable()
    shell = BackgroundShell("bg_1", "python3 -m http.server 8000", "/agents/main/worker-1",
                            tty=False, buffer_bytes=4096, log_path=None)
    shell.state = "running"
    shell.add_output("Serving HTTP on 0.0.0.0 port 8000\n")
    table.shells[shell.id] = shell
    panel.shells = table
    panel.agent("/agents/main")
    panel.agent("/agents/main/worker-1")
    panel.refresh("/agents/main")
    texts = [row.base_widget.text for row in panel.walker]
    assert len(texts) == 3 and "worker-1" in texts[1]
    assert "⚙ bg_1 [running" in texts[2] and "http.server 8000" in texts[2]
    assert texts[2].rstrip().endswith("Serving HTTP on 0.0.0.0 port 8000")
    panel.walker.set_focus(2)
    assert panel.keypress((40, 20), "k") is None
    panel.walker[2].base_widget.keypress((40,), "enter")
    assert asked == [("bg_1", "kill"), ("bg_1", "view")]
    shell.state, shell.exit_code = "exited", 3
    panel.refresh("/agents/main")
    assert "[exit 3" in panel.walker[2].base_widget.text
