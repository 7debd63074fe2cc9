"""The console's two lines under the conversation: the status line and the notice line.

Their own part because both are drawn from many places (a turn's start and end, a key, the
clock) and each has its own rules: the status line is the one formatter's
(``nyzhi.core.protocol.status_line``) unless Claude Code's ``statusLine`` command is set (run
at most every ``STATUS_LINE_EVERY`` seconds, one run at a time), and says once in the
conversation when the context passes each of ``CONTEXT_MARKS``; the notice line shows the
activity line while the main agent works, then what was last said (``flash``), which the queue's
own line must not wipe when it is something else.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import urwid

from nyzhi.core.protocol import Session, status_card, status_line
from nyzhi.core.protocol.activity import Activity

if TYPE_CHECKING:
    from nyzhi.tui.app import Console

CONTEXT_MARKS = (0.75, 0.90)  # context use said in the conversation as it passes each
STATUS_LINE_EVERY = 0.3  # seconds between two runs of a statusLine command (Claude Code's)


class StatusBar:
    """The status line, the notice line, the activity (spinner) and the flash."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.note = console.note  # where the context warnings go: the conversation shown
        self.notice = urwid.Text("")
        self.flashed = ""  # what flash() said; shown beside the activity line
        self.activity = Activity()  # the spinner line while the main agent works
        self.status = urwid.Text("", wrap="ellipsis")
        self._context_warned: set[float] = set()  # the CONTEXT_MARKS already said
        # Claude Code's statusLine (Session.custom_status_line): its last output, shown instead
        # of nyz's status text; one run at a time, at most every STATUS_LINE_EVERY seconds.
        self._status_line_text: str | None = None
        self._status_line_busy = False
        self._status_line_at = -1e9
        self._started = time.monotonic()

    # ---- the notice line -------------------------------------------------------------

    def flash(self, text: str) -> None:
        self.flashed = text
        self.draw_notice()

    def draw_notice(self) -> None:
        """The notice line: the activity line while the main agent works, then the flash."""
        line = self.activity.line(self.console.cancel_hint + " cancels")
        self.notice.set_text(" │ ".join(p for p in (line, self.flashed) if p))

    def show_queue(self, queue: list[str]) -> None:
        if queue:
            first = " ".join(queue[0].split())[:50]
            self.flash(f"queued ({len(queue)}): {first} · Esc clears")
        elif self.flashed.startswith("queued ("):  # only the queue's own line: a turn ending
            self.flash("")  # must not wipe what a key just said (Ctrl-O's "expanded")

    # ---- the status line -------------------------------------------------------------

    def text(self, *, long: bool = False) -> str:
        """The one status line (``nyzhi.core.protocol.status_line``), or with ``long`` the
        ``/status`` card with the console's theme."""
        console = self.console
        if console.rt is None:
            return " starting…"
        if self._status_line_text and not long:  # Claude Code's statusLine command
            return self._status_line_text
        status = Session(console.rt).status()
        if long:
            return status_card(status, extra=(("theme", console.theme),))
        self._warn_context(status)
        width = console.loop.screen.get_cols_rows()[0] - 1 if console.loop is not None else None
        return " " + status_line(status, width=width)

    def _warn_context(self, status: Any) -> None:
        """Say once in the conversation when the main agent's context passes 75% and 90%
        (again after a compaction brought it back under)."""
        if not status.context_window:
            return
        share = status.context_used / status.context_window
        for mark in CONTEXT_MARKS:
            if share >= mark and mark not in self._context_warned:
                self._context_warned.add(mark)
                self.note(("notice", f"context {share:.0%} full ({status.context_used} of "
                                     f"{status.context_window} tokens): /compact [HINT] "
                                     "summarises the older history now"))
            elif share < mark - 0.05:
                self._context_warned.discard(mark)

    def refresh(self) -> None:
        self.status.set_text(self.text())
        console = self.console
        rt = console.rt
        if (rt is not None and getattr(rt, "status_line", None) is not None
                and not self._status_line_busy and console.nursery is not None
                and time.monotonic() - self._status_line_at >= STATUS_LINE_EVERY):
            self._status_line_busy = True
            console.nursery.start_soon(self._run_status_line, rt)

    async def _run_status_line(self, rt: Any) -> None:
        """Run the statusLine command with Claude Code's status JSON; show its line."""
        from nyzhi.core.protocol import Session

        cwd = self.console.cwd
        try:
            cost = self.console.panel.tree.cost_usd()
            line = await Session(rt).custom_status_line(Path(cwd), cost, self._started)
            if line is not None and rt is self.console.rt:
                self._status_line_text = line
                self.status.set_text(line)
        finally:
            self._status_line_at = time.monotonic()
            self._status_line_busy = False
