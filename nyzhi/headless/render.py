"""The command line's event renderers (``nyz run`` and ``nyz replay``) on the one dispatch of
``nyzhi.core.protocol.renderer``.

* ``JsonLines`` — every event as one JSON line: ``nyz run --output-format stream-json`` and
  ``nyz replay --json`` (so a replayed log prints exactly what the live run printed);
* ``ResultOnly`` — only the final ``result`` event: ``--output-format json``;
* ``Progress`` — ``--output-format text``: progress on stderr, the answer on stdout;
* ``Timeline`` — ``nyz replay``: one human line per event.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import TextIO

from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.renderer import EventRenderer
from nyzhi.textcut import cut

# ``kind`` of the error event for a runtime that could not start (config, provider, session).
STARTUP = "startup"

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
# What the main agent's events say about the wait: the model is asked (or thinking, or
# writing an answer that is not echoed), or the wait is over (something else is on screen).
_WAITS = (ev.TurnStart, ev.ToolDone, ev.ThinkingDelta, ev.Retry, ev.Compaction)
_WAIT_ENDS = (ev.ToolStart, ev.ApprovalRequest, ev.UserQuestion, ev.TurnComplete, ev.Error,
              ev.Result)


class JsonLines(EventRenderer):
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def on_event(self, event: ev.AnyEvent) -> None:
        self.out.write(json.dumps(ev.to_json(event), ensure_ascii=False) + "\n")
        self.out.flush()


class ResultOnly(JsonLines):
    def on_event(self, event: ev.AnyEvent) -> None:
        pass

    def on_result(self, event: ev.Result) -> None:
        super().on_event(event)


class Progress(EventRenderer):
    """Tool calls, retries, compactions and errors on ``err`` (unless quiet); the answer on
    ``out`` when the ``result`` comes."""

    def __init__(self, out: TextIO, err: TextIO, quiet: bool) -> None:
        self.out = out
        self.err = err
        self.quiet = quiet
        self._mid_line = False
        self._waiting_since: float | None = None  # the main agent waits on the model
        self._spun = False  # a spinner frame is on the line now
        self._frame = 0

    # ---- the spinner: 30-60 s of nothing on a slow model read as a hang --------------------

    def spins(self) -> bool:
        """Whether ``spin`` draws: progress on and stderr a terminal (never into a log)."""
        return not self.quiet and _isatty(self.err)

    def spin(self) -> None:
        """One frame, called by the run's ticker: ``⠋ waiting for the model · 12 s``."""
        if self._waiting_since is None or self._mid_line or not self.spins():
            return
        secs = int(time.monotonic() - self._waiting_since)
        self._frame = (self._frame + 1) % len(SPINNER)
        self.err.write(f"\r\033[K{SPINNER[self._frame]} waiting for the model · {secs} s")
        self.err.flush()
        self._spun = True

    def render(self, event: ev.AnyEvent) -> None:
        if self._spun:  # the frame is wiped before anything else is written
            self.err.write("\r\033[K")
            self.err.flush()
            self._spun = False
        if event.agent == ev.MAIN_AGENT or isinstance(event, ev.Result):
            if isinstance(event, _WAITS):
                if self._waiting_since is None:
                    self._waiting_since = time.monotonic()
            elif isinstance(event, _WAIT_ENDS) or (
                    isinstance(event, ev.TextDelta) and not self.out.isatty()):
                self._waiting_since = None
        super().render(event)

    def progress(self, text: str) -> None:
        if not self.quiet:
            self.err.write(text)
            self.err.flush()

    def _newline(self) -> None:
        if self._mid_line:
            self.progress("\n")
            self._mid_line = False

    @staticmethod
    def who(event: ev.AnyEvent) -> str:
        """"" for the main agent, "[nickname] " for a subagent."""
        return "" if event.agent == ev.MAIN_AGENT else f"[{event.agent.rsplit('/', 1)[-1]}] "

    def on_text_delta(self, event: ev.TextDelta) -> None:
        # The answer itself goes to stdout at the end; echo it live on stderr only when
        # stderr is a terminal and stdout is not (a person watches while the answer goes to
        # a file or pipe). With stdout on the terminal it would show twice; with stderr in a
        # file or pipe too (`> out 2>&1`, a log) the answer would be in it twice. Subagents'
        # text is not echoed: several at once would interleave mid-line.
        if self.out.isatty() or not _isatty(self.err) or event.agent != ev.MAIN_AGENT:
            return
        self.progress(event.text)
        self._mid_line = not event.text.endswith("\n")

    def on_tool_start(self, event: ev.ToolStart) -> None:
        self._newline()
        self.progress(f"{self.who(event)}[tool: {event.name}]\n")

    def on_tool_done(self, event: ev.ToolDone) -> None:
        preview = (event.output or "").strip().replace("\n", " ")[:200]
        status = "failed" if event.is_error else "done"
        self.progress(f"{self.who(event)}{event.name} {status}: {preview}\n")

    def on_retry(self, event: ev.Retry) -> None:
        self._newline()
        self.progress(
            f"[retry {event.attempt}/{event.max}] waiting {event.wait_ms}ms: {event.reason}\n"
        )

    def on_compaction(self, event: ev.Compaction) -> None:
        self._newline()
        why = " (the provider said the prompt is too long)" if event.reason == "overflow" else ""
        self.progress(
            f"[compacted context{why}: {event.before_tokens} -> {event.after_tokens} tokens]\n"
        )

    def on_team_message(self, event: ev.TeamMessage) -> None:
        if event.kind == "message":
            self._newline()
            self.progress(f"[{event.sender} → {event.to}] {cut(event.text, 160)}\n")

    def on_task_update(self, event: ev.TaskUpdate) -> None:
        self._newline()
        owner = f" ({event.owner})" if event.owner else ""
        self.progress(f"[task {event.task_id} {event.status}{owner}] {cut(event.subject, 100)}\n")

    def on_autopilot_phase(self, event: ev.AutopilotPhase) -> None:
        self._newline()
        self.progress(f"[{event.summary()}]\n")

    def on_process_start(self, event: ev.ProcessStart) -> None:
        self._newline()
        self.progress(f"{self.who(event)}[{event.summary()}]\n")

    def on_process_exit(self, event: ev.ProcessExit) -> None:
        self._newline()
        self.progress(f"{self.who(event)}[{event.summary()}]\n")

    def on_error(self, event: ev.Error) -> None:
        if event.kind == STARTUP:
            return  # nothing ran: the exit message ("nyz: …") says it once
        self._newline()
        self.progress(f"{self.who(event)}error: {event.message}\n")

    def on_result(self, event: ev.Result) -> None:
        self._newline()
        text = event.result
        if text:
            self.out.write(text if text.endswith("\n") else text + "\n")
            self.out.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or a bare stream: not a terminal
        return False


class Timeline(EventRenderer):
    """``nyz replay``: ``HH:MM:SS.mmm [agent]  type  summary`` per event."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.when = 0.0

    def line(self, event: ev.AnyEvent, summary: str) -> None:
        stamp = dt.datetime.fromtimestamp(self.when).strftime("%H:%M:%S.%f")[:-3]
        agent = "" if event.agent == ev.MAIN_AGENT else f" {event.agent}"
        self.out.write(f"{stamp}{agent}  {event.type:<17} {summary}\n")

    def on_unknown(self, event: ev.GenericEvent) -> None:
        self.line(event, cut(" ".join(f"{k}={v}" for k, v in event.data.items()), 100))

    def on_session_start(self, event: ev.SessionStart) -> None:
        self.line(event, f"{event.session_id} {event.provider}/{event.model} in {event.cwd}")

    def on_turn_start(self, event: ev.TurnStart) -> None:
        self.line(event, f"{event.turn_id}: {cut(event.prompt, 100)}")

    def on_text_delta(self, event: ev.TextDelta) -> None:
        self.line(event, cut(event.text, 100))

    def on_thinking_delta(self, event: ev.ThinkingDelta) -> None:
        self.line(event, cut(event.text, 100))

    def on_tool_start(self, event: ev.ToolStart) -> None:
        self.line(event, f"{event.name} {cut(event.arguments, 100)} [{event.call_id}]")

    def on_tool_output_delta(self, event: ev.ToolOutputDelta) -> None:
        self.line(event, f"[{event.call_id}] {cut(event.text, 100)}")

    def on_tool_done(self, event: ev.ToolDone) -> None:
        status = "error" if event.is_error else "ok"
        self.line(event, f"{event.name} {status} in {event.duration_ms:.0f} ms "
                         f"[{event.call_id}]: {cut(event.output, 80)}")

    def on_approval_request(self, event: ev.ApprovalRequest) -> None:
        self.line(event, f"{event.tool}: {cut(event.summary, 100)} [{event.call_id}]")

    def on_user_question(self, event: ev.UserQuestion) -> None:
        self.line(event, cut(event.question, 100))

    def on_retry(self, event: ev.Retry) -> None:
        self.line(event, f"{event.attempt}/{event.max} in {event.wait_ms} ms: {event.reason}")

    def on_usage(self, event: ev.Usage) -> None:
        self.line(event, f"{event.input_tokens} in, {event.output_tokens} out, "
                         f"${event.cost_usd:.4f} (total {event.total_input_tokens} in, "
                         f"{event.total_output_tokens} out, ${event.total_cost_usd:.4f})")

    def on_compaction(self, event: ev.Compaction) -> None:
        self.line(event, f"{event.before_tokens} → {event.after_tokens} tokens ({event.reason})")

    def on_agent_status(self, event: ev.AgentStatus) -> None:
        self.line(event, f"{event.status} {event.detail}".rstrip())

    def on_turn_complete(self, event: ev.TurnComplete) -> None:
        self.line(event, f"{event.turn_id} after {event.steps} step(s), {event.stop_reason}: "
                         f"{cut(event.text, 80)}")

    def on_error(self, event: ev.Error) -> None:
        self.line(event, f"{event.kind}: {event.message}")

    def on_notice(self, event: ev.Notice) -> None:
        self.line(event, f"{event.kind}: {cut(event.message, 100)}")

    def on_result(self, event: ev.Result) -> None:
        self.line(event, cut(event.result, 100))

    def on_index_progress(self, event: ev.IndexProgress) -> None:
        self.line(event, event.summary if event.done else
                  f"{event.files_done}/{event.files_total} {event.path}")

    def on_team_message(self, event: ev.TeamMessage) -> None:
        self.line(event, f"{event.team}: {event.sender} → {event.to} ({event.kind}): "
                         f"{cut(event.text, 80)}")

    def on_task_update(self, event: ev.TaskUpdate) -> None:
        owner = f" ({event.owner})" if event.owner else ""
        self.line(event, f"{event.team}: task {event.task_id} {event.status}{owner}: "
                         f"{cut(event.subject, 60)}")

    def on_autopilot_phase(self, event: ev.AutopilotPhase) -> None:
        self.line(event, event.summary(100))

    def on_process_start(self, event: ev.ProcessStart) -> None:
        self.line(event, f"{event.summary(80)} (pid {event.pid})")

    def on_process_output_delta(self, event: ev.ProcessOutputDelta) -> None:
        self.line(event, f"{event.shell_id}: {cut(event.text, 100)}")

    def on_process_exit(self, event: ev.ProcessExit) -> None:
        self.line(event, event.summary(80))
