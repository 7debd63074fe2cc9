"""One dispatch from an event to the front end's handler for its type.

Every front end — ``nyz run`` (text, json, stream-json), the line chat, ``nyz replay`` and the
coming console — subclasses ``EventRenderer`` and overrides the ``on_<type>`` methods it
cares about. ``render(event)`` looks the handler up in a table built once per class from the
vocabulary (``events.EVENT_CLASSES``), so a live stream and a replayed session log go through
the same code, and a new event type without a handler here fails a test instead of being
silently dropped by an if/elif chain somewhere.

Each ``on_<type>`` of this base calls ``on_event``, which does nothing: a renderer that treats
every event alike (JSON lines) overrides ``on_event`` alone. An event of a type this version
does not know (``GenericEvent``, read from a newer log) goes to ``on_unknown``, which also
falls back to ``on_event``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from nyzhi.core import events as ev

Handler = Callable[[Any, Any], None]


def handler_name(event_type: str) -> str:
    return f"on_{event_type}"


class EventRenderer:
    _handlers: ClassVar[dict[str, Handler]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._handlers = _table(cls)

    def render(self, event: ev.AnyEvent) -> None:
        handler = self._handlers.get(event.type)
        if handler is None or isinstance(event, ev.GenericEvent):
            self.on_unknown(event)  # type: ignore[arg-type]
        else:
            handler(self, event)

    # ---- the fallbacks -------------------------------------------------------------------

    def on_event(self, event: ev.AnyEvent) -> None:
        """Every ``on_<type>`` not overridden ends here."""

    def on_unknown(self, event: ev.GenericEvent) -> None:
        self.on_event(event)

    # ---- one method per event type (``test_event_renderer`` checks none is missing) -------

    def on_session_start(self, event: ev.SessionStart) -> None:
        self.on_event(event)

    def on_turn_start(self, event: ev.TurnStart) -> None:
        self.on_event(event)

    def on_text_delta(self, event: ev.TextDelta) -> None:
        self.on_event(event)

    def on_thinking_delta(self, event: ev.ThinkingDelta) -> None:
        self.on_event(event)

    def on_tool_start(self, event: ev.ToolStart) -> None:
        self.on_event(event)

    def on_tool_output_delta(self, event: ev.ToolOutputDelta) -> None:
        self.on_event(event)

    def on_tool_done(self, event: ev.ToolDone) -> None:
        self.on_event(event)

    def on_approval_request(self, event: ev.ApprovalRequest) -> None:
        self.on_event(event)

    def on_user_question(self, event: ev.UserQuestion) -> None:
        self.on_event(event)

    def on_retry(self, event: ev.Retry) -> None:
        self.on_event(event)

    def on_usage(self, event: ev.Usage) -> None:
        self.on_event(event)

    def on_compaction(self, event: ev.Compaction) -> None:
        self.on_event(event)

    def on_agent_status(self, event: ev.AgentStatus) -> None:
        self.on_event(event)

    def on_turn_complete(self, event: ev.TurnComplete) -> None:
        self.on_event(event)

    def on_error(self, event: ev.Error) -> None:
        self.on_event(event)

    def on_notice(self, event: ev.Notice) -> None:
        self.on_event(event)

    def on_result(self, event: ev.Result) -> None:
        self.on_event(event)

    def on_index_progress(self, event: ev.IndexProgress) -> None:
        self.on_event(event)

    def on_team_message(self, event: ev.TeamMessage) -> None:
        self.on_event(event)

    def on_task_update(self, event: ev.TaskUpdate) -> None:
        self.on_event(event)

    def on_autopilot_phase(self, event: ev.AutopilotPhase) -> None:
        self.on_event(event)

    def on_process_start(self, event: ev.ProcessStart) -> None:
        self.on_event(event)

    def on_process_output_delta(self, event: ev.ProcessOutputDelta) -> None:
        self.on_event(event)

    def on_process_exit(self, event: ev.ProcessExit) -> None:
        self.on_event(event)


def _table(cls: type[EventRenderer]) -> dict[str, Handler]:
    """``type`` → the class's ``on_<type>`` function, for every type of the vocabulary."""
    table: dict[str, Handler] = {}
    for event_cls in ev.EVENT_CLASSES:
        handler = getattr(cls, handler_name(event_cls.type), None)
        if handler is None:
            raise TypeError(f"{cls.__name__} has no {handler_name(event_cls.type)} handler")
        table[event_cls.type] = handler
    return table


EventRenderer._handlers = _table(EventRenderer)
