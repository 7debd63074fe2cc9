"""A team of 100 in-process members, on real files and the fake LLM: one broadcast is one
line in the shared log (no inbox copies) and the whole round costs O(n) team-file writes; the
quiescence check re-reads O(1) members per event, not every member; the lead's next model call
gets the hundred idle notifications as one summary."""

from __future__ import annotations

import trio

from nyzhi.core import events as ev
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.team_files import locking
from nyzhi.team_files.inbox import deliver
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply
from nyzhi.testing.runtime import run_turn

N = 100


async def test_a_hundred_members_and_a_broadcast(workspace, configure, home):
    script = PerAgent({
        "WORK": [reply("done: nothing left to do")] * N,
        "LEAD-NEXT": [reply("read the summary")],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True,
                                               team="big")) as rt:
            teams = rt.teams
            for i in range(N):
                await teams.spawn_teammate("big", f"m{i}", "", "worker", None, ev.MAIN_AGENT)
            with trio.fail_after(120):
                await teams.wait_quiet("big")  # everyone idle at start (nothing done yet)
            ledger = teams.ledgers["big"]
            reads0, writes0 = ledger.reads, locking.COUNTS["writes"]
            files0 = locking.COUNTS["reads"]

            sent = await trio.to_thread.run_sync(
                deliver, teams.store, "big", "lead", "all", "WORK: report when done")
            assert len(sent) == 1
            await teams.messages_sent("big", sent)
            with trio.fail_after(300):
                await teams.wait_quiet("big")

            writes = locking.COUNTS["writes"] - writes0
            reads = ledger.reads - reads0
            files = locking.COUNTS["reads"] - files0
            # per member: running, its cursor, its idle notice to the lead, idle; the one
            # broadcast line. A copy per inbox is the same order for one broadcast; what must
            # not happen is anything per member per event.
            assert writes <= 6 * N, writes
            # the check after each of ~4 events per member re-read only the member it named
            # (+ one full confirmation of N at the end), not N members per event
            assert reads <= 8 * N, reads
            # every team file read in the process, the members' own included: O(n) in all
            # (a full check of every inbox and status per event would be ~800 N)
            assert files <= 60 * N, files
            store = teams.store
            assert store.broadcasts("big").path.read_bytes().count(b"\n") == 1
            assert not (store.team_dir("big") / "inboxes" / "m0.json").exists()
            assert len(script.seen["WORK"]) == N

            handle, _ = await run_turn(rt, "LEAD-NEXT: what did the team do?")
            assert handle.outcome.text == "read the summary"
    request = script.seen["LEAD-NEXT"][0]
    users = [text for role, text in request.transcript() if role == "user"]
    summaries = [t for t in users if "[idle notifications]" in t]
    assert len(summaries) == 1  # one summary for the model call, not a message per teammate
    summary = summaries[0]
    head = next(line for line in summary.splitlines() if line.startswith("[idle notif"))
    assert head.startswith(f"[idle notifications] {N} teammates idle: ")
    assert set(head.split(": ", 1)[1].split(", ")) == {f"m{i}" for i in range(N)}
    assert "(idle notification)" not in summary  # no per-notice header
    assert summary.count("> m") == N  # one quoted line per teammate
    assert len(summary) < N * 80  # short lines, not whole answers


def _runtime_for(home_env, n: int):
    """A lead's ``TeamRuntime`` over a real team of ``n`` members, all idle but m0 (still
    running, so the team is never done and every check below is an ordinary one)."""
    from nyzhi.core.runtime.teams.control import Running, TeamRuntime
    from nyzhi.team_files.store import Member, TeamConfig, TeamStore

    store = TeamStore(home_env)
    team = f"t{n}"
    names = [f"m{i}" for i in range(n)]
    store.create(TeamConfig(team, members=[Member(m) for m in names]))
    for m in names:
        store.set_status(team, m, status="running" if m == "m0" else "idle")

    async def emit(event):
        await teams.on_event(event)

    teams = TeamRuntime(system=None, factory=None, tree=None, emit=emit, hooks=None,
                        session_id="s", env=home_env)
    for m in names:
        path = ev.teammate_path(team, m)
        teams.members[path] = Running(team, m, path, "in-process")
    return teams, store, team


async def _event_cost(teams, store, team, member: str) -> int:
    """Team-file reads for one round: a message to ``member`` and the check after it, the
    member reading it and going idle and the check after that."""
    before = locking.COUNTS["reads"]
    sent = await trio.to_thread.run_sync(deliver, store, team, "m0", member, "ping")
    await teams.messages_sent(team, sent)
    done, why = await teams.quiet(team)
    assert not done and why.startswith(member)
    await trio.to_thread.run_sync(store.inbox(team, member).read_unread)
    await teams.on_event(ev.AgentStatus(agent=ev.teammate_path(team, member), status="idle"))
    done, why = await teams.quiet(team)
    assert not done and why == "m0 is running"
    return locking.COUNTS["reads"] - before


async def test_a_team_event_costs_the_same_at_10_and_100_members(tmp_path):
    """The quiescence check after an event re-reads the member it names, not the team."""
    costs = {}
    for n in (10, 100):
        teams, store, team = _runtime_for({"XDG_DATA_HOME": str(tmp_path / f"d{n}")}, n)
        await teams.quiet(team)  # the first look reads everyone once
        costs[n] = [await _event_cost(teams, store, team, f"m{i}") for i in (3, 5, 7)]
    assert costs[10] == costs[100], costs  # flat
    assert max(costs[100]) <= 16, costs  # a handful of files, whatever the team's size
