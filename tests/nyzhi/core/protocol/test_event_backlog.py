"""The backlog a front end keeps for a viewer that joins later (``/web``), and ``/web`` in a
front end that cannot serve itself."""

from __future__ import annotations

from pathlib import Path

import trio

from nyzhi.core import events as ev
from nyzhi.core.protocol.backlog import EventBacklog
from nyzhi.core.protocol.commands import ERROR, dispatch


def test_deltas_of_one_stream_are_kept_as_one_event_in_order():
    backlog = EventBacklog()
    backlog.add(ev.TurnStart("t1", "hi"))
    for piece in ("Hel", "lo ", "world"):
        backlog.add(ev.TextDelta(piece))
    backlog.add(ev.ToolStart("c1", "bash"))
    backlog.add(ev.ToolOutputDelta("c1", "a"))
    backlog.add(ev.ToolOutputDelta("c2", "b"))  # another call: another stream
    backlog.add(ev.TextDelta("sub", agent="/agents/main/sub"))
    backlog.add(ev.TextDelta("!"))
    kept = backlog.drain()
    assert [type(e).__name__ for e in kept] == [
        "TurnStart", "TextDelta", "ToolStart", "ToolOutputDelta", "ToolOutputDelta",
        "TextDelta", "TextDelta"]
    assert kept[1].text == "Hello world" and kept[1].agent == ev.MAIN_AGENT
    assert (kept[3].call_id, kept[4].call_id) == ("c1", "c2")
    assert kept[5].agent == "/agents/main/sub" and kept[6].text == "!"
    assert backlog.drain() == []  # handed over once


def test_the_oldest_events_go_past_the_count_or_the_size():
    backlog = EventBacklog(keep=3)
    for n in range(5):
        backlog.add(ev.Notice(f"n{n}"))
    assert [e.message for e in backlog.drain()] == ["n2", "n3", "n4"]
    small = EventBacklog(keep_chars=1000)
    for n in range(5):
        small.add(ev.Notice(str(n) * 400))
    kept = small.drain()
    assert [e.message[0] for e in kept] == ["3", "4"] and small.dropped == 3


class _Chat:
    """A front end with no ``WEB`` feature (as the line chat, the web page)."""

    rt = object()
    cwd = Path(".")
    busy = False
    features: frozenset[str] = frozenset()
    cancel_hint = "Ctrl-C"
    keys_help = ""

    def __init__(self) -> None:
        self.shown: list[tuple[str, str]] = []

    def show(self, kind: str, text: str) -> None:
        self.shown.append((kind, text))


def test_web_says_it_is_unavailable_where_the_front_end_cannot_serve_itself():
    host = _Chat()
    trio.run(dispatch, host, "/web")
    [(kind, text)] = host.shown
    assert kind == ERROR and "cannot serve" in text and "nyz serve" in text
