"""Inboxes: send, read and mark, fan-out to all, unknown members, the kept history, the poke."""

from __future__ import annotations

import json
import os

import pytest

from nyzhi.team_files import inbox as inbox_mod
from nyzhi.team_files.errors import TeamError, TeamNotFound
from nyzhi.team_files.inbox import Inbox, Message, deliver
from nyzhi.team_files.store import Member, TeamConfig, TeamStore


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


def test_taken_messages_wait_for_their_turn_to_start(store):
    """``take`` marks messages read but keeps them taken until ``started``: a turn that never
    started leaves them, and the next ``take`` (of a new process too: a new ``Inbox``)
    returns them again, first, once, with the newer ones after them."""
    inbox = store.inbox("t", "alice")
    deliver(store, "t", "lead", "alice", "one")
    deliver(store, "t", "bob", "all", "two (to all)")
    assert [m.text for m in inbox.take()] == ["one", "two (to all)"]
    assert inbox.read_unread() == []  # read: the turn's own inbox reads do not see them again
    assert inbox.unread_count() == 2  # but not delivered: the team is not done
    deliver(store, "t", "lead", "alice", "three")
    again = store.inbox("t", "alice")  # the restarted process's
    assert [m.text for m in again.undelivered()] == ["one", "two (to all)", "three"]
    assert [m.text for m in again.take()] == ["one", "two (to all)", "three"]
    assert [m.text for m in again.taken()] == ["one", "two (to all)", "three"]
    again.started()
    assert again.taken() == [] and again.unread_count() == 0
    assert again.take() == [] and not again.taken_path.exists()
    assert [m.read for m in again.messages()] == [True, True]  # the two direct ones


def test_a_kill_inside_take_neither_loses_nor_doubles_a_message(store):
    """The taken file is written first: a kill just after it leaves the messages both taken
    and unread (and the broadcast cursor where it was); the next ``take`` has each once."""
    inbox = store.inbox("t", "alice")
    deliver(store, "t", "lead", "alice", "one")
    deliver(store, "t", "bob", "all", "two (to all)")
    before = inbox.path.read_bytes()
    assert not inbox.cursor_path.exists()  # a member that has read no broadcast yet
    inbox.take()
    inbox.path.write_bytes(before)  # as if killed before the marks and the cursor
    inbox.cursor_path.unlink()
    assert inbox.unread_count() == 2
    assert [m.text for m in inbox.take()] == ["one", "two (to all)"]
    assert inbox.read_unread() == []
    inbox.started()
    assert inbox.take() == [] and inbox.unread_count() == 0


def test_a_bad_taken_file_is_named(store):
    inbox = store.inbox("t", "alice")
    inbox.taken_path.write_text('{"not": "a list"}')
    with pytest.raises(TeamError, match=r"alice\.taken\.json: expected a JSON array"):
        inbox.take()
