"""The events a front end has seen, kept so a viewer that joins later gets them too.

A session's live socket keeps one from the moment its runtime opens (``live_socket.
DeferredHub``), so a viewer attaching later (``nyz attach``) sees what happened before it,
and the console's ``/web`` (a browser joining the console's session) is fed the same one: the
kept events, then the live ones, by the console's one event pump, so nothing is missed or seen
twice. Once every consumer has it, it is no longer kept (each keeps its own).

Bounded, as every kept history is: consecutive deltas of one stream (one kind, one agent, one
tool call) are kept as one event holding their joined text (a viewer appends deltas, so the
one replays the many), and the oldest events go first when the count or the estimated size
passes its bound.
"""

from __future__ import annotations

import collections
from typing import Any

import attrs

from nyzhi.core import events as ev

DEFAULT_KEEP = 50_000  # events
DEFAULT_KEEP_CHARS = 16 * 1024 * 1024  # characters of the events' text fields, estimated
_OVERHEAD = 100  # characters an event is counted for beyond its text fields
_TEXT_FIELDS = ("text", "output", "arguments", "prompt", "preview", "message", "summary")
_DELTAS = (ev.TextDelta, ev.ThinkingDelta, ev.ToolOutputDelta)


def _size(event: ev.Event) -> int:
    return _OVERHEAD + sum(len(v) for name in _TEXT_FIELDS
                           if isinstance(v := getattr(event, name, None), str))


def _run_key(event: ev.Event) -> tuple[str, str, str] | None:
    if isinstance(event, _DELTAS):
        return (event.type, event.agent, getattr(event, "call_id", ""))
    return None


class EventBacklog:
    """Events in order, deltas of one stream joined, bounded by count and size."""

    def __init__(self, keep: int = DEFAULT_KEEP, keep_chars: int = DEFAULT_KEEP_CHARS) -> None:
        self.keep, self.keep_chars = keep, keep_chars
        self.events: collections.deque[ev.Event] = collections.deque()
        self.chars = 0
        # the run of deltas at the end, not yet joined: its key, first event and pieces
        self._run_key: tuple[str, str, str] | None = None
        self._run_first: Any = None
        self._run: list[str] = []
        self.dropped = 0  # events dropped for the bound (the viewer's history starts later)

    def add(self, event: ev.Event) -> None:
        key = _run_key(event)
        if key is not None and key == self._run_key:
            self._run.append(event.text)  # type: ignore[attr-defined]
            self.chars += len(event.text)  # type: ignore[attr-defined]
        else:
            self._join()
            if key is not None:
                self._run_key, self._run_first = key, event
                self._run = [event.text]  # type: ignore[attr-defined]
                self.chars += _size(event)
            else:
                self.events.append(event)
                self.chars += _size(event)
        self._trim()

    def _join(self) -> None:
        if self._run_key is None:
            return
        first, pieces = self._run_first, self._run
        self._run_key, self._run_first, self._run = None, None, []
        self.events.append(first if len(pieces) == 1
                           else attrs.evolve(first, text="".join(pieces)))

    def _trim(self) -> None:
        while self.events and (len(self.events) + bool(self._run) > self.keep
                               or self.chars > self.keep_chars):
            self.chars -= _size(self.events.popleft())
            self.dropped += 1

    def kept(self) -> list[ev.Event]:
        """Every kept event, oldest first; they stay kept (another consumer's too)."""
        self._join()
        return list(self.events)

    def drain(self) -> list[ev.Event]:
        """Every kept event, oldest first; the backlog is empty after."""
        out = self.kept()
        self.events.clear()
        self.chars = 0
        return out
