"""``nyz serve --team``'s follower (``nyzhi.web.team``) on the protocol's team view: the first
snapshot is recorded before it starts, a team whose files vanish is polled again rather than
ending the session, and a refused message is the client's ``ProtocolError``."""

from __future__ import annotations

import pytest
import trio

from nyzhi.config.secrets import Redactor
from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.team_view import RunningTeam
from nyzhi.team_files.store import Member, TeamConfig, TeamStore
from nyzhi.web import protocol as p
from nyzhi.web import team as web_team
from nyzhi.web.team import TeamView


class _Counted(RunningTeam):
    """Says each finished poll (raised or not), so the test waits on it, not on the clock."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.polls = 0
        self.polled = trio.Event()

    async def poll(self):
        try:
            return await super().poll()
        finally:
            self.polls += 1
            self.polled.set()
            self.polled = trio.Event()


async def test_follow_records_the_first_snapshot_and_outlives_a_vanished_team(home, monkeypatch):
    monkeypatch.setattr(web_team, "POLL", 0.01)
    store = TeamStore()
    store.create(TeamConfig("crew", members=[Member("alice")]))
    running = _Counted("crew", store)
    recorded: list[ev.Event] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(TeamView(running).follow, recorded.append, Redactor())
        assert [e.agent for e in recorded] == ["/team/crew/lead", "/team/crew/alice"]
        store.delete("crew")
        seen = running.polls
        while running.polls < seen + 2:  # a poll after the files went, and the next one
            await running.polled.wait()
        nursery.cancel_scope.cancel()
    assert len(recorded) == 2


async def test_a_refused_message_is_the_client_s_protocol_error(home):
    store = TeamStore()
    store.create(TeamConfig("crew", members=[Member("alice")]))
    view = TeamView(RunningTeam("crew", store))
    assert view.owns("/team/crew/alice") and not view.owns("/agents/main")
    for bad in ("/team/crew/all", "/team/crew/nobody"):
        with pytest.raises(p.ProtocolError):
            await view.send(bad, "x")
    sent = await view.send("/team/crew/alice", "hi")
    assert (sent.agent, sent.to, sent.text) == ("/team/crew/alice", "alice", "hi")
