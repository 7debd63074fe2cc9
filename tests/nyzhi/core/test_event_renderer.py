"""The one dispatch every front end renders events through."""

from __future__ import annotations

import io
import json

import pytest
from test_events import SAMPLES

from nyzhi.core import events as ev
from nyzhi.core.protocol.renderer import EventRenderer, handler_name
from nyzhi.headless.render import JsonLines, Timeline


def test_the_base_has_a_handler_for_every_event_type():
    for cls in ev.EVENT_CLASSES:
        assert callable(getattr(EventRenderer, handler_name(cls.type), None)), cls.type


def test_dispatch_goes_to_the_types_handler_and_the_rest_to_on_event():
    seen = []

    class Picky(EventRenderer):
        def on_tool_done(self, event):
            seen.append(("tool_done", event.call_id))

        def on_event(self, event):
            seen.append(("other", event.type))

        def on_unknown(self, event):
            seen.append(("unknown", event.type))

    r = Picky()
    r.render(ev.ToolDone("c1", "bash"))
    r.render(ev.TextDelta("x"))
    r.render(ev.GenericEvent("from_the_future"))
    assert seen == [("tool_done", "c1"), ("other", "text_delta"), ("unknown", "from_the_future")]


def test_a_subclass_table_is_built_once_per_class():
    class A(EventRenderer):
        def on_error(self, event):
            pass

    class B(A):
        pass

    assert A._handlers["error"] is A.on_error and B._handlers["error"] is A.on_error
    assert EventRenderer._handlers["error"] is EventRenderer.on_error


def test_a_vocabulary_type_without_a_handler_is_refused(monkeypatch):
    class NewThing(ev.Event):
        type = "new_thing"

    monkeypatch.setattr(ev, "EVENT_CLASSES", (*ev.EVENT_CLASSES, NewThing))
    with pytest.raises(TypeError, match="no on_new_thing handler"):
        class Renderer(EventRenderer):
            pass


def test_json_lines_are_the_events_json():
    out = io.StringIO()
    events = [ev.TurnStart("t1", "hi"), ev.Result("ok", session_id="s"), ev.GenericEvent("x")]
    renderer = JsonLines(out)
    for event in events:
        renderer.render(event)
    assert [ev.from_json(json.loads(line)) for line in out.getvalue().splitlines()] == events


def test_timeline_gives_every_event_type_one_line():
    out = io.StringIO()
    timeline = Timeline(out)
    for event in [*SAMPLES, ev.GenericEvent("from_the_future", data={"n": 1})]:
        timeline.render(event)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(SAMPLES) + 1
    for event, line in zip(SAMPLES, lines, strict=False):
        agent = [] if event.agent == ev.MAIN_AGENT else [event.agent]
        assert line.split()[1:3 if agent else 2] == [*agent, event.type]
    assert "bash ok in 12 ms [c1]: a.txt" in out.getvalue()
    assert lines[-1].endswith("n=1")
