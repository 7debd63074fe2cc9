"""The one line that shows the model is working: a spinner with the elapsed time while it has
not answered (thinking, waiting for the first token, running a tool), and tokens per second
while its answer streams. The console shows it under the conversation and the line chat
rewrites it in place on a terminal (``nyzhi.linechat.activity_line``): it is part of the
session protocol because every front end that shows a working model draws this one line.

Plain text and the clock only (no urwid, no runtime): a redraw costs one string. Tokens are estimated as characters / 4, as everywhere else nyz
estimates them before the provider reports usage.
"""

from __future__ import annotations

import time
from collections.abc import Callable

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
#: Frames per second of the spinner (the line is redrawn by its host's clock).
_FPS = 8


class Activity:
    """What the main agent is doing now, for ``line()``: fed with the turn's events."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.active = False
        self.started = 0.0
        self.phase = ""
        self._first_text = 0.0
        self._chars = 0

    def start(self, phase: str = "thinking") -> None:
        """A turn was sent: the model has not answered yet."""
        self.active = True
        self.started = self.clock()
        self.phase = phase
        self._chars = 0

    def text(self, delta: str) -> None:
        """Part of the answer arrived."""
        if not self.active:
            return
        if self.phase != "answering":
            self.phase = "answering"
            self._first_text = self.clock()
            self._chars = 0
        self._chars += len(delta)

    def thinking(self) -> None:
        if self.active and self.phase != "thinking":
            self.phase = "thinking"

    def tool(self, name: str) -> None:
        if self.active:
            self.phase = f"running {name}"

    def tool_done(self) -> None:
        """The tool ended: the model is asked again and has not answered yet."""
        if self.active:
            self.phase = "waiting for the model"

    def feed(self, event: object) -> None:
        """One of the main agent's events (``nyzhi.core.events``, matched by its ``type`` so
        this module imports nothing): the ones that change what the line says."""
        kind = getattr(event, "type", "")
        if kind == "text_delta":
            self.text(getattr(event, "text", ""))
        elif kind == "thinking_delta":
            self.thinking()
        elif kind == "tool_start":
            self.tool(getattr(event, "name", "a tool"))
        elif kind == "tool_done":
            self.tool_done()

    def stop(self) -> None:
        self.active = False
        self.phase = ""

    def rate(self) -> float | None:
        """Estimated tokens per second of the answer streaming now, or None."""
        if self.phase != "answering":
            return None
        spent = self.clock() - self._first_text
        return (self._chars / 4) / spent if spent > 0.05 else None

    def line(self, hint: str = "") -> str:
        """The status line ("" when idle): ``⠙ thinking… 2.4s · Esc cancels``."""
        if not self.active:
            return ""
        now = self.clock()
        elapsed = now - self.started
        frame = SPINNER[int(elapsed * _FPS) % len(SPINNER)]
        if self.phase == "answering":
            rate = self.rate()
            what = f"answering · {rate:.0f} tok/s" if rate is not None else "answering"
        else:
            what = f"{self.phase}…"
        text = f"{frame} {what} · {elapsed:.1f}s"
        return f"{text} · {hint}" if hint else text
