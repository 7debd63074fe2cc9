"""``nyzhi.textcut.cut``: the one way a text is cut to fit, and no second copy of it."""

from __future__ import annotations

import re
from pathlib import Path

import nyzhi
from nyzhi.textcut import cut


def test_cut_keeps_a_fitting_text_and_marks_a_cut_one():
    assert cut("short", 5) == "short"
    assert cut("a  b\n\tc", 10) == "a b c"  # one line: every run of whitespace one space
    assert cut("abcdefgh", 5) == "abcd…" and len(cut("x" * 50, 20)) == 20
    assert cut("a  b\nc", 10, one_line=False) == "a  b\nc"  # a repr keeps its spaces
    assert cut("'a   b   c'", 6, one_line=False) == "'a   …"
    assert cut("word and more", 10, rstrip=True) == "word and…"  # no space before the mark
    assert cut("word and more", 10) == "word and …"


def test_the_callers_show_what_they_showed():
    from nyzhi.core.events import ProcessStart
    from nyzhi.team_files.inbox import _shown
    from nyzhi.tools.builtin.web_search import _clip

    assert _clip(None, 10) == "" and _clip("a\n b  " * 10, 8) == "a b a b…"
    assert _shown("x" * 100) == "'" + "x" * 58 + "…"
    started = ProcessStart(shell_id="bg1", command="sleep   10\n&& echo " + "y" * 200)
    assert started.summary(40) == "bg1 started: " + cut("sleep 10 && echo " + "y" * 200, 40)


def test_no_second_copy_of_the_cut():
    """``text[: width - 1] + "…"`` written out again is a second copy: call ``cut``."""
    root = Path(nyzhi.__file__).parent
    copy = re.compile(r'\[: ?[\w.* ]+ - 1\](\.rstrip\(\))? \+ "…"')
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")
                   if copy.search(p.read_text()))
    # The Markdown table cell decides by the marked-up length and cuts the plain text:
    # not the same rule, and its output is pinned by the console's tests.
    assert found == ["tui/markdown.py"]
