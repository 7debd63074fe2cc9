"""The console's first frame, drawn before urwid and trio are imported, with a live input line.

Importing trio and urwid takes 200-300 ms on a slow machine, three times what ``nyz --help``
takes in all. So ``nyz`` on a terminal first draws the screen the console shows while it
starts (the conversation's "starting…" line, the divider, the input line and the status bar)
with a few escape sequences, using only the standard library, and turns the terminal's echo,
line editing and signal keys off (Ctrl-C is a key from then on, as in the console).

While the imports run, a thread reads what is typed, keeps every byte, and echoes plain text
(and Backspace) on the input line, so typing shows at once. The first key it cannot draw
faithfully (Enter, an arrow, a control key, a non-ASCII character) stops the echo; the keys
are still kept.

``release()``, just before urwid starts, stops the thread, takes what was typed (urwid's start
discards the terminal's input queue: ``tty.setcbreak`` flushes it) and gives the terminal its
own settings back (urwid saves them, sets its own mode and restores them at exit); the console
then feeds the keys to the input box through urwid's own parser (``Console.run``), which draws
the input line anew. Only a key pressed in the fraction of a millisecond between the two is
lost. ``abandon()`` also leaves the alternate screen, for a start-up that fails before urwid
could.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

NOTICE = "nyz · starting…"  # the console's own first note (``Console.__init__``)
STATUS = " starting…"  # its status bar before the runtime attaches (``Console.status_text``)
PROMPT_WIDTH = 2  # "› "


class FirstFrame:
    def __init__(self, fd: int, saved: list[Any], cols: int, out: int) -> None:
        self.fd = fd  # the terminal's input
        self.out = out  # and its output
        self.saved: list[Any] | None = saved
        self.typed = b""  # every byte typed while the frame was up
        self.shown = ""  # what the echo drew on the input line
        self.room = max(0, cols - PROMPT_WIDTH - 1)
        self.echoing = True
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._echo, name="first-frame-echo", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _echo(self) -> None:
        import select

        while True:
            try:
                ready = select.select([self.fd, self._stop_r], [], [])[0]
                if self._stop_r in ready:
                    return
                chunk = os.read(self.fd, 1024)
            except OSError:
                return
            if not chunk:
                return
            self.typed += chunk
            if self.echoing:
                self._draw(chunk)

    def _draw(self, chunk: bytes) -> None:
        """Echo ``chunk`` on the input line: ASCII text and Backspace; anything else ends the
        echo (urwid redraws the line from every key typed)."""
        out = []
        for byte in chunk:
            if 0x20 <= byte < 0x7F and len(self.shown) < self.room:
                self.shown += chr(byte)
                out.append(chr(byte))
            elif byte in (0x7F, 0x08) and self.shown:
                self.shown = self.shown[:-1]
                out.append("\b \b")
            else:
                self.echoing = False
                break
        if out:
            _write(self.out, "".join(out).encode("ascii"))

    def release(self) -> bytes:
        """Stop the echo, take what was typed and give the terminal its own settings again
        (urwid takes over from here); returns the bytes typed. Idempotent."""
        if self.saved is None:
            return self.typed
        import select
        import termios

        if self._thread.is_alive():
            os.write(self._stop_w, b"x")
            self._thread.join()
        os.close(self._stop_r)
        os.close(self._stop_w)
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
        _write(self.out, b"\x1b[?1049l")


def paint(*, no_color: bool) -> FirstFrame | None:
    """Draw the first frame on the terminal, hold its input and echo what is typed (None:
    stdin or stdout is not a terminal, or it would not take the settings; the console then
    simply draws later)."""
    import termios

    fd, out = sys.stdin.fileno(), sys.stdout.fileno()
    try:
        cols, rows = os.get_terminal_size(out)
        saved = termios.tcgetattr(fd)
        quiet = termios.tcgetattr(fd)
        quiet[0] &= ~termios.IXON  # Ctrl-S / Ctrl-Q are keys, as under urwid
        quiet[3] &= ~(termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN)
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except (termios.error, OSError, ValueError):
        return None
    frame = FirstFrame(fd, saved, cols, out)
    try:
        _write(out, screen(cols, rows, no_color=no_color,
                           utf8=(sys.stdout.encoding or "").lower().replace("-", "") == "utf8"))
    except OSError:
        frame.release()
        return None
    frame.start()
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
        f"\x1b[{rows - 1};{PROMPT_WIDTH + 1}H",  # the cursor where typing goes
    ]
    return "".join(out).encode("utf-8" if utf8 else "ascii", errors="replace")


def _write(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]
