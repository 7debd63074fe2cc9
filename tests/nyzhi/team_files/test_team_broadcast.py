"""Broadcasts are one shared log read by offset: a broadcast is one write, not one per member;
each member reads it once, merged in order with its own messages; a torn line left by a crash
is neither read nor kept; a member that joins later does not get older broadcasts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nyzhi.team_files import locking
from nyzhi.team_files.inbox import deliver
from nyzhi.team_files.store import Member, TeamConfig, TeamStore

N = 100


def _team(store: TeamStore, name: str, n: int) -> list[str]:
    members = [f"m{i}" for i in range(n)]
    store.create(TeamConfig(name, members=[Member(m) for m in members]))
    return members


def _writes(fn) -> int:
    before = locking.COUNTS["writes"]
    fn()
    return locking.COUNTS["writes"] - before


def test_everyone_broadcasting_is_linear_in_writes(home):
    """100 members each broadcast once, then each reads: 100 appends + one cursor write per
    member. A copy per inbox would be 100 x 100 inbox rewrites, then 100 mark-read writes."""
    store = TeamStore()
    members = _team(store, "big", N)

    sends = _writes(lambda: [deliver(store, "big", m, "all", f"hello from {m}") for m in members])
    assert sends == N  # one line each
    got: dict[str, list[str]] = {}
    reads = _writes(lambda: got.update(
        {m: [x.text for x in store.inbox("big", m).read_unread()] for m in members}))
    assert reads <= N  # one cursor write per member that read something
    for m in members:  # each got every other member's broadcast, oldest first, once
        assert got[m] == [f"hello from {o}" for o in members if o != m]
    assert all(store.inbox("big", m).unread_count() == 0 for m in members)
    log = store.broadcasts("big").path.read_bytes()
    assert log.count(b"\n") == N
    assert not any((store.team_dir("big") / "inboxes" / f"{m}.json").exists() for m in members)


def test_broadcasts_merge_with_direct_messages_in_order(home):
    store = TeamStore()
    _team(store, "t", 2)
    deliver(store, "t", "lead", "m0", "one")
    deliver(store, "t", "m1", "all", "two")
    deliver(store, "t", "lead", "m0", "three")
    inbox = store.inbox("t", "m0")
    assert inbox.unread_count() == 3

    def in_order(got):  # by time; two senders within one millisecond may come either way
        assert [m.time for m in got] == sorted(m.time for m in got)
        assert [m.text for m in got if m.sender == "lead"] == ["one", "three"]
        return sorted(m.text for m in got)

    assert in_order(inbox.messages()) == ["one", "three", "two"]
    assert in_order(inbox.read_unread(mark_read=False)) == ["one", "three", "two"]
    got = inbox.read_unread()
    assert in_order(got) == ["one", "three", "two"]
    assert {m.text: m.to for m in got} == {"one": "m0", "two": "all", "three": "m0"}
    assert inbox.read_unread() == [] and inbox.unread_count() == 0
    assert [m.text for m in store.inbox("t", "lead").read_unread()] == ["two"]
    assert store.inbox("t", "m1").read_unread() == []  # not to its sender


def test_a_member_who_joins_later_starts_at_the_end(home):
    store = TeamStore()
    _team(store, "t", 1)
    deliver(store, "t", "lead", "all", "before you came")
    store.add_member("t", Member("late"))
    assert store.inbox("t", "late").read_unread() == []
    deliver(store, "t", "lead", "all", "welcome")
    assert [m.text for m in store.inbox("t", "late").read_unread()] == ["welcome"]
    assert [m.text for m in store.inbox("t", "m0").read_unread()] == ["before you came",
                                                                       "welcome"]


CRASH = """
import os, sys
from nyzhi.team_files.store import TeamStore
log = TeamStore({"XDG_DATA_HOME": sys.argv[1]}).broadcasts("t")
real_write = os.write
def torn(fd, data):  # the writer dies half-way through its line
    real_write(fd, data[: len(data) // 2])
    os._exit(9)
os.write = torn
log.append({"id": "x", "from": "lead", "to": "all", "text": "never whole", "time": "T"})
"""


def test_a_torn_broadcast_is_never_read_and_is_cut_by_the_next(home, tmp_path):
    data = tmp_path / "data"
    env = {"XDG_DATA_HOME": str(data)}
    store = TeamStore(env)
    store.create(TeamConfig("t", members=[Member("amy")]))
    deliver(store, "t", "lead", "all", "first")
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    proc = subprocess.run([sys.executable, "-c", CRASH, str(data)],
                          env={**os.environ, "PYTHONPATH": here})
    assert proc.returncode == 9
    assert not store.broadcasts("t").path.read_bytes().endswith(b"\n")  # torn
    amy = store.inbox("t", "amy")
    assert [m.text for m in amy.read_unread()] == ["first"]  # the torn line is not read
    deliver(store, "t", "lead", "all", "second")
    assert [m.text for m in amy.read_unread()] == ["second"]
    assert b"never whole" not in store.broadcasts("t").path.read_bytes()


@pytest.mark.parametrize("junk", [b"not json\n", b"[1,2]\n", b'{"from": 3}\n'])
def test_a_bad_line_does_not_block_the_inbox(home, junk):
    store = TeamStore()
    _team(store, "t", 1)
    deliver(store, "t", "lead", "all", "before")
    with open(store.broadcasts("t").path, "ab") as fh:
        fh.write(junk)
    deliver(store, "t", "lead", "all", "after")
    assert [m.text for m in store.inbox("t", "m0").read_unread()] == ["before", "after"]
