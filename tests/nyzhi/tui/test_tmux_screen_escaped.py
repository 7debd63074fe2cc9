"""``TmuxPane.screen_escaped`` keeps a program's SGR colours and attributes, which the
plain ``screen`` drops: what a screenshot renderer needs (issue 54)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nyzhi.testing.tmux import TmuxPane


@pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")
async def test_screen_escaped_keeps_bold_and_colour(tmp_path: Path) -> None:
    pane = TmuxPane(tmp_path / "tmux.sock")
    await pane.start(
        ["sh", "-c", r"printf '\033[1;31mRED\033[0m plain\n'; sleep 30"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    try:
        await pane.wait_for("RED plain")
        escaped = await pane.screen_escaped()
        assert "\x1b[1m" in escaped and "\x1b[31m" in escaped
        assert "\x1b[" not in await pane.screen()
    finally:
        pane.kill()
