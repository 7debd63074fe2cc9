"""``nyzhi.testing.ansi_html``: a screen's SGR escapes as styled HTML (issue 54)."""

from __future__ import annotations

from nyzhi.testing import ansi_html
from nyzhi.testing.ansi_html import Style


def test_sgr_colours_and_attributes() -> None:
    screen = (
        "\x1b[1;31mred\x1b[0m \x1b[38;5;208mpeach\x1b[48;2;1;2;3mrgb\x1b[39;49m plain\n"
        "\x1b[4;7mrev\x1b[24;27m \x1b[92mbright\x1b[38;5;244mgrey\n"
    )
    rows = ansi_html.parse(screen, 30, 3)
    assert len(rows) == 3
    first = {run.text: run.style for run in rows[0]}
    assert first["red"] == Style(fg="#cd0000", bold=True)
    assert first["peach"] == Style(fg="#ff8700")
    assert first["rgb"] == Style(fg="#ff8700", bg="#010203")
    assert first[" plain"] == Style()
    second = {run.text: run.style for run in rows[1]}
    assert second["rev"] == Style(underline=True, reverse=True)
    assert second["bright"] == Style(fg="#00ff00")
    assert second["grey"] == Style(fg="#808080")
    # every row is padded to the width (a wide character takes two cells)
    assert all(sum(len(run.text) for run in row) == 30 for row in rows)
    wide = ansi_html.parse("日本\n", 10)
    assert sum(ansi_html.cell_width(c) for run in wide[0] for c in run.text) == 10


def test_page_keeps_default_colours_as_variables() -> None:
    doc = ansi_html.page("\x1b[7mrev\x1b[0m body <b>\n", 20, 2, terminal="light")
    assert "--fg: #1f2328" in doc and 'data-terminal="light"' in doc
    assert '<span style="color:var(--bg);background:var(--fg)">rev</span>' in doc
    assert " body &lt;b&gt;" in doc  # default-coloured text has no colour of its own
