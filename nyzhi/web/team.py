"""``nyz serve --team NAME``: a running team, shown and messaged from its store, read only.

A team's lead runs in its own process (``nyz team start``) and holds the team's lease; a
second lead is refused, and the served session must not become one. Everything a viewer
needs is in the team store, which the lead and its teammates keep current: the members
(``config.json``), each member's status file (``members/<member>.json``), the lead's lease
(who runs it) and the task board. This module reads them, turns each member into an
``agent_status`` event for ``/team/NAME/<member>`` (the paths the lead's own tree uses), and
records a new one in the session's numbered log whenever a member's status changes, so
every viewer's tree follows and a reload replays it.

A message to a member goes into its inbox, as ``nyz team send`` puts it there (sender
``user``); the member's driver wakes on the inbox's FIFO. The lead's own events and those of
teammates attached to it stay with the lead (teammates reach it through pipes, which no
other process can read), so they are not shown here. A detached teammate (``--detach``)
writes its events to ``logs/<member>.jsonl`` instead; those are followed from where the file
ended when this server first looked, re-tagged with the member's path as the lead does.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import trio

from nyzhi.core.protocol import events as ev
from nyzhi.core.runtime.teams.process import DROPPED, retag
from nyzhi.core.runtime.teams.report import member_status
from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.lead_lease import lead_pid
from nyzhi.team_files.names import LEAD
from nyzhi.team_files.store import TeamStore
from nyzhi.tools.offload import run_blocking
from nyzhi.web import protocol as p

log = logging.getLogger(__name__)

# Seconds between two reads of the store: status files change without a notification.
POLL = 0.5
# A status file's word -> an ``AgentState`` (``nyz team stop`` writes "stopped").
_STATES = {"stopped": ev.AgentState.SHUTDOWN.value}


class TeamView:
    """The tree and the inboxes of team ``team``, for the sessions of one ``nyz serve``."""

    def __init__(self, team: str, store: TeamStore | None = None) -> None:
        self.team = team
        self.store = store or TeamStore()
        self.root = f"{ev.TEAM_ROOT}/{team}/"
        self.shown: dict[str, tuple[str, str]] = {}
        self.offsets: dict[str, int] = {}  # a detached member's log -> bytes already read
        self.first = True

    def check(self) -> None:
        """A ``TeamError`` (one line) unless the team exists in the store."""
        if not self.store.exists(self.team):
            raise TeamError(f"no team '{self.team}' in {self.store.root}; `nyz team list` "
                            "shows the teams, `nyz team start NAME` starts one")
        self.store.load(self.team)  # a broken config.json says so here, naming the file

    def snapshot(self) -> list[ev.AgentStatus]:
        """One ``agent_status`` per member, lead first, from the store as it is now."""
        config = self.store.load(self.team)
        statuses = self.store.statuses(self.team)
        pid = lead_pid(self.store.team_dir(self.team))
        tasks = Counter(t.status for t in self.store.board(self.team).list())
        board = ", ".join(f"{n} {status}" for status, n in sorted(tasks.items()))
        out = []
        for member in config.members:
            path = ev.teammate_path(self.team, member.name)
            if member.name == LEAD:
                running = pid is not None
                detail = (f"lead{f', pid {pid}' if pid else ''}" if running
                          else "no lead running")
                if board:
                    detail += f"; tasks: {board}"
                status = ev.AgentState.RUNNING.value if running else \
                    ev.AgentState.SHUTDOWN.value
            else:
                word = member_status(member, statuses)  # a dead pid: not running
                status = (ev.AgentState.ERRORED.value if word.startswith("dead")
                          else _STATES.get(word, word))
                if status not in ev.AGENT_STATUSES:
                    status = ev.AgentState.PENDING_INIT.value
                detail = f"{member.role}, {word or 'not started'}"
            out.append(ev.AgentStatus(agent=path, status=status, detail=detail))
        return out

    def logged(self) -> list[ev.Event]:
        """The events detached members wrote to their logs since the last call (on the first,
        none: each log is followed from its end then; a log that appears later, from 0)."""
        logs = self.store.team_dir(self.team) / "logs"
        first, self.first = self.first, False
        out: list[ev.Event] = []
        try:
            names = sorted(f.name for f in logs.iterdir() if f.suffix == ".jsonl")
        except FileNotFoundError:
            return out
        for name in names:
            path = logs / name
            size = path.stat().st_size
            start = self.offsets.get(name, size if first else 0)
            if size < start:  # the log was made again
                start = 0
            self.offsets[name] = start + self._read(path, start, size, Path(name).stem, out)
        return out

    def _read(self, path: Path, start: int, end: int, member: str, out: list[ev.Event]) -> int:
        """Complete lines of ``path`` from ``start`` as events into ``out``; bytes consumed."""
        if end <= start:
            return 0
        with path.open("rb") as fh:
            fh.seek(start)
            data = fh.read(end - start)
        used = data.rfind(b"\n") + 1  # a line still being written waits for the next call
        where = ev.teammate_path(self.team, member)
        for line in data[:used].splitlines():
            try:
                item = json.loads(line)
                if isinstance(item, dict) and item.get("type") not in DROPPED:
                    out.append(ev.from_json(retag(item, where)))
            except (ValueError, ev.EventDecodeError):
                continue  # not an event (a stray print): skipped, as the lead skips it
        return used

    def changed(self, snapshot: list[ev.AgentStatus]) -> list[ev.AgentStatus]:
        """The members of ``snapshot`` whose status or detail differ from the last shown."""
        out = []
        for event in snapshot:
            key = (event.status, event.detail)
            if self.shown.get(event.agent) != key:
                self.shown[event.agent] = key
                out.append(event)
        return out

    async def follow(self, record: Any, redactor: Any,
                     task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Record each change as an event, the first snapshot before ``started``."""
        started = False
        while True:
            try:
                snapshot = await run_blocking(self.snapshot)
                logged = await run_blocking(self.logged)
            except (OSError, TeamError) as exc:  # the team deleted or its files mid-write
                log.debug("team %s: cannot read the store", self.team, exc_info=exc)
                snapshot, logged = [], []
            for event in [*self.changed(snapshot), *logged]:
                record(ev.redact_event(redactor, event))
            if not started:
                started = True
                task_status.started()
            await trio.sleep(POLL)

    def owns(self, agent: str) -> bool:
        return agent.startswith(self.root)

    def member_of(self, agent: str) -> str:
        """The member a path names (``/team/NAME/alice``); its subagents have no inbox."""
        member = agent[len(self.root):]
        if not member or "/" in member or member == "all":  # "all" is no node of the tree
            raise p.ProtocolError(f"{agent}: only a team member (/team/{self.team}/NAME) "
                                  "has an inbox")
        return member

    async def send(self, agent: str, text: str) -> ev.TeamMessage:
        """Put ``text`` into the inbox of the member at ``agent``, as ``nyz team send``."""
        from nyzhi.team_files.inbox import deliver

        member = self.member_of(agent)
        try:
            await run_blocking(deliver, self.store, self.team, "user", member, text)
        except TeamError as exc:
            raise p.ProtocolError(str(exc)) from None
        return ev.TeamMessage(agent=agent, team=self.team, sender="user", to=member, text=text)
