"""``nyz serve --team``'s tree reads each member's status file the way ``nyz team status``
does: a member whose process is gone is not shown as running."""

from __future__ import annotations

import os
import subprocess

from nyzhi.core import events as ev
from nyzhi.teams.store import Member, TeamConfig, TeamStore
from nyzhi.web.team import TeamView


def test_a_member_whose_process_died_is_not_shown_running(home):
    store = TeamStore()
    store.create(TeamConfig("crew", members=[Member("alice"), Member("bob"), Member("carol")]))
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer runs
    store.set_status("crew", "alice", status="running", pid=gone.pid)
    store.set_status("crew", "bob", status="running", pid=os.getpid())  # the control: alive
    store.set_status("crew", "carol", status="idle", pid=gone.pid)
    shown = {e.agent.rsplit("/", 1)[-1]: e.status for e in TeamView("crew", store).snapshot()}
    assert shown["alice"] == ev.AgentState.ERRORED
    assert shown["bob"] == ev.AgentState.RUNNING
    assert shown["carol"] == ev.AgentState.SHUTDOWN
