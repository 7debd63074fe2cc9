"""The console's palettes: dark, light, high-contrast, and a colourless one for ``NO_COLOR``.

Every widget names an attribute from ``NAMES``; a palette maps each to colours. Keeping the
names in one tuple means a theme that forgets one fails ``test_themes_cover_every_name``
instead of drawing an unstyled widget.

Body text (answers, input, the F2 panel) is drawn in the terminal's own default colours in
"dark" and "light" alike, so either theme stays readable whatever the terminal's background
is; the themes differ in their accents, which are chosen for a dark or a light background.
``[tui] theme = "auto"`` (the default) picks between them from ``COLORFGBG`` when the terminal
sets it. "high-contrast" sets its own black background, so it does not depend on the
terminal's colours at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

NAMES = (
    "body", "dim", "user", "heading", "bullet", "code", "code_kw", "code_str", "code_comment",
    "tool", "tool_ok", "tool_err", "status", "status_warn", "input", "prompt", "modal",
    "modal_title", "selected", "error", "notice", "panel", "modal_dim", "modal_ok", "modal_err",
    "modal_prompt",
)

# Inside a dialog, the attributes with the terminal's own background take the dialog's
# instead (a dim hint or a diff line would cut a hole in the box): ``IN_MODAL`` is the
# dialogs' attr_map, and palette() derives each ``modal_*`` entry (its colour, the dialog's
# background).
IN_MODAL = {None: "modal", "input": "modal", "dim": "modal_dim", "tool_ok": "modal_ok",
            "tool_err": "modal_err", "prompt": "modal_prompt"}

THEMES = ("dark", "light", "high-contrast")
AUTO = "auto"  # [tui] theme: dark or light, from the terminal's background where it says

_DARK = {
    "body": ("default", "default"),
    "dim": ("dark gray", "default"),
    "user": ("light cyan,bold", "default"),
    "heading": ("yellow,bold", "default"),
    "bullet": ("yellow", "default"),
    "code": ("light green", "default"),
    "code_kw": ("light magenta", "default"),
    "code_str": ("brown", "default"),
    "code_comment": ("dark gray", "default"),
    "tool": ("light blue", "default"),
    "tool_ok": ("light green", "default"),
    "tool_err": ("light red", "default"),
    "status": ("black", "light gray"),
    "status_warn": ("white,bold", "dark red"),
    "input": ("default", "default"),
    "prompt": ("yellow,bold", "default"),
    "modal": ("white", "dark blue"),
    "modal_title": ("yellow,bold", "dark blue"),
    "selected": ("black", "yellow"),
    "error": ("light red,bold", "default"),
    "notice": ("dark cyan", "default"),
    "panel": ("default", "default"),
}

_LIGHT = {
    "body": ("default", "default"),
    "dim": ("dark gray", "default"),
    "user": ("dark blue,bold", "default"),
    "heading": ("dark magenta,bold", "default"),
    "bullet": ("dark magenta", "default"),
    "code": ("dark green", "default"),
    "code_kw": ("dark blue", "default"),
    "code_str": ("brown", "default"),
    "code_comment": ("dark gray", "default"),
    "tool": ("dark blue", "default"),
    "tool_ok": ("dark green", "default"),
    "tool_err": ("dark red", "default"),
    "status": ("white", "dark blue"),
    "status_warn": ("white,bold", "dark red"),
    "input": ("default", "default"),
    "prompt": ("dark magenta,bold", "default"),
    "modal": ("black", "light gray"),
    "modal_title": ("dark blue,bold", "light gray"),
    "selected": ("white", "dark blue"),
    "error": ("dark red,bold", "default"),
    "notice": ("dark cyan", "default"),
    "panel": ("default", "default"),
}

# Bright colours on black, bold where it helps: readable on any terminal and at low vision.
_HIGH_CONTRAST = {
    "body": ("white", "black"),
    "dim": ("light gray", "black"),
    "user": ("light cyan,bold", "black"),
    "heading": ("yellow,bold", "black"),
    "bullet": ("yellow,bold", "black"),
    "code": ("light green,bold", "black"),
    "code_kw": ("light magenta,bold", "black"),
    "code_str": ("yellow", "black"),
    "code_comment": ("light gray", "black"),
    "tool": ("light cyan", "black"),
    "tool_ok": ("light green,bold", "black"),
    "tool_err": ("light red,bold", "black"),
    "status": ("black", "white"),
    "status_warn": ("white,bold", "dark red"),
    "input": ("white", "black"),
    "prompt": ("yellow,bold", "black"),
    "modal": ("white", "black"),
    "modal_title": ("yellow,bold", "black"),
    "selected": ("black", "yellow"),
    "error": ("light red,bold", "black"),
    "notice": ("light cyan", "black"),
    "panel": ("white", "black"),
}

_TABLES = {"dark": _DARK, "light": _LIGHT, "high-contrast": _HIGH_CONTRAST}

# NO_COLOR: no colour at all; emphasis by bold / standout only (https://no-color.org).
_MONO_EMPHASIS = {
    "user": "bold", "heading": "bold", "prompt": "bold", "modal_title": "bold", "error": "bold",
    "status": "standout", "status_warn": "standout", "selected": "standout",
}


def palette(theme: str, *, no_color: bool = False) -> list[tuple[str, ...]]:
    """urwid palette entries for ``theme`` (``no_color``: the colourless variant)."""
    if no_color:
        return [(name, "default", "default", _MONO_EMPHASIS.get(name, ""))
                for name in NAMES]
    table = dict(_TABLES.get(theme, _DARK))
    modal_bg = table["modal"][1]
    for plain, inside in IN_MODAL.items():
        if inside != "modal":
            table[inside] = (table[plain][0], modal_bg)
    return [(name, fg, bg) for name, (fg, bg) in table.items()]


def detect(env: Mapping[str, str] | None = None) -> str:
    """"light" or "dark" from the terminal's background, as ``COLORFGBG`` ("fg;bg", set by
    rxvt, Konsole, iTerm2 and others) gives it; "dark" when it is unset or unreadable.

    OSC 11 (asking the terminal for its background) is not used: the answer arrives on
    stdin, mixed with what the person types, at a time the terminal chooses, and start-up
    must never wait for it.
    """
    value = (os.environ if env is None else env).get("COLORFGBG", "")
    bg = value.rsplit(";", 1)[-1].strip()
    if not bg.isdigit():
        return "dark"
    # The 16 ANSI colours: 7 (light grey) and 9-15 (the bright ones) are light backgrounds.
    return "light" if int(bg) == 7 or 9 <= int(bg) <= 15 else "dark"


def resolve(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The theme ``[tui] theme`` / ``/theme NAME`` means ("auto": detected), or None."""
    if name == AUTO:
        return detect(env)
    return name if name in THEMES else None


def next_theme(theme: str) -> str:
    return THEMES[(THEMES.index(theme) + 1) % len(THEMES)] if theme in THEMES else THEMES[0]
