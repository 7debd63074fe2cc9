"""The session protocol's view of a running team (``nyzhi.core.protocol.team_view``), what
``nyz serve --team`` shows and messages: its tree reads each member's status file the way
``nyz team status`` does, detached members' logs are followed, a message lands in the inbox,
and every refusal is the protocol's ``TeamViewError``, never the team files' own error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nyzhi.core import events as ev
from nyzhi.core.protocol.team_view import RunningTeam, TeamViewError
from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.store import Member, TeamConfig, TeamStore


def _crew(*names: str) -> TeamStore:
    store = TeamStore()
    store.create(TeamConfig("crew", members=[Member(n) for n in names]))
    return store


def test_a_member_whose_process_died_is_not_shown_running(home):
    store = _crew("alice", "bob", "carol")
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
                 for e in RunningTeam("crew", store).snapshot()}
    finally:
        member.stdin.close()
        member.wait()
    assert shown["alice"] == ev.AgentState.ERRORED
    assert shown["bob"] == ev.AgentState.RUNNING
    assert shown["carol"] == ev.AgentState.SHUTDOWN


def test_a_missing_or_broken_team_is_the_protocol_s_error_naming_it(home):
    with pytest.raises(TeamViewError, match="no team 'nosuch'.*nyz team list"):
        RunningTeam("nosuch").check()
    store = _crew("alice")
    RunningTeam("crew", store).check()  # the control: a sound team passes
    (store.team_dir("crew") / "config.json").write_text("{not json")
    with pytest.raises(TeamViewError, match="config.json") as caught:
        RunningTeam("crew", store).check()
    assert not isinstance(caught.value, TeamError)


async def test_a_message_lands_in_the_member_s_inbox_and_a_refusal_is_a_team_view_error(home):
    store = _crew("alice")
    team = RunningTeam("crew", store)
    sent = await team.send("/team/crew/alice", "hello")
    assert (sent.agent, sent.team, sent.sender, sent.to, sent.text) == \
        ("/team/crew/alice", "crew", "user", "alice", "hello")
    assert [(m.sender, m.text) for m in store.inbox("crew", "alice").messages()] == \
        [("user", "hello")]
    for bad in ("/team/crew/alice/sub", "/team/crew/all", "/team/crew/", "/agents/main",
                "/team/crew/../crew/alice"):
        with pytest.raises(TeamViewError, match="only a team member"):
            await team.send(bad, "x")
    with pytest.raises(TeamViewError) as caught:  # the store refuses: re-raised as ours
        await team.send("/team/crew/nobody", "x")
    assert not isinstance(caught.value, TeamError) and "nobody" in str(caught.value)
    assert len(store.inbox("crew", "alice").messages()) == 1


async def test_poll_follows_a_detached_member_s_log_from_its_end_and_retags_it(home):
    store = _crew("amy")
    logs = store.team_dir("crew") / "logs"
    logs.mkdir()
    log = logs / "amy.jsonl"
    before = json.dumps(ev.to_json(ev.TextDelta(agent=ev.MAIN_AGENT, text="old")))
    log.write_text(before + "\n")
    team = RunningTeam("crew", store)
    snapshot, logged = await team.poll()
    assert [e.agent for e in snapshot] == ["/team/crew/lead", "/team/crew/amy"]
    assert logged == []  # what the log held before the first look is not replayed
    new = json.dumps(ev.to_json(ev.TextDelta(agent=ev.MAIN_AGENT, text="new")))
    with log.open("a") as fh:
        fh.write(f"{new}\nnot an event\n{json.dumps({'type': 'result'})}\n{new[:9]}")
    _snapshot, logged = await team.poll()
    assert [(e.agent, e.text) for e in logged] == [("/team/crew/amy", "new")]


async def test_poll_of_a_deleted_team_is_a_team_view_error(home):
    store = _crew("amy")
    team = RunningTeam("crew", store)
    await team.poll()
    store.delete("crew")
    with pytest.raises(TeamViewError, match="cannot read the store") as caught:
        await team.poll()
    assert not isinstance(caught.value, (TeamError, OSError))
