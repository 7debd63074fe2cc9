"""The one converter keeps every on-disk and on-wire format byte for byte.

``data/records/golden.json`` is what the hand-written ``to_json`` code (before ``nyzhi.convert``)
wrote for the records in ``record_samples.py``; ``data/records/old_stores`` is a team store and a
session written by that code (``nyz`` at commit ac6e18d). The converter must write the same JSON,
key order included (people script against stream-json), and read the old files back.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from record_samples import samples  # beside this file (pytest puts its directory on the path)

from nyzhi import convert
from nyzhi.core import events as ev
from nyzhi.core.loop.state_record import read_state
from nyzhi.core.prompt_env import Environment, read_environment
from nyzhi.core.runtime.sessions.records import SessionMeta
from nyzhi.core.runtime.sessions.store import SessionStore
from nyzhi.team_files.board import Task
from nyzhi.team_files.inbox import Message
from nyzhi.team_files.store import Member, TeamConfig, TeamStore

DATA = Path(__file__).parent / "data" / "records"
GOLDEN = json.loads((DATA / "golden.json").read_text())
CASES = [(kind, i) for kind, rows in GOLDEN.items() for i in range(len(rows))]
READERS = {
    "event": ev.from_json,
    "task": lambda d: convert.structure(d, Task, "task"),
    "message": lambda d: convert.structure(d, Message, "message"),
    "member": lambda d: convert.structure(d, Member, "member"),
    "team_config": lambda d: convert.structure(d, TeamConfig, "config"),
    "environment": read_environment,
    "state_record": read_state,
    "session_meta": lambda d: convert.structure(d, SessionMeta, "meta"),
}


def _text(data: object, **kw: object) -> str:
    return json.dumps(data, ensure_ascii=False, **kw)


def test_every_kind_has_a_golden_record():
    assert set(GOLDEN) == set(samples()) == set(READERS)
    assert {type(e) for e in samples()["event"]} >= set(ev.EVENT_CLASSES)


# Fields added since the golden file was written (extend, never rename): they may follow the
# old keys, and only these. Each names the change that added it.
EXTENSIONS: dict[str, tuple[str, ...]] = {
    # calibration of the token estimate (issue 44); thinking tokens, of the output (issue 32)
    "usage": ("model", "request_chars", "thinking_tokens", "total_thinking_tokens"),
    "compaction": ("reason",),  # threshold, overflow or manual (issue 44)
    # why a run ended, the tree's cost and its per-agent usage (issue 40)
    "result": ("subtype", "error", "cost_usd", "usage_by_agent",
               "background"),  # what nyz run stopped at its end (issue 51)
}

# Event types added since the old session was written (extend, never rename): the old log
# cannot hold them. Each names the change that added it.
NEWER_EVENTS = frozenset({
    "autopilot_phase",  # an autopilot's phase changed (issue 37)
    "notice",  # a start-up notice, untrusted project hooks skipped (issue 52)
    "process_start", "process_output_delta", "process_exit",  # background shells (issue 51)
})


@pytest.mark.parametrize(("kind", "i"), CASES, ids=[f"{k}-{i}" for k, i in CASES])
def test_written_json_is_the_old_codes(kind, i):
    obj = samples()[kind][i]
    old = GOLDEN[kind][i]
    new = ev.to_json(obj) if kind == "event" else convert.unstructure(obj)
    added = EXTENSIONS.get(old.get("type", ""), ()) if kind == "event" else ()
    extra = {k: v for k, v in new.items() if k not in old}
    assert set(extra) <= set(added), f"new keys {sorted(set(extra) - set(added))}"
    kept = {k: v for k, v in new.items() if k in old}
    assert list(new)[: len(kept)] == list(kept)  # the old keys first, new ones after
    assert _text(kept) == _text(old)  # same keys, same order, same values
    assert _text(kept, indent=2) == _text(old, indent=2)  # the team config's form on disk


@pytest.mark.parametrize(("kind", "i"), CASES, ids=[f"{k}-{i}" for k, i in CASES])
def test_old_json_reads_back_to_the_record(kind, i):
    back = READERS[kind](json.loads(_text(GOLDEN[kind][i])))
    obj = samples()[kind][i]
    if isinstance(obj, ev.SessionStart):  # the snapshot is read as the object a live run has
        env = obj.prompt["environment"]
        assert back.prompt["environment"] == read_environment(env)
        assert ev.to_json(back) == GOLDEN[kind][i]
        return
    if isinstance(obj, ev.GenericEvent):  # its "type" data key was never written
        assert back == ev.GenericEvent(obj.type, obj.agent, {"x": 1})
        return
    assert back == obj


def test_a_live_session_start_carries_the_snapshot_and_writes_the_old_json():
    env = Environment("Linux", "2026-11-20", None, "main", False, True)
    live = ev.SessionStart("s-1", cwd="/w", provider="openai", model="m",
                           prompt={"chars": 10, "sections": ["identity"], "environment": env})
    assert ev.to_json(live) == GOLDEN["event"][0]
    assert _text(ev.to_json(live)) == _text(GOLDEN["event"][0])
    assert ev.from_json(json.loads(_text(ev.to_json(live)))) == live


@pytest.fixture
def old_stores(tmp_path):
    root = tmp_path / "old_stores"
    shutil.copytree(DATA / "old_stores", root)
    return root


def test_a_team_store_written_by_the_old_code_loads_and_works(old_stores):
    store = TeamStore({"XDG_DATA_HOME": str(old_stores / "data")})
    config = store.load("old")
    assert config.names() == ["lead", "alice", "bob"] and config.trust == "ask"
    assert config.member("alice") == Member("alice", "reviewer", "m1", "teammate", "#61afef",
                                            "/w/alice")
    assert (config.default_model, config.default_role, config.max_steps) == ("dm", None, 40)
    board = store.board("old")
    one, two = board.get("1"), board.get("2")
    assert (one.status, one.owner, one.blocks) == ("in_progress", "alice", ["2"])
    assert (two.status, two.blocked_by) == ("blocked", ["1"])
    inbox = store.inbox("old", "alice")
    assert [(m.sender, m.kind, m.read) for m in inbox.messages()] == [
        ("lead", "message", False), ("bob", "idle_notification", True)]
    # and the new code's rewrite of each file is the old code's bytes
    before = {p: p.read_bytes() for p in (old_stores / "data").rglob("*.json")}
    store.update("old", lambda c: None)
    inbox.append([])
    board.update("2", status="blocked")  # a no-op change rewrites the task
    for path, data in before.items():
        if path.name == "2.json":
            new = json.loads(path.read_bytes())
            old = json.loads(data)
            assert list(new) == list(old) and {**new, "updated_at": ""} == {**old, "updated_at": ""}
        else:
            assert path.read_bytes() == data, path


def test_a_session_written_by_the_old_code_loads(old_stores):
    store = SessionStore(old_stores / "sessions")
    session = store.load("0b6f3f5e-old-session")
    assert session.skipped_lines == 0
    assert [ev.to_json(e) for e in session.events] == [
        ev.to_json(e) for e in samples()["event"]
        if not e.is_delta and e.type not in NEWER_EVENTS]
    assert read_state(session.state) == samples()["state_record"][0]
    meta = store.meta("0b6f3f5e-old-session")  # the cached meta file, read by the converter
    assert meta == json_meta(old_stores)


def json_meta(root: Path) -> SessionMeta:
    data = json.loads((root / "sessions" / "0b6f3f5e-old-session.meta.json").read_text())
    return SessionMeta(**data)


@pytest.mark.parametrize(("data", "message"), [
    ({"id": "1"}, "task.json: 'subject' is missing"),
    ({"id": "1", "subject": 5}, "task.json: 'subject' must be a string, found 5"),
    ({"id": "1", "subject": "s", "status": "done"},
     "task.json: 'status' must be one of pending, in_progress, completed, blocked, deleted, "
     "found 'done'"),
    ({"id": "1", "subject": "s", "blockedBy": "1"},
     "task.json: 'blockedBy' must be an array of task ids, found '1'"),
    ("x", "task.json: must be an object, found 'x'"),
])
def test_one_error_form_names_the_file_and_the_field(data, message):
    with pytest.raises(convert.RecordError) as info:
        convert.structure(data, Task, "task.json")
    assert str(info.value) == message


def test_older_keys_and_nulls_still_read():
    task = convert.structure({"id": "1", "subject": "s", "blocked_by": [2], "owner": None,
                              "description": None}, Task, "t")
    assert task.blocked_by == ["2"] and task.owner is None and task.description == ""
    message = convert.structure({"from": "a", "text": "t", "timestamp": "then"}, Message, "m")
    assert message == Message("", "a", "", "t", "then")
    member = convert.structure({"name": "a", "agent_type": "leader", "worktree_path": "/w"},
                               Member, "m")
    assert (member.agent_type, member.worktree) == ("leader", "/w")
