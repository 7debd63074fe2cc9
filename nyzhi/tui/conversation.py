"""The conversation view and the renderer that fills it from runtime events.

``ConsoleRenderer`` is the console's subclass of the one event dispatch
(``nyzhi.core.protocol.renderer.EventRenderer``): it turns each event into a change of widgets
and tells the ``Console`` (its ``host``) about approvals, questions, usage and agent status.
Each agent's events go to that agent's own ``Stream`` (its path is on every event), so the
agent tree can show any agent's stream; the main agent's is shown by default.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

import urwid

from nyzhi import jsonbound
from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.renderer import EventRenderer
from nyzhi.textcut import cut
from nyzhi.tui import markdown

OUTPUT_LINES = 8  # a collapsed tool card shows this many lines of its output
# Tools whose output is a process's (a command's, a shell's): a collapsed card shows its
# last lines, where the result and the error are. Any other tool's output is a listing or
# a document (list_dir, glob, grep, read, git_log…) that reads from the top: its first lines.
TAIL_TOOLS = frozenset({"bash", "bash_output", "write_stdin", "tail_file", "verify"})
EXPANDED_LINES = 200  # an expanded one (Ctrl-O) shows this many
THINKING_LINES = 3  # collapsed thinking shows its last lines


class Expansion:
    """Whether tool output and thinking are shown whole (Ctrl-O), shared by every block that
    was not expanded or collapsed on its own."""

    expanded = False


class Collapsible(urwid.WidgetWrap):
    """A block shown short or whole: by Ctrl-O for all, or on its own once selected
    (Alt-Up/Alt-Down) and toggled (Enter); ``selected`` marks it while it is chosen."""

    expanded: bool | None = None  # None: as Ctrl-O says (``Expansion``)
    selected = False

    @property
    def is_expanded(self) -> bool:
        return Expansion.expanded if self.expanded is None else self.expanded

    def toggle(self) -> None:
        self.expanded = not self.is_expanded
        self.refresh()

    def select(self, on: bool) -> None:
        self.selected = on
        self.refresh()

    def refresh(self) -> None:
        raise NotImplementedError


def args_summary(arguments: str, width: int = 60, cwd: str = "") -> str:
    """``key=value`` pairs of a tool call's JSON arguments, cut to ``width``; a path under
    ``cwd`` (the workspace) is shown relative to it."""
    try:
        data = jsonbound.loads(arguments) if arguments else {}
    except ValueError:
        data = arguments
    if isinstance(data, dict):
        if cwd:
            data = {k: _relative(v, cwd) for k, v in data.items()}
        text = " ".join(f"{k}={v}" if not isinstance(v, str) else f"{k}={v!r}"
                        for k, v in data.items())
    else:
        text = str(data)
    return cut(text, width)


def _relative(value: Any, cwd: str) -> Any:
    if isinstance(value, str) and value.startswith(cwd.rstrip("/") + "/"):
        return value[len(cwd.rstrip("/")) + 1:] or "."
    return value


def call_summary(summary: str, cwd: str = "", width: int = 160) -> str:
    """An approval's call line drawn as the tool card draws the call: ``key=value`` pairs,
    paths relative to the workspace, no JSON.

    The gates' summary (``nyzhi.tools.gates.summarize_args``, part of the event contract) is
    the command lines of a shell call, or the paths the call touches and then its arguments
    as JSON (cut at 500 characters, so possibly unparsable: then only shortened).
    """
    brace = 0 if summary.startswith("{") else summary.find("  {") + 2
    if brace == 1:  # no "  {": a command line (or lines), shown as it is
        text = summary
        return cut(text, width * 4, one_line=False)
    paths = [_relative(p.strip(), cwd) for p in summary[:brace].split(",") if p.strip()]
    try:
        if not isinstance(jsonbound.loads(summary[brace:]), dict):
            raise ValueError
    except ValueError:
        text = " ".join(summary.split())
        if cwd:
            text = text.replace(cwd.rstrip("/") + "/", "")
        return cut(text, width, one_line=False)
    args = args_summary(summary[brace:], width, cwd)
    extra = [p for p in paths if f"{p!r}" not in args and p not in args]
    return " ".join([*extra, args]) if extra else args


class ToolCard(Collapsible):
    """One tool call: name, arguments, status, elapsed time and its output, cut to its last
    lines (a command's) or its first (a listing's) until expanded."""

    def __init__(self, name: str, arguments: str, cwd: str = "") -> None:
        self.name = name
        self.args = args_summary(arguments, cwd=cwd)
        self.started = time.monotonic()
        self.status = "running"
        self.elapsed_ms: float | None = None
        self.output = ""
        self.header = urwid.Text("")
        self.body = urwid.Text(("dim", ""))
        super().__init__(urwid.Pile([self.header, self.body]))
        self.refresh()

    def add_output(self, text: str) -> None:
        self.output += text
        self.refresh()

    def finish(self, output: str, is_error: bool, duration_ms: float) -> None:
        self.output = output or self.output
        self.status = "failed" if is_error else "done"
        self.elapsed_ms = duration_ms
        self.refresh()

    def refresh(self) -> None:
        ms = self.elapsed_ms if self.elapsed_ms is not None else (
            (time.monotonic() - self.started) * 1000)
        attr = {"running": "tool", "done": "tool_ok", "failed": "tool_err"}[self.status]
        mark = ("selected", "▶") if self.selected else ("tool", "⚙")
        self.header.set_text([
            mark, ("tool", f" {self.name} "), ("dim", self.args + " "),
            (attr, f"[{self.status} {ms / 1000:.1f}s]"),
        ])
        lines = self.output.rstrip("\n").split("\n") if self.output.strip() else []
        expanded = self.is_expanded
        keep = EXPANDED_LINES if expanded else OUTPUT_LINES
        hidden = len(lines) - keep
        tail = self.name in TAIL_TOOLS
        shown = lines[-keep:] if tail else lines[:keep]
        text = "\n".join("  │ " + line[:200] for line in shown)
        if hidden > 0:
            more = f"  │ … {hidden} more line(s){'' if expanded else ' (Ctrl-O expands)'}"
            text = f"{more}\n{text}" if tail else f"{text}\n{more}"
        self.body.set_text(("dim", text))


class ThinkingBlock(Collapsible):
    """The model's thinking, dimmed: its last lines, or all of it when expanded."""

    def __init__(self) -> None:
        self.raw = ""
        self.text = urwid.Text(("dim", ""))
        super().__init__(self.text)

    def add(self, delta: str) -> None:
        self.raw += delta
        self.refresh()

    def refresh(self) -> None:
        lines = self.raw.strip().split("\n")
        if not self.is_expanded and len(lines) > THINKING_LINES:
            lines = [f"… {len(lines) - THINKING_LINES} line(s) (Ctrl-O expands)",
                     *lines[-THINKING_LINES:]]
        mark = ("selected", "▶") if self.selected else ("dim", "✻")
        self.text.set_text([mark, ("dim", " " + "\n  ".join(lines))])


class Stream:
    """One agent's conversation: a list of blocks, the answer being streamed at the end.

    A text delta only marks the answer ``dirty``; the console calls ``flush`` once per batch
    of events (when trio goes idle) for the stream on screen, so the Markdown of a long answer
    is rebuilt once per redraw, not once per delta, and hidden streams cost nothing until
    shown.
    """

    def __init__(self, *, show_thinking: bool = True, use_markdown: bool = True,
                 streaming: bool = True) -> None:
        self.walker = urwid.SimpleFocusListWalker([])
        self.show_thinking = show_thinking
        self.use_markdown = use_markdown
        self.streaming = streaming
        self.text: urwid.Text | None = None
        self.text_raw = ""
        self.dirty = False
        self.thinking: ThinkingBlock | None = None
        self.cards: dict[str, ToolCard] = {}

    def append(self, widget: urwid.Widget) -> None:
        self.walker.append(widget)

    def note(self, markup: Any) -> None:
        self.end_blocks()
        self.append(urwid.Text(markup))

    def user(self, text: str) -> None:
        self.end_blocks()
        self.append(urwid.Text([("prompt", "› "), ("user", text)]))

    def command(self, text: str) -> None:
        """A slash command as a heading above its output, so one command's lines are not
        read as the previous one's (``/rewind``, ``/stats``, ``/context`` in a row)."""
        self.end_blocks()
        if len(self.walker):
            self.append(urwid.Divider())
        self.append(urwid.Text([("prompt", "› "), ("heading", " ".join(text.split())[:200])]))

    def end_blocks(self) -> None:
        if self.text is not None and self.dirty:
            self._draw_text()
        self.text = self.thinking = None
        self.text_raw = ""

    def add_text(self, delta: str) -> None:
        self.thinking = None
        if self.text is None:
            self.text = urwid.Text("")
            self.append(self.text)
        self.text_raw += delta
        self.dirty = True

    def flush(self) -> None:
        """Draw the streamed answer so far (``[tui] streaming = false``: only when it ends)."""
        if self.dirty and self.streaming and self.text is not None:
            self._draw_text()

    def _draw_text(self) -> None:
        assert self.text is not None
        self.dirty = False
        raw = self.text_raw.strip("\n")
        self.text.set_text(markdown.render(raw) if self.use_markdown else ("body", raw))

    def add_thinking(self, delta: str) -> None:
        if not self.show_thinking:
            return
        if self.thinking is None:
            self.thinking = ThinkingBlock()
            self.append(self.thinking)
        self.thinking.add(delta)

    def refresh_blocks(self) -> None:
        """Redraw tool cards and thinking after Ctrl-O, which overrides their own toggles."""
        for widget in self.blocks():
            widget.expanded = None
            widget.refresh()

    def blocks(self) -> list[Collapsible]:
        """The tool cards and thinking blocks, in order."""
        return [w for w in self.walker if isinstance(w, Collapsible)]

    def answer(self, text: str) -> None:
        """A whole answer at once (a resumed thread)."""
        self.end_blocks()
        self.add_text(text)
        self._draw_text()
        self.end_blocks()

    def tool_start(self, call_id: str, name: str, arguments: str, cwd: str = "") -> ToolCard:
        self.end_blocks()
        card = ToolCard(name, arguments, cwd)
        self.cards[call_id] = card
        self.append(card)
        return card

    def running_cards(self) -> list[ToolCard]:
        return [c for c in self.cards.values() if c.status == "running"]


class Host(Protocol):
    """What the renderer draws into (``Console`` implements it): each agent's stream, the
    agent tree's redraw (its rows are the view model the console feeds every event to,
    ``nyzhi.core.protocol.agents``), and the dialogs for approvals and questions."""

    main_path: str
    cwd: Any  # the workspace: paths under it are shown relative

    def stream(self, agent: str) -> Stream: ...
    def agents_changed(self) -> None: ...
    def on_approval(self, event: ev.ApprovalRequest) -> None: ...
    def on_question(self, event: ev.UserQuestion) -> None: ...


def clip(text: str, lines: int = 12) -> str:
    """A long input (a parent's brief, an attached file) cut to its first ``lines`` lines."""
    parts = text.split("\n")
    return text if len(parts) <= lines else "\n".join(
        [*parts[:lines], f"… {len(parts) - lines} more line(s)"])


class ConsoleRenderer(EventRenderer):
    """Live events, and with ``replay`` a resumed session's recorded ones (its log keeps no
    deltas: an answer comes whole with its ``turn_complete``, the main agent's prompt with its
    ``turn_start``). A replay draws the conversation only: what was asked then (approvals,
    questions) belongs to the run that recorded it. The agent tree is not drawn here: the
    console feeds every event, live and replayed alike, to its view model."""

    def __init__(self, host: Host, *, replay: bool = False) -> None:
        self.host = host
        self.replay = replay

    def on_event(self, event: ev.AnyEvent) -> None:
        pass

    def on_turn_start(self, event: ev.TurnStart) -> None:
        # The main agent's live input was drawn when it was sent (as typed, without the
        # attached files); anyone else's comes from its parent, the tree or /spawn.
        if self.replay or event.agent != self.host.main_path:
            self.host.stream(event.agent).user(clip(event.prompt))

    def on_text_delta(self, event: ev.TextDelta) -> None:
        self.host.stream(event.agent).add_text(event.text)

    def on_thinking_delta(self, event: ev.ThinkingDelta) -> None:
        self.host.stream(event.agent).add_thinking(event.text)

    def on_tool_start(self, event: ev.ToolStart) -> None:
        self.host.stream(event.agent).tool_start(event.call_id, event.name, event.arguments,
                                                 str(self.host.cwd))

    def on_tool_output_delta(self, event: ev.ToolOutputDelta) -> None:
        card = self.host.stream(event.agent).cards.get(event.call_id)
        if card is not None:
            card.add_output(event.text)

    def on_tool_done(self, event: ev.ToolDone) -> None:
        stream = self.host.stream(event.agent)
        card = stream.cards.get(event.call_id) or stream.tool_start(event.call_id, event.name, "")
        card.finish(event.output, event.is_error, event.duration_ms)

    def on_approval_request(self, event: ev.ApprovalRequest) -> None:
        if not self.replay:
            self.host.on_approval(event)

    def on_user_question(self, event: ev.UserQuestion) -> None:
        if not self.replay:
            self.host.on_question(event)

    def on_retry(self, event: ev.Retry) -> None:
        self.host.stream(event.agent).note(
            ("notice", f"retry {event.attempt}/{event.max} in {event.wait_ms} ms: {event.reason}"))

    def on_compaction(self, event: ev.Compaction) -> None:
        self.host.stream(event.agent).note(
            ("notice", f"context compacted{' (prompt too long)' if event.reason == 'overflow' else ''}: "
                       f"{event.before_tokens} → {event.after_tokens} tokens"))

    def on_autopilot_phase(self, event: ev.AutopilotPhase) -> None:
        self.host.stream(event.agent).note(("notice", event.summary()))

    def on_process_start(self, event: ev.ProcessStart) -> None:
        self.host.stream(event.agent).note(("notice", event.summary()))
        if not self.replay:
            self.host.agents_changed()  # its row in the tree (F2)

    def on_process_exit(self, event: ev.ProcessExit) -> None:
        self.host.stream(event.agent).note(("notice", event.summary()))
        if not self.replay:
            self.host.agents_changed()

    def on_turn_complete(self, event: ev.TurnComplete) -> None:
        stream = self.host.stream(event.agent)
        if self.replay and event.text:
            stream.answer(event.text)
        stream.end_blocks()
        if event.stop_reason == "cancelled":
            stream.note(("notice", "[cancelled]"))

    def on_error(self, event: ev.Error) -> None:
        self.host.stream(event.agent).note(("error", f"error: {event.message}"))
