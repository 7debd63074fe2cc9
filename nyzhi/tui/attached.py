"""``nyz attach``: the console's view of a session that runs in another process.

The session (a ``nyz run``, a console, a ``nyz serve`` session) serves its hub on its live
socket (``nyzhi.core.protocol.live_socket``); this view speaks the wire format to it
(``nyzhi.core.protocol.wire``) and draws the decoded events with the console's own pieces: the
conversation (``Stream`` and ``ConsoleRenderer``), the approval and question dialogs. It holds no
runtime: every action is a wire message (a turn, a slash command, an answer), so the
first answer wins whichever front end gave it, and an answer given elsewhere closes the dialog
here. Leaving (Ctrl-C, Ctrl-D) detaches; the session goes on.

What it does not have of the console: the agent tree (F2), tool-card selection and expansion
keys, history and completion in the input, themes from ``[tui]``, ``!`` shell and ``&``
background prompts (use ``/`` commands), and images or ``@file`` attachments.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import trio
import urwid

from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol import wire as p
from nyzhi.tui import theme
from nyzhi.tui.conversation import ConsoleRenderer, Stream, clip
from nyzhi.tui.modals import ANSWERED_ELSEWHERE
from nyzhi.tui.widgets import request_overlay

READ_LIMIT = 16 * 1024 * 1024  # bytes of one line from the session (a long tool output)


class AttachedRenderer(ConsoleRenderer):
    """The console's renderer; the main agent's prompt is drawn from its ``turn_start`` too
    (it was typed in another front end, not here)."""

    def on_turn_start(self, event: ev.TurnStart) -> None:
        if event.agent == self.host.main_path:
            self.host.stream(event.agent).user(clip(event.prompt))
        super().on_turn_start(event)


class _Input(urwid.Edit):
    def __init__(self, on_submit: Any) -> None:
        super().__init__("› ")
        self.on_submit = on_submit

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        if key == "enter":
            text, self.edit_text = self.edit_text, ""
            self.on_submit(text)
            return None
        return super().keypress(size, key)


class _Root(urwid.WidgetPlaceholder):
    def __init__(self, widget: urwid.Widget, global_key: Any) -> None:
        super().__init__(widget)
        self.global_key = global_key

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        if self.global_key(key):
            return None
        return super().keypress(size, key)


class AttachedView:
    """The screen of one attached session (the renderer's ``Host``)."""

    def __init__(self, path: Path, session_id: str, cwd: Path, *, no_color: bool) -> None:
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        self.no_color = no_color
        self.main_path = ev.MAIN_AGENT
        self.streams: dict[str, Stream] = {}
        self.agents: dict[str, dict[str, Any]] = {}
        self.pending: list[ev.ApprovalRequest | ev.UserQuestion] = []
        self.renderer = AttachedRenderer(self)
        self.send: trio.MemorySendChannel[str] | None = None
        self.nursery: trio.Nursery | None = None
        self.loop: urwid.MainLoop | None = None
        self.replayed_to = 0  # events up to this number came in the backlog
        self.listbox = urwid.ListBox(self.stream(self.main_path).walker)
        self.input = _Input(self.submit)
        self.status = urwid.Text("", wrap="ellipsis")
        self.notice = urwid.Text("")
        footer = urwid.Pile([urwid.AttrMap(self.notice, "notice"), urwid.Divider("─"),
                             urwid.AttrMap(self.input, "input"),
                             urwid.AttrMap(self.status, "status")])
        footer.focus_position = 2
        self.frame = urwid.Frame(urwid.AttrMap(self.listbox, "body"), footer=footer,
                                 focus_part="footer")
        self.root = _Root(self.frame, self.global_key)
        self.set_status(f"attaching to {session_id[:8]}…")

    # ---- the renderer's host ---------------------------------------------------------

    def stream(self, agent: str) -> Stream:
        s = self.streams.get(agent)
        if s is None:
            s = self.streams[agent] = Stream()
        return s

    def agent_info(self, agent: str) -> dict[str, Any]:
        return self.agents.setdefault(agent, {"status": "idle", "step": "", "tokens": 0,
                                              "cost": 0.0})

    def agents_changed(self) -> None:
        pass

    def on_approval(self, event: ev.ApprovalRequest) -> None:
        self.pending.append(event)
        self._show_modal()

    def on_question(self, event: ev.UserQuestion) -> None:
        self.pending.append(event)
        self._show_modal()

    # ---- the screen ------------------------------------------------------------------

    def note(self, markup: Any) -> None:
        self.stream(self.main_path).note(markup)
        self._follow()

    def set_status(self, text: str) -> None:
        self.status.set_text(f"attached · {text} · Ctrl-C detaches")

    def _follow(self) -> None:
        walker = self.stream(self.main_path).walker
        if len(walker):
            self.listbox.set_focus(len(walker) - 1)

    def _flush(self) -> None:
        self.stream(self.main_path).flush()

    def _show_modal(self) -> None:
        self.root.original_widget = request_overlay(
            self.pending, self.frame, self._answer_approval, self._answer_question, str(self.cwd))

    def _close(self, request_id: str) -> bool:
        before = len(self.pending)
        self.pending = [e for e in self.pending if e.request_id != request_id]
        self._show_modal()
        return len(self.pending) != before

    # ---- what the person does --------------------------------------------------------

    def _say(self, message: p.Message) -> None:
        if self.send is not None:
            try:
                self.send.send_nowait(p.encode(message))
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                self.note(("error", "not sent: the session is not reachable"))

    def _answer_approval(self, event: ev.ApprovalRequest, answer: Any) -> None:
        self._say(p.Approve(event.request_id, answer.value))
        self.stream(event.agent).note(("notice", f"{event.tool}: {answer.value}"))
        self._close(event.request_id)

    def _answer_question(self, event: ev.UserQuestion, text: str) -> None:
        self._say(p.Answer(event.request_id, text))
        self.stream(event.agent).note(("notice", f"answered: {text}"))
        self._close(event.request_id)

    def submit(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        if text.startswith("/"):
            self.stream(self.main_path).command(text)
            self._say(p.Command(text))
        else:
            self._say(p.SendMessage(text))
        self._follow()

    def global_key(self, key: str) -> bool:
        if key in ("ctrl c", "ctrl d"):
            self.quit()
        elif key == "esc" and self.pending:
            first = self.pending[0]
            if isinstance(first, ev.ApprovalRequest):
                from nyzhi.core.protocol import ApprovalAnswer

                self._answer_approval(first, ApprovalAnswer.DENY)
            else:
                self._answer_question(first, "(dismissed: no answer)")
        elif key == "esc":
            self._say(p.Cancel())
        elif key in ("page up", "page down") and not self.pending:
            self.listbox.keypress(self._size(), key)
        else:
            return False
        return True

    def _size(self) -> tuple[int, int]:
        if self.loop is None:
            return (80, 20)
        cols, rows = self.loop.screen.get_cols_rows()
        return (cols, max(1, rows - 4))

    def quit(self) -> None:
        if self.nursery is not None:
            self.nursery.cancel_scope.cancel()

    # ---- the session's side ----------------------------------------------------------

    def receive(self, message: dict[str, Any]) -> None:
        """One message from the session."""
        kind = message.get("type")
        if kind == "welcome":
            self.session_id = str(message.get("session_id") or self.session_id)
        elif kind == "state":
            self.replayed_to = int(message.get("seq") or 0)
            self.set_status(f"session {self.session_id[:8]} · {message.get('status', '')}")
            for ask in message.get("pending") or ():
                event = _event(ask)
                if isinstance(event, ev.ApprovalRequest):
                    self.on_approval(event)
                elif isinstance(event, ev.UserQuestion):
                    self.on_question(event)
        elif kind == "event":
            event = _event(message.get("event"))
            if event is None:
                return
            old = int(message.get("seq") or 0) <= self.replayed_to
            if old and isinstance(event, ev.ApprovalRequest | ev.UserQuestion):
                return  # answered long ago, or among the state's pending already
            if isinstance(event, ev.ToolDone):
                for ask in list(self.pending):
                    if getattr(ask, "call_id", None) == event.call_id:
                        self._close(ask.request_id)  # answered elsewhere (the call is done)
            self.renderer.render(event)
            self._follow()
        elif kind == "resolved":
            if self._close(str(message.get("request_id"))):
                self.note(("notice", ANSWERED_ELSEWHERE))
        elif kind == "output":
            style = "error" if message.get("kind") == "error" else "body"
            self.note((style, str(message.get("text", ""))))
        elif kind == "error":
            self.note(("error", f"session: {message.get('message', '')}"))

    async def _connection(self) -> None:
        from nyzhi.core.protocol.live_socket import Lines, send_line

        send, outgoing = trio.open_memory_channel[str](256)
        try:
            stream = await trio.open_unix_socket(str(self.path))
        except OSError as exc:
            self.note(("error", f"cannot attach: {exc}"))
            return
        self.send = send
        async with stream, trio.open_nursery() as nursery:
            async def writer() -> None:
                with _gone():
                    async for text in outgoing:
                        await send_line(stream, [text])

            nursery.start_soon(writer)
            self._say(p.Hello(p.PROTOCOL, self.session_id, 0))
            lines = Lines(stream, READ_LIMIT)
            with _gone():
                while (line := await lines.next()) is not None:
                    try:
                        message = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(message, dict):
                        self.receive(message)
            self.send = None
            self.note(("notice", "the session ended (or closed this connection); "
                                 "Ctrl-C leaves"))
            self.set_status(f"session {self.session_id[:8]} · ended")
            nursery.cancel_scope.cancel()

    async def run(self) -> None:
        screen = urwid.display.raw.Screen()
        if self.no_color:
            screen.set_terminal_properties(colors=1)
        evl = urwid.TrioEventLoop()
        self.loop = urwid.MainLoop(self.root, theme.palette(theme.detect(),
                                                            no_color=self.no_color),
                                   screen=screen, event_loop=evl, handle_mouse=False)
        evl.enter_idle(self._flush)
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            with self.loop.start():
                screen.tty_signal_keys("undefined", "undefined", "undefined", "undefined",
                                       "undefined")
                nursery.start_soon(self._connection)
                await evl.run_async()


class _gone:
    """The session's end of the socket went away: not an error here."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        return kind is not None and issubclass(kind, trio.BrokenResourceError
                                               | trio.ClosedResourceError | ConnectionError
                                               | ValueError)


def _event(data: Any) -> ev.AnyEvent | None:
    if not isinstance(data, dict):
        return None
    try:
        return ev.from_json(data)
    except Exception:  # an event this version does not know: skipped, not a crash
        return None


def main(path: Path, session_id: str, *, no_color: bool = False) -> int:
    view = AttachedView(path, session_id, Path.cwd(), no_color=no_color)
    trio.run(view.run)
    print(f"nyz: detached from session {view.session_id}; it goes on where it runs",
          file=sys.stderr)
    return 0
