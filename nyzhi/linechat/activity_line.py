"""The activity line (``nyzhi.core.protocol.activity``) on a line-oriented terminal: the line
chat rewrites it in place with ``\\r``, so the spinner never scrolls the conversation away."""

from __future__ import annotations

from nyzhi.core.protocol.activity import Activity


class StatusLine:
    """The activity line for a line-oriented terminal (the line chat): drawn with ``\\r`` and
    erased before anything else is written, so it is one line rewritten in place. It is drawn
    only when the cursor is at the start of a line (never over an answer mid-line).
    ``writer`` is what the chat writes through; use it only when stdout is a terminal."""

    def __init__(self, out: object, activity: Activity, *, width: int = 80) -> None:
        self.out = out
        self.activity = activity
        self.width = width
        self.shown = False
        self.at_line_start = True

    def write(self, text: str) -> int:
        self.clear()
        if text:
            self.at_line_start = text.endswith("\n")
        return self.out.write(text)  # type: ignore[attr-defined]

    def flush(self) -> None:
        self.out.flush()  # type: ignore[attr-defined]

    def clear(self) -> None:
        if self.shown:
            self.out.write("\r\x1b[K")  # type: ignore[attr-defined]
            self.shown = False

    def draw(self) -> None:
        line = self.activity.line("Ctrl-C cancels")
        if not line or not self.at_line_start:
            self.clear()
            return
        self.out.write("\r\x1b[K" + line[: self.width - 1])  # type: ignore[attr-defined]
        self.out.flush()  # type: ignore[attr-defined]
        self.shown = True
