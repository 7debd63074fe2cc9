"""The console's palettes: dark, light, and a colourless one for ``NO_COLOR``.

Every widget names an attribute from ``NAMES``; a palette maps each to colours. Keeping the
names in one tuple means a theme that forgets one fails ``test_themes_cover_every_name``
instead of drawing an unstyled widget.
"""

from __future__ import annotations

NAMES = (
    "body", "dim", "user", "heading", "bullet", "code", "code_kw", "code_str", "code_comment",
    "tool", "tool_ok", "tool_err", "status", "status_warn", "input", "prompt", "modal",
    "modal_title", "selected", "error", "notice", "panel",
)

THEMES = ("dark", "light")

_DARK = {
    "body": ("light gray", "default"),
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
    "input": ("white", "default"),
    "prompt": ("yellow,bold", "default"),
    "modal": ("white", "dark blue"),
    "modal_title": ("yellow,bold", "dark blue"),
    "selected": ("black", "yellow"),
    "error": ("light red,bold", "default"),
    "notice": ("dark cyan", "default"),
    "panel": ("light gray", "default"),
}

_LIGHT = {
    "body": ("black", "default"),
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
    "input": ("black", "default"),
    "prompt": ("dark magenta,bold", "default"),
    "modal": ("black", "light gray"),
    "modal_title": ("dark blue,bold", "light gray"),
    "selected": ("white", "dark blue"),
    "error": ("dark red,bold", "default"),
    "notice": ("dark cyan", "default"),
    "panel": ("black", "default"),
}

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
    table = _LIGHT if theme == "light" else _DARK
    return [(name, fg, bg) for name, (fg, bg) in table.items()]


def next_theme(theme: str) -> str:
    return THEMES[(THEMES.index(theme) + 1) % len(THEMES)] if theme in THEMES else THEMES[0]
