"""A running team as a viewer in another process sees it: read from the team's files, never
joined (the session protocol's way to a team ``nyz serve --team`` shows and messages).

A team's lead runs in its own process (``nyz team start``) and holds the team's lease; a
viewer must not become a second lead, so it only reads what the lead and its teammates keep
current in the team store: the members (``config.json``), each member's status file
(``members/<member>.json``), the lead's lease (who runs it, asked without taking it), the task
board, and the event logs of detached teammates (``logs/<member>.jsonl``). ``RunningTeam``
turns those into the protocol's events: one ``agent_status`` per member, at the paths the
lead's own tree uses (``/team/NAME/<member>``), and the logged events re-tagged with the
member's path as the lead re-tags them. A message goes into a member's inbox, as ``nyz team
send`` puts it there (sender ``user``); the member's driver wakes on the inbox's FIFO.

Every refusal (no such team, a broken file, an unknown member, a file that cannot be read) is
a ``TeamViewError`` whose text is the one line a person is shown, so a front end catches the
protocol's error and not the team files' own.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from nyzhi.core import events as ev
from nyzhi.core.runtime.teams.process import DROPPED, retag
from nyzhi.core.runtime.teams.report import member_status
from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.inbox import deliver
from nyzhi.team_files.lead_lease import lead_pid
from nyzhi.team_files.names import LEAD
from nyzhi.team_files.store import TeamStore
from nyzhi.tools.offload import run_blocking

# A status file's word -> an ``AgentState`` (``nyz team stop`` writes "stopped").
_STATES = {"stopped": ev.AgentState.SHUTDOWN.value}


class TeamViewError(ValueError):
    """A team cannot be shown or messaged; ``str()`` is the one line to show, naming the team,
    file or member and what would work."""


class RunningTeam:
    """Team ``team`` read from its files in ``store`` (the user's team store by default):
    its members' statuses, its lead, its detached members' events, and its inboxes."""

    def __init__(self, team: str, store: TeamStore | None = None) -> None:
        self.team = team
        self.store = store or TeamStore()
        self.root = f"{ev.TEAM_ROOT}/{team}/"
        self.offsets: dict[str, int] = {}  # a detached member's log -> bytes already read
        self.first = True

    def check(self) -> None:
        """A ``TeamViewError`` (one line) unless the team exists and its config reads."""
        if not self.store.exists(self.team):
            raise TeamViewError(f"no team '{self.team}' in {self.store.root}; `nyz team list` "
                                "shows the teams, `nyz team start NAME` starts one")
        try:
            self.store.load(self.team)  # a broken config.json says so here, naming the file
        except TeamError as exc:
            raise TeamViewError(str(exc)) from None

    def lead_pid(self) -> int | None:
        """The pid of the team's running lead (0 when it cannot be told), None when none runs;
        asked without taking the lease (see ``nyzhi.team_files.lead_lease.lead_pid``)."""
        return lead_pid(self.store.team_dir(self.team))

    def snapshot(self) -> list[ev.AgentStatus]:
        """One ``agent_status`` per member, lead first, from the store as it is now."""
        config = self.store.load(self.team)
        statuses = self.store.statuses(self.team)
        pid = self.lead_pid()
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

    async def poll(self) -> tuple[list[ev.AgentStatus], list[ev.Event]]:
        """``snapshot()`` and ``logged()`` off the event loop (they read files). A team deleted
        or a file caught mid-write is a ``TeamViewError``: a poller tries again later."""
        try:
            return await run_blocking(self.snapshot), await run_blocking(self.logged)
        except (OSError, TeamError) as exc:
            raise TeamViewError(f"team {self.team}: cannot read the store: {exc}") from exc

    def owns(self, agent: str) -> bool:
        """Whether ``agent`` is a path in this team's tree (a member or under one)."""
        return agent.startswith(self.root)

    def member_of(self, agent: str) -> str:
        """The member a path names (``/team/NAME/alice``); its subagents have no inbox, and
        ``all`` is no node of the tree (a broadcast is the lead's to send)."""
        member = agent[len(self.root):] if self.owns(agent) else ""
        if not member or "/" in member or member == "all":
            raise TeamViewError(f"{agent}: only a team member (/team/{self.team}/NAME) "
                                "has an inbox")
        return member

    async def send(self, agent: str, text: str) -> ev.TeamMessage:
        """Put ``text`` from ``user`` into the inbox of the member at path ``agent``, as ``nyz
        team send`` does; the ``team_message`` event says what was sent."""
        member = self.member_of(agent)
        try:
            await run_blocking(deliver, self.store, self.team, "user", member, text)
        except TeamError as exc:
            raise TeamViewError(str(exc)) from None
        return ev.TeamMessage(agent=agent, team=self.team, sender="user", to=member, text=text)


__all__ = ["RunningTeam", "TeamViewError"]
