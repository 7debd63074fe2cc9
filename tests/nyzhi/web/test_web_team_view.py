"""``nyz serve --team``'s tree reads each member's status file the way ``nyz team status``
does: a member whose process is gone is not shown as running."""

from __future__ import annotations

import subprocess
import sys

from nyzhi.core import events as ev
from nyzhi.team_files.store import Member, TeamConfig, TeamStore
from nyzhi.web.team import TeamView


def test_a_member_whose_process_died_is_not_shown_running(home):
    store = TeamStore()
    store.create(TeamConfig("crew", members=[Member("alice"), Member("bob"), Member("carol")]))
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer runs
    store.set_status("crew", "alice", status="running", pid=gone.pid)
    # the control: a live process that looks like a member (``alive`` wants a nyz process)
    member = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", "nyzhi"],
                              stdin=subprocess.PIPE)
    try:
        store.set_status("crew", "bob", status="running", pid=member.pid)
        store.set_status("crew", "carol", status="idle", pid=gone.pid)
        shown = {e.agent.rsplit("/", 1)[-1]: e.status
                 for e in TeamView("crew", store).snapshot()}
    finally:
        member.stdin.close()
        member.wait()
    assert shown["alice"] == ev.AgentState.ERRORED
    assert shown["bob"] == ev.AgentState.RUNNING
    assert shown["carol"] == ev.AgentState.SHUTDOWN
