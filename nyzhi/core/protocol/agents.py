"""The agent tree as the front ends show it: one row per agent, reduced from events alone.

The runtime's own tree (``nyzhi.core.runtime.placement.AgentTree``) places agents and holds their
budgets; what a person sees of it is this view, built from the event vocabulary
(``nyzhi.core.events``) by one reducer, ``AgentTreeView.apply``. The console's panel (F2) and
the web console's tree (``state.agents``) both draw from it, so one event stream shows the
same agents in both; and because it reads nothing but events, a recorded session (its log, a
web viewer's backlog) reduces to the same tree as the live run did.

What a row says, by event:

* ``agent_status``: its status, detail, steps, tokens and cost (the agent's own, as the
  runtime counted them);
* ``usage``: its tokens and cost go up by that request's (so they are current between two
  statuses);
* ``turn_start`` / ``turn_complete``: running, then idle, for an agent that is idle, running
  or completed (a turn's events never revive a shut-down or errored agent);
* ``tool_start``, ``turn_complete``, ``agent_status``: ``activity``, what it does or did last
  (the tool it runs, how its turn ended, its status detail).

Any event of an agent path (``/agents/…``, ``/team/…``) gives that agent a row.
"""

from __future__ import annotations

from collections.abc import Iterable

from nyzhi import records
from nyzhi.core import events as ev

_TURN_STATES = (ev.AgentState.IDLE, ev.AgentState.RUNNING, ev.AgentState.COMPLETED)
ACTIVITY_LIMIT = 20  # characters of a status detail kept as the activity


@records.define
class AgentRow:
    """One agent of the tree, as the front ends show it."""

    path: str
    status: str = ev.AgentState.IDLE
    detail: str = ""  # the last agent_status's detail
    step: int = 0  # steps taken, as of the last agent_status
    tokens: int = 0  # its own: the last agent_status's count plus the usage since
    cost_usd: float = 0.0
    activity: str = ""  # what it does or did last: a tool, a stop reason, a status detail

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def depth(self) -> int:
        """0 for a root (the main agent, a teammate), 1 for its children, …"""
        return self.path[len(ev.root_of(self.path)):].count("/")


class AgentTreeView:
    """The rows by path (the main agent's always there), changed only by ``apply``,
    ``row`` (a row for an agent shown before any of its events) and ``restore``."""

    def __init__(self, events: Iterable[ev.Event] = ()) -> None:
        self.rows: dict[str, AgentRow] = {}
        self.clear()
        for event in events:
            self.apply(event)

    def clear(self) -> None:
        self.rows.clear()
        self.rows[ev.MAIN_AGENT] = AgentRow(ev.MAIN_AGENT)

    def row(self, path: str) -> AgentRow:
        found = self.rows.get(path)
        if found is None:
            found = self.rows[path] = AgentRow(path)
        return found

    def sorted(self) -> list[AgentRow]:
        return [self.rows[path] for path in sorted(self.rows)]

    def running(self) -> int:
        return sum(1 for r in self.rows.values() if r.status == ev.AgentState.RUNNING)

    def cost_usd(self) -> float:
        return sum(r.cost_usd for r in self.rows.values())

    def restore(self, path: str, status: str, activity: str) -> None:
        """A resumed session's agent as the runtime restored it (``Session.replay``)."""
        row = self.row(path)
        row.status, row.activity = status, activity

    def apply(self, event: ev.Event) -> bool:
        """Reduce one event; whether the tree changed (a redraw is due)."""
        path = event.agent
        if not path.startswith(("/agents/", ev.TEAM_ROOT + "/")):
            return False
        added = path not in self.rows
        row = self.row(path)
        if isinstance(event, ev.AgentStatus):
            row.status, row.detail, row.step = event.status, event.detail, event.step
            row.tokens, row.cost_usd = event.tokens, event.cost_usd
            row.activity = event.detail[:ACTIVITY_LIMIT]
        elif isinstance(event, ev.Usage):
            row.tokens += event.input_tokens + event.output_tokens
            row.cost_usd += event.cost_usd
        elif isinstance(event, ev.TurnStart):
            if row.status in _TURN_STATES:
                row.status = ev.AgentState.RUNNING
        elif isinstance(event, ev.TurnComplete):
            if row.status in _TURN_STATES:
                row.status = ev.AgentState.IDLE
            row.activity = event.stop_reason
        elif isinstance(event, ev.ToolStart):
            row.activity = event.name
        else:
            return added
        return True
