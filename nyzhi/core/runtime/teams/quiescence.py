"""Is a team done? Counters kept per team event, so one event costs O(1), not O(n).

A headless lead (``nyz team start --headless``) waits until the lead and every teammate are
idle and no message is unread. Reading every inbox and status file on each team event cost
O(n) per event, O(n²) for a team's life. ``Ledger`` keeps, per team:

* ``direct``: members known to have unread messages (a ``team_message`` to one member adds
  it; an idle notification to the lead does not count, as it never wakes the lead);
* ``seq`` / ``seen``: broadcasts counted, and how many of them each member is known to have
  read; ``behind`` counts members with ``seen < seq`` (a broadcast makes everyone but its
  sender behind in O(1), without touching n entries);
* ``unsettled`` / ``failed``: members whose last status is not idle, or failed.

An event names the members it changes (a message's recipient, a turn's or status's agent); only
those are re-read (their status file and inbox), by ``read`` and ``apply``. The verdict is then read off
the counters. Counters can only err towards "not done" while events flow (every write that
makes a member busy or unread is followed by its event here); a write no event reports (``nyz
team send`` from another shell) is caught by ``wait_quiet``'s poll, which re-reads everyone,
and a "done" is always confirmed by one full read before it is believed.
"""

from __future__ import annotations

from typing import Any

from nyzhi.core.runtime.teams.prompt import IDLE_NOTICE
from nyzhi.team_files.names import LEAD

SETTLED = frozenset({"idle"})
FAILED = frozenset({"errored", "failed"})


class Ledger:
    """One team's quiescence counters. Not thread-safe: changed on the trio thread only."""

    def __init__(self, members: list[str]) -> None:
        self.members: set[str] = set(members)
        self.direct: set[str] = set()
        self.seq = 0
        self.seen: dict[str, int] = {}
        self.behind = 0
        self.status: dict[str, dict[str, Any]] = {}
        self.unsettled: set[str] = set()
        self.failed: set[str] = set()
        self.dirty: set[str] = set(members)
        self.running: set[str] = set()  # members this lead runs
        self.reads = 0  # members re-read (the scale tests and the benchmark count them)

    # --- events ---------------------------------------------------------------------------

    def join(self, member: str, running: bool = False) -> None:
        """A member added to the team (``running``: one this lead runs, whose status counts)."""
        if member not in self.members:
            self.members.add(member)
            self.seen[member] = self.seq
        if running:
            self.running.add(member)
        self.dirty.add(member)

    def message(self, sender: str, to: str, kind: str) -> None:
        """A message was delivered (the file is written before its event is published)."""
        if to == "all":
            sender_current = sender in self.members and self._current(sender)
            self.seq += 1
            if sender_current:
                self.seen[sender] = self.seq  # a broadcast is not for its sender
            self.behind = len(self.members) - (1 if sender_current else 0)
            return
        if to not in self.members:
            return
        if to == LEAD and kind == IDLE_NOTICE:
            return  # a notice never wakes the lead: nothing to wait for
        self.dirty.add(to)  # a read of it under way may predate this message
        self.direct.add(to)

    def touch(self, member: str) -> None:
        """The member's status or inbox may have changed: re-read it at the next verdict."""
        if member in self.members:
            self.dirty.add(member)

    def touch_all(self) -> None:
        self.dirty |= self.members

    # --- refreshing from the files ------------------------------------------------------------

    def _current(self, member: str) -> bool:
        return self.seen.get(member, 0) >= self.seq

    def take_dirty(self) -> tuple[int, set[str]]:
        """The members to re-read, and the broadcast count the reading starts at."""
        dirty, self.dirty = self.dirty, set()
        return self.seq, dirty

    @classmethod
    def read(cls, store: Any, team: str, members: set[str]) -> dict[str, tuple[int, dict]]:
        """Each member's unread count and status (blocking: a worker thread runs it)."""
        return {m: (cls._unread(store, team, m), store.status(team, m)) for m in members}

    def apply(self, seq: int, results: dict[str, tuple[int, dict[str, Any]]]) -> None:
        """What ``read`` found, read when ``seq`` broadcasts had been counted. A member an
        event touched while it was being read is left dirty: what was read may be older."""
        for member, (unread, status) in results.items():
            if member not in self.dirty and member in self.members:
                self.record(member, unread, status, seq)

    def record(self, member: str, unread: int, status: dict[str, Any], seq: int) -> None:
        self.reads += 1
        was_behind = not self._current(member)
        self.seen[member] = max(self.seen.get(member, 0), seq)
        if was_behind and self._current(member):
            self.behind = max(0, self.behind - 1)
        if unread:
            self.direct.add(member)
        else:
            self.direct.discard(member)
        self.status[member] = status
        word = status.get("status", "")
        (self.unsettled.discard if word in SETTLED else self.unsettled.add)(member)
        (self.failed.add if word in FAILED else self.failed.discard)(member)

    @staticmethod
    def _unread(store: Any, team: str, member: str) -> int:
        inbox = store.inbox(team, member)
        if member != LEAD:
            return inbox.unread_count()
        return sum(1 for m in inbox.undelivered() if m.kind != IDLE_NOTICE)

    # --- the verdict ------------------------------------------------------------------------

    def verdict(self, lead_busy: bool) -> tuple[bool, str, str | None]:
        """``(done, why, failed member)`` from the counters alone: O(1) unless something is
        wrong (then the members named in ``why`` are found)."""
        if self.direct:
            name = min(self.direct)
            return False, f"{name} has unread message(s)", None
        if self.behind:
            return False, f"{self.behind} member(s) have unread broadcasts", None
        if lead_busy:
            return False, "the lead is working", None
        for name in self.failed:
            if name != LEAD:
                return False, "failed", name
        waiting = (self.unsettled & self.running) - {LEAD}
        if waiting:
            name = min(waiting)
            return False, f"{name} is {self.status.get(name, {}).get('status') or 'starting'}", \
                None
        return True, "done", None
