"""A team's model-call slots shared by processes: a first-come-first-served ticket queue.

A ``process`` team's members are separate programs, so the team-wide limit on model calls in
flight (``[team] max_concurrent_model_calls``) cannot live in one process's memory. It lives in
``teams/<team>/model_calls.json``, changed only under ``model_calls.lock``::

    {"limit": 16, "next": 42, "queue": [[41, pid], ...], "active": [[39, pid], ...]}

A caller takes the next ticket (``enqueue``), which joins the back of ``queue``; whenever the
file is changed, tickets move from the front of ``queue`` to ``active`` while fewer than
``limit`` are active, so slots are granted strictly in ticket order (fair across members: a
member that calls often waits behind one that has waited longer). ``release`` frees the slot.

Why a file and not the lead granting over the member pipe: a ``--detach`` member has no pipe,
and a file keeps the limit working with no lead at all (members outliving it), with the same
lock-and-atomic-write discipline as every other team file. Crash safety: every entry carries its
holder's pid, and entries of processes that no longer exist are dropped whenever the file is
read under the lock, so a ``kill -9`` never keeps a slot. ``limit`` is written by the lead
(``set_limit``): a member follows the lead's number, not its own config's.

Blocking calls (trio callers run them in a worker thread); waiting is the caller's polling of
``poll``, since a ``flock`` cannot wake a trio task (as ``nyzhi.core.runtime.teams.leases``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.locking import file_lock, read_json, write_json

SLOTS_FILE = "model_calls.json"


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


class SharedSlots:
    """The slot file of one team directory. Blocking calls."""

    def __init__(self, team_dir: Path) -> None:
        self.path = Path(team_dir) / SLOTS_FILE
        self.lock_path = Path(team_dir) / "model_calls.lock"

    def _load(self) -> dict[str, Any]:
        data = read_json(self.path, None)
        if data is None:
            return {"limit": 0, "next": 1, "queue": [], "active": []}
        if not (isinstance(data, dict) and isinstance(data.get("queue"), list)
                and isinstance(data.get("active"), list)):
            raise TeamError(f"{self.path}: expected the model-call slots object; delete the "
                            "file to reset it")
        return data

    @staticmethod
    def _settle(state: dict[str, Any]) -> None:
        """Drop dead holders and waiters, then grant slots in ticket order."""
        for key in ("queue", "active"):
            state[key] = [e for e in state[key]
                          if isinstance(e, list) and len(e) == 2 and _alive(e[1])]
        limit = state.get("limit") or 0
        while state["queue"] and (limit <= 0 or len(state["active"]) < limit):
            state["active"].append(state["queue"].pop(0))

    def _change(self, fn: Any) -> Any:
        with file_lock(self.lock_path):
            state = self._load()
            before = repr(state)
            result = fn(state)
            self._settle(state)
            if repr(state) != before:
                write_json(self.path, state)
            return result, state

    def set_limit(self, limit: int) -> None:
        """The team's limit (0: none); the lead writes it when it starts."""
        def put(state: dict[str, Any]) -> None:
            state["limit"] = max(0, int(limit))
        self._change(put)

    def limit(self) -> int:
        value = self._load().get("limit")
        return value if isinstance(value, int) and value > 0 else 0

    def enqueue(self, pid: int) -> tuple[int, bool]:
        """A new ticket at the back of the queue: ``(ticket, granted already)``."""
        def take(state: dict[str, Any]) -> int:
            ticket = state.get("next") if isinstance(state.get("next"), int) else 1
            state["next"] = ticket + 1
            state["queue"].append([ticket, pid])
            return ticket
        ticket, state = self._change(take)
        return ticket, any(e[0] == ticket for e in state["active"])

    def poll(self, ticket: int, pid: int) -> bool:
        """Whether ``ticket`` holds a slot now. A ticket found in neither list (the file was
        deleted) joins the back of the queue again."""
        def look(state: dict[str, Any]) -> None:
            known = any(e[0] == ticket for e in state["queue"] + state["active"])
            if not known:
                state["queue"].append([ticket, pid])
                state["next"] = max(state.get("next") or 1, ticket + 1)
        _none, state = self._change(look)
        return any(e[0] == ticket for e in state["active"])

    def release(self, ticket: int) -> None:
        """Give the slot back (or leave the queue); the next ticket is granted."""
        def drop(state: dict[str, Any]) -> None:
            for key in ("queue", "active"):
                state[key] = [e for e in state[key] if e[0] != ticket]
        self._change(drop)

    def active(self) -> int:
        """How many slots are held now (dead holders not counted)."""
        state = self._load()
        return sum(1 for e in state["active"] if isinstance(e, list) and len(e) == 2
                   and _alive(e[1]))
