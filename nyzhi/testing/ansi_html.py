"""A terminal screen with SGR escapes (``TmuxPane.screen_escaped``) as an HTML page, for
screenshots of the console (issue 54).

Colours: the 16 ANSI colours, the 256-colour cube and grey ramp, and truecolour, for the
foreground and the background; bold, dim, italic, underline and reverse. The terminal's own
default foreground and background stay CSS variables (``--fg``, ``--bg``), set by the page's
terminal theme, ``dark`` or ``light``, so a screen that keeps to the defaults reads on both.
Each row is padded to the pane's width (a wide character takes two cells).
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass, replace

_CSI = re.compile(r"\x1b\[([0-9;:?]*)([A-Za-z])")
_OTHER_ESC = re.compile(r"\x1b(?:\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")

# xterm's 16 colours, as most terminals ship them
ANSI16 = (
    "#000000",
    "#cd0000",
    "#00cd00",
    "#cdcd00",
    "#0000ee",
    "#cd00cd",
    "#00cdcd",
    "#e5e5e5",
    "#7f7f7f",
    "#ff0000",
    "#00ff00",
    "#ffff00",
    "#5c5cff",
    "#ff00ff",
    "#00ffff",
    "#ffffff",
)
TERMINALS = {  # the default colours of a dark and of a light terminal
    "dark": {"fg": "#d4d4d4", "bg": "#1e1e1e"},
    "light": {"fg": "#1f2328", "bg": "#fbfbf8"},
}


def colour_256(n: int) -> str:
    if n < 16:
        return ANSI16[n]
    if n < 232:
        n -= 16
        steps = (0, 95, 135, 175, 215, 255)
        r, g, b = steps[n // 36], steps[n // 6 % 6], steps[n % 6]
        return f"#{r:02x}{g:02x}{b:02x}"
    level = 8 + (n - 232) * 10
    return f"#{level:02x}{level:02x}{level:02x}"


@dataclass(frozen=True)
class Style:
    """One cell's look; ``fg``/``bg`` None is the terminal's default colour."""

    fg: str | None = None
    bg: str | None = None
    bold: bool = False
    dim: bool = False
    italic: bool = False
    underline: bool = False
    reverse: bool = False


@dataclass(frozen=True)
class Run:
    text: str
    style: Style


def _extended(params: list[int], i: int) -> tuple[str | None, int]:
    """The colour of ``38;5;N`` / ``38;2;R;G;B`` starting at ``params[i]`` (the 5 or 2), and
    the index after it."""
    if i < len(params) and params[i] == 5 and i + 1 < len(params):
        return colour_256(params[i + 1] % 256), i + 2
    if i < len(params) and params[i] == 2 and i + 3 < len(params):
        r, g, b = (max(0, min(255, v)) for v in params[i + 1 : i + 4])
        return f"#{r:02x}{g:02x}{b:02x}", i + 4
    return None, len(params)


# The SGR codes that set or clear an attribute (22 ends both bold and dim, as terminals do).
_ATTRIBUTES: dict[int, dict[str, bool]] = {
    1: {"bold": True}, 2: {"dim": True}, 3: {"italic": True}, 4: {"underline": True},
    7: {"reverse": True}, 22: {"bold": False, "dim": False}, 23: {"italic": False},
    24: {"underline": False}, 27: {"reverse": False},
}


def apply_sgr(style: Style, raw: str) -> Style:
    """``style`` after the SGR sequence with parameters ``raw`` (``"1;38;5;208"``)."""
    params = [int(p) if p.isdigit() else 0 for p in re.split(r"[;:]", raw)] if raw else [0]
    i = 0
    while i < len(params):
        p = params[i]
        i += 1
        if p == 0:
            style = Style()
        elif p in _ATTRIBUTES:
            style = replace(style, **_ATTRIBUTES[p])
        elif 30 <= p <= 37:
            style = replace(style, fg=ANSI16[p - 30])
        elif 90 <= p <= 97:
            style = replace(style, fg=ANSI16[p - 90 + 8])
        elif 40 <= p <= 47:
            style = replace(style, bg=ANSI16[p - 40])
        elif 100 <= p <= 107:
            style = replace(style, bg=ANSI16[p - 100 + 8])
        elif p == 39:
            style = replace(style, fg=None)
        elif p == 49:
            style = replace(style, bg=None)
        elif p in (38, 48):
            colour, i = _extended(params, i)
            style = replace(style, **{"fg" if p == 38 else "bg": colour})
    return style


def cell_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def parse(escaped: str, width: int, height: int | None = None) -> list[list[Run]]:
    """The screen's rows as runs of one style, each row padded with default-style spaces to
    ``width`` cells (and the screen to ``height`` rows when given). The style carries over
    from row to row, as it does on a terminal."""
    rows: list[list[Run]] = []
    style = Style()
    lines = escaped.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        line = _OTHER_ESC.sub("", line)
        runs: list[Run] = []
        cells = 0
        pos = 0
        for m in _CSI.finditer(line):
            text = line[pos : m.start()]
            if text:
                runs.append(Run(text, style))
                cells += sum(cell_width(c) for c in text)
            if m.group(2) == "m":
                style = apply_sgr(style, m.group(1))
            pos = m.end()
        text = line[pos:]
        if text:
            runs.append(Run(text, style))
            cells += sum(cell_width(c) for c in text)
        if cells < width:
            runs.append(Run(" " * (width - cells), Style()))
        rows.append(runs)
    while height is not None and len(rows) < height:
        rows.append([Run(" " * width, Style())])
    return rows


def _css(style: Style) -> str:
    fg = style.fg or "var(--fg)"
    bg = style.bg or "var(--bg)"
    if style.reverse:
        fg, bg = bg, fg
    parts = []
    if fg != "var(--fg)":
        parts.append(f"color:{fg}")
    if bg != "var(--bg)":
        parts.append(f"background:{bg}")
    if style.bold:
        parts.append("font-weight:bold")
    if style.dim:
        parts.append("opacity:.6")
    if style.italic:
        parts.append("font-style:italic")
    if style.underline:
        parts.append("text-decoration:underline")
    return ";".join(parts)


def rows_html(rows: list[list[Run]]) -> str:
    out = []
    for runs in rows:
        spans = []
        for run in runs:
            css = _css(run.style)
            text = html.escape(run.text)
            spans.append(f'<span style="{css}">{text}</span>' if css else text)
        out.append(f'<div class="row">{"".join(spans)}</div>')
    return "\n".join(out)


def page(
    escaped: str, width: int, height: int, *, terminal: str = "dark", title: str = "nyz"
) -> str:
    """A whole HTML document showing the screen in a terminal of theme ``terminal``
    (``dark`` or ``light``); the screen is the element ``#term``."""
    colours = TERMINALS[terminal]
    rows = parse(escaped, width, height)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
:root {{ --fg: {colours["fg"]}; --bg: {colours["bg"]}; }}
html, body {{ margin: 0; padding: 0; background: var(--bg); }}
#term {{ display: inline-block; padding: 8px; color: var(--fg); background: var(--bg);
  font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 14px;
  line-height: 17px; }}
.row {{ white-space: pre; height: 17px; width: {width}ch; overflow: hidden; }}
</style></head>
<body><div id="term" data-terminal="{terminal}">
{rows_html(rows)}
</div></body></html>
"""
