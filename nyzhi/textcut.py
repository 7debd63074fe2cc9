"""The one way nyz cuts a text to fit: ``cut(text, width)``.

A command line in a status row, a title in a table, a search snippet, a notification body,
a refused value in an error: each is shown on one line in at most ``width`` characters, and a
cut one ends in ``…`` so a reader knows there was more. It lives in config, the bottom layer,
so every layer (the tools' outputs, the events' one-line forms, the front ends) shares it.
"""

from __future__ import annotations

ELLIPSIS = "…"


def cut(text: str, width: int, *, one_line: bool = True, rstrip: bool = False) -> str:
    """``text`` in at most ``width`` characters: unchanged when it fits, else its first
    ``width - 1`` characters and ``…``.

    ``one_line`` (the default) first joins it into one line, every run of whitespace (a
    newline too) one space: what a row or a status line needs. False keeps it as it is (a
    ``repr``, whose spaces are part of the value). ``rstrip`` drops the spaces the cut leaves
    before the ``…`` (a preview of prose)."""
    if one_line:
        text = " ".join(text.split())
    if len(text) <= width:
        return text
    head = text[: max(width - 1, 0)]
    return (head.rstrip() if rstrip else head) + ELLIPSIS
