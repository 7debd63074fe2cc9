"""Choosing from a list with the arrow keys and type-to-filter: the command menu under the
input (``/`` and ``@``) and the pickers of ``/resume``, ``/model`` and ``/theme``.

``Choices`` is the list itself (filtered, bounded, with a highlight); ``Picker`` wraps it in a
dialog with its own filter line. Neither knows what is chosen: a choice carries a value and
the owner says what picking it does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import urwid

from nyzhi import records
from nyzhi.tui import theme

SHOWN = 8  # rows of choices on screen at once (the rest scroll with the highlight)


@records.frozen
class Choice:
    label: str  # what is matched and shown first
    detail: str = ""  # shown dim beside it (a command's summary, a session's age)
    value: Any = None  # what picking it gives the owner


def matching(choices: Sequence[Choice], query: str) -> list[Choice]:
    """The choices whose label contains ``query`` (case-insensitive): those starting with
    it first, each group in its given order; detail text matches after both."""
    q = query.lower()
    if not q:
        return list(choices)
    starts = [c for c in choices if c.label.lower().startswith(q)]
    inside = [c for c in choices if q in c.label.lower() and c not in starts]
    detail = [c for c in choices if q in c.detail.lower() and c not in starts
              and c not in inside]
    return starts + inside + detail


class Choices(urwid.WidgetWrap):
    """A filtered list of choices, ``SHOWN`` rows at a time, with the highlighted one marked."""

    def __init__(self, choices: Sequence[Choice], *, empty: str = "(no match)") -> None:
        self.all = list(choices)
        self.shown: list[Choice] = list(choices)
        self.at = 0
        self.moved = False  # the arrows chose the highlighted one
        self.empty = empty
        self.lines = urwid.Text("", wrap="ellipsis")  # a row each, however narrow
        super().__init__(self.lines)
        self._draw()

    def filter(self, query: str) -> None:
        self.shown = matching(self.all, query)
        self.at = 0
        self._draw()

    def move(self, step: int) -> None:
        if self.shown:
            self.moved = True
            self.at = (self.at + step) % len(self.shown)
            self._draw()

    def current(self) -> Choice | None:
        return self.shown[self.at] if self.shown else None

    def _draw(self) -> None:
        if not self.shown:
            self.lines.set_text(("dim", self.empty))
            return
        first = min(max(0, self.at - SHOWN + 1), max(0, len(self.shown) - SHOWN))
        width = max(len(c.label) for c in self.shown[first:first + SHOWN])
        markup: list[Any] = []
        for i, choice in enumerate(self.shown[first:first + SHOWN], first):
            attr = "selected" if i == self.at else "input"
            markup.append((attr, f" {choice.label:<{width}} "))
            markup.append(("dim", f" {choice.detail}" if choice.detail else ""))
            markup.append("\n")
        more = len(self.shown) - SHOWN
        if more > 0:
            markup.append(("dim", f" {self.at + 1}/{len(self.shown)}"))
        else:
            markup.pop()
        self.lines.set_text(markup)


class Picker(urwid.WidgetWrap):
    """A dialog: a title, a filter line typed into, the choices; ↑↓ move, Enter picks
    (``on_pick`` gets the choice), Esc closes (``on_close``)."""

    def __init__(self, title: str, choices: Sequence[Choice],
                 on_pick: Callable[[Choice], None], on_close: Callable[[], None]) -> None:
        self.on_pick = on_pick
        self.on_close = on_close
        self.query = urwid.Edit(("prompt", "filter: "))
        self.choices = Choices(choices)
        body = urwid.Pile([
            urwid.Text(("modal_title", title)), self.query, urwid.Divider("─"), self.choices,
            urwid.Divider("─"),
            urwid.Text(("dim", "↑↓ move · type to filter · Enter pick · Esc close")),
        ])
        body.focus_position = 1
        super().__init__(urwid.AttrMap(urwid.LineBox(body), theme.IN_MODAL))

    def selectable(self) -> bool:
        return True

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        if key in ("up", "ctrl p"):
            self.choices.move(-1)
        elif key in ("down", "ctrl n", "tab"):
            self.choices.move(1)
        elif key == "enter":
            choice = self.choices.current()
            if choice is not None:
                self.on_pick(choice)
        elif key == "esc":
            self.on_close()
        elif key in ("ctrl c", "f2"):
            return key
        else:
            before = self.query.edit_text
            self.query.keypress((max(1, size[0] - 4),), key)
            if self.query.edit_text != before:
                self.choices.filter(self.query.edit_text)
        return None
