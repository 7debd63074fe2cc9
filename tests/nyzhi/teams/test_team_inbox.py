"""Inboxes: send, read and mark, fan-out to all, unknown members, the kept history, the poke."""

from __future__ import annotations

import json
import os

import pytest

from nyzhi.teams import inbox as inbox_mod
from nyzhi.teams.errors import TeamError, TeamNotFound
from nyzhi.teams.inbox import Inbox, Message, deliver
from nyzhi.teams.store import Member, TeamConfig, TeamStore


@pytest.fixture
def store(home):
    s = TeamStore()
    s.create(TeamConfig("t", members=[Member("alice"), Member("bob")]))
    return s


def test_send_read_and_mark(store):
    sent = deliver(store, "t", "lead", "alice", "please start task 1")
    assert [(m.sender, m.to, m.text, m.read) for m in sent] == [
        ("lead", "alice", "please start task 1", False)]
    assert len(sent[0].id) == 12 and sent[0].time.endswith("Z")
    inbox = store.inbox("t", "alice")
    assert inbox.unread_count() == 1
    assert [m.text for m in inbox.read_unread(mark_read=False)] == ["please start task 1"]
    assert inbox.unread_count() == 1  # peeking marks nothing
    got = inbox.read_unread()
    assert [m.id for m in got] == [sent[0].id]
    assert inbox.unread_count() == 0 and inbox.read_unread() == []
    assert [m.read for m in inbox.messages()] == [True]  # kept, marked
    raw = json.loads(inbox.path.read_text())
    assert raw[0]["from"] == "lead" and raw[0]["read"] is True and raw[0]["kind"] == "message"
    assert store.inbox("t", "bob").messages() == []


def test_all_reaches_every_member_but_the_sender(store):
    sent = deliver(store, "t", "alice", "all", "done with 1")
    assert [m.to for m in sent] == ["all"]  # one broadcast, not a copy per member
    assert [m.text for m in store.inbox("t", "lead").read_unread()] == ["done with 1"]
    assert [m.text for m in store.inbox("t", "bob").read_unread()] == ["done with 1"]
    assert store.inbox("t", "alice").messages() == []


def test_messages_arrive_in_order_and_keep_their_kind(store):
    deliver(store, "t", "bob", "lead", "one")
    deliver(store, "t", "alice", "lead", "bob is idle", kind="idle_notification")
    deliver(store, "t", "user", "lead", "from the human")
    got = store.inbox("t", "lead").read_unread()
    assert [(m.sender, m.text, m.kind) for m in got] == [
        ("bob", "one", "message"), ("alice", "bob is idle", "idle_notification"),
        ("user", "from the human", "message")]


def test_unknown_member_names_the_members(store):
    with pytest.raises(TeamError, match=r"no member 'carol' in team 't' \(members: lead, alice, "
                                        r"bob; or 'all'\)"):
        deliver(store, "t", "lead", "carol", "hi")
    with pytest.raises(TeamError, match="is you"):
        deliver(store, "t", "alice", "alice", "hi")
    with pytest.raises(TeamError, match="empty"):
        deliver(store, "t", "lead", "alice", "  ")
    with pytest.raises(TeamError, match="kind"):
        deliver(store, "t", "lead", "alice", "x", kind="shout")
    with pytest.raises(TeamNotFound):
        deliver(store, "ghost", "lead", "alice", "hi")


def test_read_history_is_capped_but_unread_never_dropped(store, monkeypatch):
    monkeypatch.setattr(inbox_mod, "KEEP_READ", 3)
    inbox = store.inbox("t", "alice")
    for i in range(5):
        deliver(store, "t", "lead", "alice", f"m{i}")
    assert len(inbox.read_unread()) == 5
    deliver(store, "t", "lead", "alice", "m5")  # the write that prunes
    assert [(m.text, m.read) for m in inbox.messages()] == [
        ("m2", True), ("m3", True), ("m4", True), ("m5", False)]


def test_tolerant_read_of_the_originals_inbox(store):
    inbox = store.inbox("t", "bob")
    inbox.path.write_text(json.dumps([{"from": "team-lead", "text": "hi", "timestamp": "T",
                                       "read": False, "color": "#fff"}]))
    assert inbox.messages() == [Message("", "team-lead", "", "hi", "T")]
    inbox.path.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(TeamError, match="expected a JSON array"):
        inbox.messages()


def test_poke_with_nobody_listening_is_fine(tmp_path):
    inbox = Inbox(tmp_path, "alice")
    inbox.poke()  # no FIFO at all: ENOENT
    os.mkfifo(inbox.fifo_path)
    inbox.poke()  # a FIFO without a reader: ENXIO
    reader = os.open(inbox.fifo_path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        inbox.poke()
        assert os.read(reader, 10) == b"\x01"
        for _ in range(70_000):  # more than a pipe holds: EAGAIN is ignored too
            inbox.poke()
    finally:
        os.close(reader)


def test_append_pokes_a_listening_reader(store):
    inbox = store.inbox("t", "alice")
    os.mkfifo(inbox.fifo_path)
    reader = os.open(inbox.fifo_path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        deliver(store, "t", "lead", "alice", "wake up")
        assert os.read(reader, 10) == b"\x01"
    finally:
        os.close(reader)
