import json
import typing

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nyzhi.core import events as ev

SAMPLES = [
    ev.SessionStart("s-1", cwd="/w", provider="openai", model="gpt"),
    ev.TurnStart("t1", prompt="hi"),
    ev.TextDelta("hel", agent="/agents/main/sub-1"),
    ev.ThinkingDelta("hmm"),
    ev.ToolStart("c1", "bash", '{"command": "ls"}'),
    ev.ToolOutputDelta("c1", "a.txt\n"),
    ev.ToolDone("c1", "bash", "a.txt\n", is_error=False, duration_ms=12.5, metadata={"exit": 0}),
    ev.ApprovalRequest("r1", "c1", "bash", summary="run ls", preview="ls"),
    ev.UserQuestion("q1", call_id="c2", question="which?", options=({"value": "a", "label": "A"},)),
    ev.Retry(1, 3, 1000, "429"),
    ev.Usage(10, 5, 2, 1, 0.01, 100, 50, 0.1),
    ev.Compaction(9000, 1000, "summary", "/tmp/archive.jsonl"),
    ev.AgentStatus("running", detail="turn t1"),
    ev.TurnComplete("t1", "done", 3, "end_turn"),
    ev.Error("boom", kind="provider", retryable=True),
    ev.Notice("the project's hooks are not used", kind="untrusted_project"),
    ev.Result("done", session_id="s-1", usage={"input_tokens": 10}, is_error=False),
    ev.IndexProgress(3, 10, 2, 7, "a.py", 1.5, agent="/services/index"),
    ev.TeamMessage("crew", "alice", "lead", "done", agent="/team/crew/alice"),
    ev.TaskUpdate("crew", "3", "ship it", "completed", "bob", ("4",), agent="/team/crew/bob"),
    ev.AutopilotPhase("execute", "add a flag", 1, "QA failed; back to execute"),
    ev.ProcessStart("bg_1", "python3 -m http.server", 4242, False, True, agent="/agents/main/sub"),
    ev.ProcessOutputDelta("bg_1", "GET / 200\n", 12),
    ev.ProcessExit("bg_1", "python3 -m http.server", "killed", -15, ("Serving HTTP",)),
]


def test_every_event_type_has_a_sample():
    assert {type(e) for e in SAMPLES} == set(ev.EVENT_CLASSES)
    assert set(ev.EVENT_TYPES) == {
        "session_start", "turn_start", "text_delta", "thinking_delta", "tool_start",
        "tool_output_delta", "tool_done", "approval_request", "user_question", "retry", "usage", "compaction",
        "agent_status", "turn_complete", "error", "notice", "result", "index_progress",
        "team_message", "task_update", "autopilot_phase", "process_start",
        "process_output_delta", "process_exit",
    }


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_round_trip_through_json_text(event):
    data = ev.to_json(event)
    assert list(data)[0] == "type" and data["type"] == event.type
    assert list(data)[1] == "agent"
    back = ev.from_json(json.loads(json.dumps(data)))
    assert back == event
    assert type(back) is type(event)


def test_agent_path_is_kept():
    data = ev.to_json(ev.TextDelta("x", agent="/agents/main/sub-1"))
    assert data == {"type": "text_delta", "agent": "/agents/main/sub-1", "text": "x"}


def test_deltas_are_marked():
    assert {c.type for c in ev.EVENT_CLASSES if c.is_delta} == {
        "text_delta", "thinking_delta", "tool_output_delta", "index_progress",
        "process_output_delta"}


def test_unknown_type_becomes_generic_and_round_trips():
    data = {"type": "future_thing", "agent": "/agents/x", "n": 1}
    got = ev.from_json(data)
    assert isinstance(got, ev.GenericEvent)
    assert got.type == "future_thing" and got.data == {"n": 1}
    assert ev.to_json(got) == data


def test_missing_field_is_a_clear_error():
    with pytest.raises(ev.EventDecodeError) as info:
        ev.from_json({"type": "tool_done", "name": "bash"})
    assert str(info.value) == "tool_done event: 'call_id' is missing"


def test_a_mistyped_field_is_named():
    with pytest.raises(ev.EventDecodeError) as info:
        ev.from_json({"type": "retry", "attempt": "1", "max": 5, "wait_ms": 10})
    assert str(info.value) == "retry event: 'attempt' must be an integer, found '1'"


@pytest.mark.parametrize("bad", [[], {"text": "x"}, {"type": 3}])
def test_not_an_event(bad):
    with pytest.raises(ev.EventDecodeError):
        ev.from_json(bad)


def test_bad_status_rejected():
    with pytest.raises(ev.EventDecodeError, match="agent_status"):
        ev.from_json({"type": "agent_status", "status": "dancing"})


def test_extra_keys_ignored():
    assert ev.from_json({"type": "text_delta", "text": "a", "extra": 1}) == ev.TextDelta("a")


# ---- property: the whole vocabulary round-trips through JSON text -------------------------

JSON_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
FIELD_STRATEGIES = {
    str: st.text(),
    int: st.integers(),
    float: st.floats(allow_nan=False, allow_infinity=False),
    bool: st.booleans(),
    str | None: st.none() | st.text(),
    int | None: st.none() | st.integers(),
    dict[str, typing.Any]: st.dictionaries(st.text(), JSON_VALUES, max_size=4),
    tuple[dict[str, str], ...]: st.lists(
        st.dictionaries(st.text(), st.text(), max_size=3), max_size=3).map(tuple),
    tuple[str, ...]: st.lists(st.text(), max_size=3).map(tuple),
}


def field_strategy(cls, field):
    if cls is ev.AgentStatus and field.name == "status":
        return st.sampled_from(ev.AGENT_STATUSES)
    try:
        return FIELD_STRATEGIES[field.type]
    except KeyError:  # a new field type: teach this test how to make one
        raise AssertionError(f"{cls.__name__}.{field.name}: no strategy for {field.type!r}") from None


def event_strategy(cls):
    attrs.resolve_types(cls)
    return st.fixed_dictionaries(
        {f.name: field_strategy(cls, f) for f in attrs.fields(cls)}
    ).map(lambda kwargs: cls(**kwargs))


ANY_EVENT = st.one_of([event_strategy(cls) for cls in ev.EVENT_CLASSES])


@settings(max_examples=300, deadline=None)
@given(ANY_EVENT)
def test_every_event_type_round_trips_through_json(event):
    text = json.dumps(ev.to_json(event), ensure_ascii=False)
    back = ev.from_json(json.loads(text))
    assert type(back) is type(event)
    assert back == event


def test_the_vocabulary_lists_every_event_class():
    defined = {
        obj for obj in vars(ev).values()
        if isinstance(obj, type) and issubclass(obj, ev.Event) and obj is not ev.Event
    }
    assert defined == set(ev.EVENT_CLASSES)
