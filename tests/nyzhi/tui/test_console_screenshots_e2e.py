"""Screenshots of the real console (issue 54): ``nyz`` in tmux against the fake LLM, each
screen read with its colours (``TmuxPane.screen_escaped``), turned into HTML
(``nyzhi.testing.ansi_html``) and photographed by the real headless Chromium the browser tools
drive. The PNGs go to ``$NYZHI_SCREENSHOTS`` when set (``make screenshots``: docs/screenshots),
else to the test's temp dir.

Screens, at 120 and at 60 columns: an approval, an answer (dark terminal), the command menu,
the /theme picker, and the answer again on a light terminal after ``/theme light``.
"""

from __future__ import annotations

import base64
import io
import os
import re
from pathlib import Path

import pytest
import trio

from nyzhi.testing import ansi_html
from nyzhi.testing.browser import chromium, open_browser
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = [
    pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed"),
    pytest.mark.skipif(
        chromium() is None and not os.environ.get("CI"),
        reason="chromium is not installed (make test installs it)",
    ),
]

ANSWER = (
    "# Written\n\nThe file **a.txt** now holds one line; plain body words here.\n\n"
    "- read it with `cat a.txt`\n- or ask me to change it\n"
)
HEIGHT = {120: 32, 60: 30}


def out_dir(tmp_path: Path) -> Path:
    where = os.environ.get("NYZHI_SCREENSHOTS")
    path = Path(where) if where else tmp_path / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


async def photograph(
    browser, escaped: str, width: int, height: int, terminal: str, target: Path, work: Path
) -> tuple[Path, dict]:
    """``escaped`` drawn in a ``terminal`` (dark/light) terminal, saved as the PNG ``target``;
    the PNG's path and what the page measured (the screen's box, one cell's width)."""
    doc = work / (target.stem + ".html")
    await trio.Path(doc).write_text(
        ansi_html.page(escaped, width, height, terminal=terminal), encoding="utf-8"
    )
    page = await browser.new_page(1400, 1000)
    await page.goto(doc.as_uri())
    box = await page.wait("""(() => { const r = document.getElementById('term')
        .getBoundingClientRect(); const p = document.createElement('span');
        p.textContent = 'M'.repeat(100); document.getElementById('term').appendChild(p);
        const cell = p.getBoundingClientRect().width / 100; p.remove();
        return {w: Math.ceil(r.width), h: Math.ceil(r.height), cell: cell}; })()""")
    shot = await page.call(
        "Page.captureScreenshot",
        format="png",
        clip={"x": 0, "y": 0, "width": box["w"], "height": box["h"], "scale": 1},
    )
    await trio.Path(target).write_bytes(base64.b64decode(shot["data"]))
    box["page"] = page
    return target, box


def check_png(path: Path, box: dict, width: int, height: int) -> None:
    """A valid PNG of the screen's size (``width`` cells of the page's monospace cell, plus the
    8px padding each side), and not blank."""
    from PIL import Image

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
    image = Image.open(io.BytesIO(data))
    image.verify()
    image = Image.open(io.BytesIO(data)).convert("RGB")
    assert image.size == (box["w"], box["h"])
    assert abs(box["w"] - (width * box["cell"] + 16)) <= 2
    assert abs(box["h"] - (height * 17 + 16)) <= 2
    colours = image.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 20  # text, accents and antialiasing, not an empty frame


@pytest.mark.parametrize("width", [120, 60])
async def test_console_screenshots(workspace, home, configure, approve_project, tmp_path, width):
    height = HEIGHT[width]
    out = out_dir(tmp_path)
    work = tmp_path / "html"
    work.mkdir()
    script = [
        reply(tool_calls=[tool_call("write", {"file_path": "a.txt", "content": "hello\n"})]),
        reply(ANSWER, chunk_size=40),
    ]
    shots: list[tuple[str, str, str]] = []  # (name, terminal, escaped)
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        # the fake model's context window, so the screens show no note that it is unknown
        config = workspace / ".nyzhi" / "config.toml"
        config.write_text(
            config.read_text().replace(
                'model = "fake-model-1"\n', 'model = "fake-model-1"\ncontext_window = 128000\n'
            )
        )
        approve_project(workspace)
        async with open_console(
            workspace, home, env={"COLORFGBG": "15;0"}, width=width, height=height
        ) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "write a.txt saying hello")
            await pane.wait_for("Approve write?")
            shots.append(("approval", "dark", await pane.screen_escaped()))
            await pane.keys("y")
            await pane.wait_for("ask me to change it")
            shots.append(("dark", "dark", await pane.screen_escaped()))
            await pane.type("/")
            menu = await pane.wait_for("/autopilot")
            # one row a command, however narrow: a help text too long is cut, not wrapped
            lines = menu.splitlines()
            counter = next(
                i for i, line in enumerate(lines) if re.fullmatch(r"1/\d+", line.strip())
            )
            assert all(line.lstrip().startswith("/") for line in lines[counter - 8 : counter])
            shots.append(("menu", "dark", await pane.screen_escaped()))
            await pane.keys("Escape")
            await pane.keys("BSpace")
            await say(pane, "/theme")
            await pane.wait_for("filter:")
            shots.append(("picker", "dark", await pane.screen_escaped()))
            await pane.keys("Escape")
            await pane.wait_for(lambda s: "filter:" not in s)
            await say(pane, "/theme light")
            await pane.wait_for("theme: light")
            light = await pane.screen_escaped()
            shots.append(("light", "light", light))

    # the light screen's body text keeps the terminal's own colour, and nothing is drawn in
    # hard black on the terminal's background (unreadable on a dark terminal, issue 54)
    # inside a dialog nothing takes the terminal's background (a dim hint, a diff line)
    screens = {name: escaped for name, _terminal, escaped in shots}
    for name, text in (
        ("picker", "in use"),
        ("picker", "Esc"),
        ("picker", "filter:"),
        ("picker", "light"),
        ("approval", "+hello"),
        ("approval", "/dev/null"),
    ):
        runs = [r for row in ansi_html.parse(screens[name], width) for r in row if text in r.text]
        assert runs and all(r.style.bg is not None for r in runs), (name, text, runs)

    rows = ansi_html.parse(light, width, height)
    runs = [run for row in rows for run in row]
    body = [run for run in runs if "plain body words" in run.text]
    assert body and all(run.style.fg is None and run.style.bg is None for run in body)
    for run in runs:
        if run.text.strip() and run.style.bg is None and not run.style.reverse:
            assert run.style.fg != "#000000", f"black on the default background: {run.text!r}"

    async with open_browser(tmp_path / "profile") as browser:
        for name, terminal, escaped in shots:
            target = out / f"console-{width}-{name}.png"
            path, box = await photograph(browser, escaped, width, height, terminal, target, work)
            check_png(path, box, width, height)
            if name == "light":
                colour = await box["page"].evaluate("""(() => {
                    const w = document.createTreeWalker(document.getElementById('term'),
                        NodeFilter.SHOW_TEXT);
                    let n; while ((n = w.nextNode()))
                        if (n.textContent.includes('plain body words'))
                            return getComputedStyle(n.parentElement).color;
                    return null; })()""")
                assert colour == "rgb(31, 35, 40)"  # the light terminal's --fg
    print("screenshots:", out)
