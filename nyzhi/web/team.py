"""``nyz serve --team NAME``: a running team, shown and messaged from its store, read only.

A team's lead runs in its own process (``nyz team start``) and holds the team's lease; a
second lead is refused, and the served session must not become one. The session protocol's
``RunningTeam`` (``nyzhi.core.protocol.team_view``) reads what a viewer needs from the team
store (the members, their status files, the lead's lease, the task board, the detached
teammates' logs) as events, and delivers a message to a member's inbox, as ``nyz team send``
does. This module polls it and records, in the session's numbered log, each member whose
status changed and each logged event, so every viewer's tree follows and a reload replays it.

The lead's own events and those of teammates attached to it stay with the lead (teammates
reach it through pipes, which no other process can read), so they are not shown here. A
detached teammate (``--detach``) writes its events to ``logs/<member>.jsonl`` instead; those
are followed from where the file ended when this server first looked.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.team_view import RunningTeam, TeamViewError
from nyzhi.web import protocol as p

log = logging.getLogger(__name__)

# Seconds between two reads of the store: status files change without a notification.
POLL = 0.5


class TeamView:
    """The tree and the inboxes of a running team, for the sessions of one ``nyz serve``."""

    def __init__(self, running: RunningTeam) -> None:
        self.running = running
        self.team = running.team
        self.shown: dict[str, tuple[str, str]] = {}

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
                snapshot, logged = await self.running.poll()
            except TeamViewError as exc:  # the team deleted or its files mid-write
                log.debug("team %s: cannot read the store", self.team, exc_info=exc)
                snapshot, logged = [], []
            for event in [*self.changed(snapshot), *logged]:
                record(ev.redact_event(redactor, event))
            if not started:
                started = True
                task_status.started()
            await trio.sleep(POLL)

    def owns(self, agent: str) -> bool:
        return self.running.owns(agent)

    async def send(self, agent: str, text: str) -> ev.TeamMessage:
        """Put ``text`` into the inbox of the member at ``agent``, as ``nyz team send``; a
        refusal is the client's error (``ProtocolError``), in the protocol's words."""
        try:
            return await self.running.send(agent, text)
        except TeamViewError as exc:
            raise p.ProtocolError(str(exc)) from None
