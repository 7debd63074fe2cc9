"""The console's dialogs over the conversation: the approvals and questions the agents wait on,
and the pickers of ``/resume``, ``/model`` and ``/theme``.

Their own part because an answer has rules of its own: what waits is shown one at a time in
arrival order (``request_overlay``), and the first answer wins wherever it was given: the
console claims its answer on the live socket's hub (``LiveSession.claim``) so the dialogs of
``nyz attach`` close, a viewer's answer closes the console's dialog (``answered_elsewhere``),
and one the runtime refuses as already answered (a ``/web`` page was first) is said, never
raised through the console's nursery. A picker never opens over a waiting dialog.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import urwid

from nyzhi.core.protocol import events as ev
from nyzhi.tui.picker import Choice, Picker
from nyzhi.tui.widgets import request_overlay

if TYPE_CHECKING:
    from nyzhi.tui.app import Console

ANSWERED_ELSEWHERE = "answered in another front end"  # a dialog another front end answered


class PickerOverlay(urwid.Overlay):
    """A picker over the frame (told apart from the approval and question dialogs)."""


class Modals:
    """What waits for the person's answer, and the dialog or picker over the frame."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.pending: list[ev.ApprovalRequest | ev.UserQuestion] = []

    # ---- approvals and questions -----------------------------------------------------

    def ask(self, event: ev.ApprovalRequest | ev.UserQuestion) -> None:
        self.pending.append(event)
        self.show()

    def answer_approval(self, event: ev.ApprovalRequest, answer: Any) -> None:
        console = self.console
        assert console.nursery is not None and console.rt is not None
        if self._claim(event):
            console.nursery.start_soon(self._send_answer, console.rt.answer_approval, event,
                                       answer)
            console.stream(event.agent).note(("notice", f"{event.tool}: {answer.value}"))
        self._close(event)

    def answer_question(self, event: ev.UserQuestion, text: str) -> None:
        console = self.console
        assert console.nursery is not None and console.rt is not None
        if self._claim(event):
            console.nursery.start_soon(self._send_answer, console.rt.answer_question, event,
                                       text)
            console.stream(event.agent).note(("notice", f"answered: {text}"))
        self._close(event)

    def _claim(self, event: ev.ApprovalRequest | ev.UserQuestion) -> bool:
        """The first answer wins (``LiveSession.claim``): False when a viewer of the live
        socket answered first; else its viewers are told this one was answered here."""
        live = self.console.live
        hub = live.live if live is not None else None
        if hub is None or hub.claim(event.request_id):
            return True
        self.console.stream(event.agent).note(("notice", ANSWERED_ELSEWHERE))
        return False

    async def _send_answer(self, answer: Callable[[str, Any], Awaitable[None]],
                           event: ev.ApprovalRequest | ev.UserQuestion, value: Any) -> None:
        """The answer to the runtime; one it refuses was answered first elsewhere (a page of
        ``/web``), which is said, not raised (it would end the console)."""
        try:
            await answer(event.request_id, value)
        except KeyError:
            self.console.stream(event.agent).note(("notice", ANSWERED_ELSEWHERE))
            self.console.transcript.follow()

    def answered_elsewhere(self, request_id: str) -> None:
        """A viewer of the live socket answered ``request_id`` first: its dialog closes."""
        gone = [e for e in self.pending if e.request_id == request_id]
        if not gone:
            return
        self.pending = [e for e in self.pending if e.request_id != request_id]
        self.console.stream(gone[0].agent).note(("notice", ANSWERED_ELSEWHERE))
        self.show()
        self.console.transcript.follow()

    def on_live_hub(self, hub: Any) -> None:
        """The first viewer attached: the hub tells the console what it answers, and drops
        from what it would show as waiting what the console already answered."""
        hub.answered = self.answered_elsewhere
        hub.say = self.console.flash
        waiting = {e.request_id for e in self.pending}
        for request_id in [r for r in hub.pending if r not in waiting]:
            del hub.pending[request_id]

    def _close(self, event: ev.AnyEvent) -> None:
        if self.pending and self.pending[0] is event:
            self.pending.pop(0)
        self.show()

    def dismiss(self) -> None:
        """Esc on the open dialog: an approval is answered no, a question is answered that
        the person dismissed it (the agent goes on either way; Esc again cancels the turn)."""
        if not self.pending:
            self.show()
            return
        first = self.pending[0]
        if isinstance(first, ev.ApprovalRequest):
            from nyzhi.core.protocol import ApprovalAnswer  # loaded by the runtime by now

            self.answer_approval(first, ApprovalAnswer.DENY)
        else:
            self.answer_question(first, "(dismissed: no answer)")

    def show(self) -> None:
        console = self.console
        if console.loop is None:
            return
        console.root.original_widget = request_overlay(
            self.pending, console.frame, self.answer_approval, self.answer_question,
            str(console.cwd))

    # ---- pickers ---------------------------------------------------------------------

    def pick(self, title: str, items: list[tuple[str, str, str]]) -> None:
        """A picker over the screen (the ``PICK`` feature): each item is (label, detail, the
        command line picking it runs: ``/resume ID``, ``/model NAME``, ``/theme NAME``)."""
        console = self.console
        if console.loop is None or self.pending:
            return
        choices = [Choice(label, detail, line) for label, detail, line in items]
        picker = Picker(title, choices, self._picked, self.close_picker)
        console.root.original_widget = PickerOverlay(picker, console.frame, "center",
                                                     ("relative", 80), "middle", "pack")

    def picking(self) -> bool:
        return isinstance(self.console.root.original_widget, PickerOverlay)

    def _picked(self, choice: Choice) -> None:
        self.close_picker()
        if self.console.nursery is not None:
            self.console.nursery.start_soon(self.console.command, str(choice.value))

    def close_picker(self) -> None:
        if self.picking():
            self.console.root.original_widget = self.console.frame
