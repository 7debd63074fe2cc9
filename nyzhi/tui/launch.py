"""``nyz`` on a terminal: the first frame at once (``first_frame``), then the console.

This module imports nothing heavy: ``nyzhi.tui.app`` (urwid, trio) is imported only after the
first frame is on the screen.
"""

from __future__ import annotations

import os
from typing import Any


def main(args: Any) -> int:
    from nyzhi.tui.first_frame import paint

    no_color = bool(os.environ.get("NO_COLOR"))
    frame = paint(no_color=no_color)
    try:
        from nyzhi.tui.app import main as console_main

        return console_main(args, frame=frame, no_color=no_color)
    finally:
        if frame is not None and frame.saved is not None:  # urwid never took the terminal
            frame.abandon()
