"""The console's first frame, drawn before urwid and trio are imported.

Importing trio and urwid takes about 300 ms on a slow machine, three times what ``nyz --help``
takes in all. So ``nyz`` on a terminal first draws the screen the console will show while it
starts (the conversation's "starting…" line, the divider, the input line and the status bar)
with a few escape sequences, using only the standard library, and turns the terminal's echo,
line editing and signal keys off. What is typed from then on waits in the terminal's input
queue (nothing is echoed over the frame, Ctrl-C is a key, not a signal).

``release()``, just before urwid starts, takes what was typed out of that queue (urwid's start
discards the queue: ``tty.setcbreak`` flushes it) and gives the terminal its own settings back
(urwid saves them, sets its own mode and restores them at exit); the console then feeds the
keys to the input box through urwid's own parser (``Console.run``). Only a key pressed in the
fraction of a millisecond between the two is lost. ``abandon()`` also leaves the alternate
screen, for a start-up that fails before urwid could.
"""

from __future__ import annotations

import os
import sys
from typing import Any

NOTICE = "nyz · starting…"  # the console's own first note (``Console.__init__``)
STATUS = " starting…"  # its status bar before the runtime attaches (``Console.status_text``)


class FirstFrame:
    def __init__(self, fd: int, saved: list[Any]) -> None:
        self.fd = fd
        self.saved: list[Any] | None = saved
        self.typed = b""  # what was typed while the frame was up (``release``)

    def release(self) -> bytes:
        """Take what was typed so far and give the terminal its own settings again (urwid
        takes over from here); returns the bytes typed. Idempotent."""
        if self.saved is None:
            return self.typed
        import select
        import termios

        try:
            while select.select([self.fd], [], [], 0)[0]:
                chunk = os.read(self.fd, 4096)
                if not chunk:
                    break
                self.typed += chunk
        except OSError:
            pass
        try:
            termios.tcsetattr(self.fd, termios.TCSANOW, self.saved)
        except termios.error:
            pass
        self.saved = None
        return self.typed

    def abandon(self) -> None:
        """Restore the terminal and leave the alternate screen (the console never started)."""
        self.release()
        _write(b"\x1b[?1049l")


def paint(*, no_color: bool) -> FirstFrame | None:
    """Draw the first frame on the terminal and hold its input (None: stdin or stdout is not a
    terminal, or it would not take the settings; the console then simply draws later)."""
    import termios

    fd = sys.stdin.fileno()
    try:
        saved = termios.tcgetattr(fd)
        quiet = termios.tcgetattr(fd)
        quiet[0] &= ~termios.IXON  # Ctrl-S / Ctrl-Q are keys, as under urwid
        quiet[3] &= ~(termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN)
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except (termios.error, OSError, ValueError):
        return None
    frame = FirstFrame(fd, saved)
    try:
        _write(screen(*os.get_terminal_size(sys.stdout.fileno()), no_color=no_color,
                      utf8=(sys.stdout.encoding or "").lower().replace("-", "") == "utf8"))
    except OSError:
        frame.release()
        return None
    return frame


def screen(cols: int, rows: int, *, no_color: bool, utf8: bool = True) -> bytes:
    """The escape sequences of the first frame on a ``cols`` x ``rows`` terminal: the layout
    and the dark theme's colours of ``Console`` as urwid first draws it."""
    notice, prompt, status, plain = (("", "\x1b[1m", "\x1b[7m", "\x1b[0m") if no_color else
                                     ("\x1b[36m", "\x1b[93;1m", "\x1b[30;47m", "\x1b[0m"))
    line, arrow = ("─", "›") if utf8 else ("-", ">")
    text = NOTICE if utf8 else NOTICE.replace("·", "-").replace("…", "...")
    bar = (STATUS if utf8 else STATUS.replace("…", "..."))[:cols].ljust(cols)
    out = [
        "\x1b[?1049h\x1b[H\x1b[2J",  # the alternate screen, cleared, as urwid uses it
        f"{notice}{text[:cols]}{plain}",
        f"\x1b[{rows - 2};1H{line * cols}",
        f"\x1b[{rows - 1};1H{prompt}{arrow} {plain}",
        f"\x1b[{rows};1H{status}{bar}{plain}",
        f"\x1b[{rows - 1};3H",  # the cursor where typing goes
    ]
    return "".join(out).encode("utf-8" if utf8 else "ascii", errors="replace")


def _write(data: bytes) -> None:
    fd = sys.stdout.fileno()
    while data:
        data = data[os.write(fd, data):]
