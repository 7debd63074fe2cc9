"""A member's messages survive a crash of its agent: messages read for a turn that never
started are delivered again to the restarted agent, once, before newer ones; and one member
driver failing on an event does not keep the event from the others."""

from __future__ import annotations

import trio

from nyzhi.core import events as ev
from nyzhi.core.events import LISTENER_FAILED
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.team_files.inbox import deliver
from nyzhi.team_files.store import TeamStore
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call

ALICE = "/team/crew/alice"


class Crash:
    """A message the agent actor does not understand: told (not asked), it crashes the actor,
    as any bug in it would; its supervisor restarts it."""


async def _until(predicate, events):
    async for event in events:
        if predicate(event):
            return event
    raise AssertionError("the event stream ended")


def _crash_before_first_turn(rt, path):
    """A bus listener that crashes the agent at ``path`` once, at the last moment before its
    first turn starts: its ``agent_status running``, published by the agent's own turn task
    after it took the turn from its queue and before the turn's ``turn_start``. The listener
    runs inline in that task, so holding it there until the crash ends the incarnation (which
    cancels it) makes sure the turn never starts."""
    state = {"crashed": False}

    async def listener(event):
        if state["crashed"] or event.agent != path or not isinstance(event, ev.AgentStatus) \
                or event.status != ev.AgentState.RUNNING:
            return
        state["crashed"] = True
        rt.system.lookup(path).tell_nowait(Crash())
        await trio.sleep_forever()  # cancelled with the crashed incarnation's tasks

    rt.add_listener(listener, name="crash alice")
    return state


async def test_a_teammate_crashed_before_its_turn_gets_its_messages_again(workspace, configure,
                                                                        home):
    script = PerAgent({
        "ALICE-JOB": [
            reply(tool_calls=[tool_call("send_team_message", {
                "to": "lead", "message": "ALICE-REPORT: the job is done"})]),
            reply("reported"),
        ],
        "ALICE-REPORT": [reply("thanks, alice")],  # the lead, woken by the report
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True,
                                               team="crew")) as rt:
            crash = _crash_before_first_turn(rt, ALICE)
            async with rt.subscribe() as events:
                await rt.teams.spawn_teammate("crew", "alice", "ALICE-JOB: do it and report",
                                              "worker", None, ev.MAIN_AGENT)
                with trio.fail_after(30):
                    done = await _until(lambda e: isinstance(e, ev.TurnComplete)
                                        and e.agent == ev.MAIN_AGENT, events)
                    await rt.teams.wait_quiet("crew")
            assert crash["crashed"]
            assert rt.system.lookup(ALICE).restarts == 1  # the crash was real
    assert done.text == "thanks, alice"
    # alice worked on the message once, in one turn of the restarted agent
    assert len(script.seen["ALICE-JOB"]) == 2
    first = script.seen["ALICE-JOB"][0].transcript()
    jobs = [text for role, text in first if role == "user" and "ALICE-JOB" in text]
    assert jobs == ["[message from lead]\n> ALICE-JOB: do it and report"]
    woken = script.seen["ALICE-REPORT"][0].transcript()
    assert any(role == "user" and "[message from alice]\n> ALICE-REPORT: the job is done" in text
               for role, text in woken)
    store = TeamStore()
    assert store.inbox("crew", "alice").unread_count() == 0
    assert all(m.read for m in store.inbox("crew", "alice").messages())


async def test_messages_taken_by_a_killed_process_reach_the_next_one_first(workspace, configure,
                                                                           home):
    """What a ``kill -9`` between taking messages and starting their turn leaves on disk (the
    batch taken, no turn): the member's next driver, in a new process, starts its first turn
    with that batch, before the message sent since, in one turn."""
    store = TeamStore()
    script = PerAgent({"OLD-JOB": [reply("did both")]})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True,
                                               team="crew")) as rt:
            await rt.teams.spawn_teammate("crew", "alice", "", "worker", None, ev.MAIN_AGENT)
            with trio.fail_after(30):
                await rt.teams.wait_quiet("crew")
        # the killed process: it took the lead's message, and its turn never started
        inbox = store.inbox("crew", "alice")
        deliver(store, "crew", "lead", "alice", "OLD-JOB: the first thing")
        assert [m.text for m in inbox.take()] == ["OLD-JOB: the first thing"]
        deliver(store, "crew", "lead", "alice", "NEW-JOB: the second thing")
        assert inbox.unread_count() == 2  # the taken one is not delivered yet
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True,
                                               team="crew")) as rt:
            await rt.teams.spawn_teammate("crew", "alice", "", "worker", None, ev.MAIN_AGENT)
            with trio.fail_after(30):
                await rt.teams.wait_quiet("crew")
    assert len(script.seen["OLD-JOB"]) == 1
    prompt = script.seen["OLD-JOB"][0].first_user_text()
    assert prompt == ("[message from lead]\n> OLD-JOB: the first thing\n\n"
                      "[message from lead]\n> NEW-JOB: the second thing")
    assert inbox.unread_count() == 0 and inbox.taken() == []


async def test_a_failing_member_driver_does_not_starve_the_others(workspace, configure, home):
    """``TeamRuntime.on_event`` hands each event to every driver: one that raises (here a
    broken one, put in front) neither keeps it from the drivers after it (ben's own turn, which
    his idle notification reports) nor goes unreported (a listener failure naming amy)."""
    script = PerAgent({"BEN-JOB": [reply("BEN-DONE")]})

    async def broken(event):
        raise RuntimeError("amy's driver is broken")

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True,
                                               team="crew")) as rt:
            teams = rt.teams
            await teams.spawn_teammate("crew", "amy", "", "worker", None, ev.MAIN_AGENT)
            await teams.spawn_teammate("crew", "ben", "", "worker", None, ev.MAIN_AGENT)
            drivers = [r.driver for r in teams.members.values()]
            assert [d.member for d in drivers] == ["lead", "amy", "ben"]  # amy before ben
            drivers[1].on_event = broken
            async with rt.subscribe() as events:
                await teams.send_to("/team/crew/ben", "BEN-JOB: answer")
                with trio.fail_after(30):
                    report = await _until(lambda e: isinstance(e, ev.Error)
                                          and e.kind == LISTENER_FAILED, events)
                    await teams.wait_quiet("crew")
    notices = [m for m in TeamStore().inbox("crew", "lead").messages()
               if m.kind == "idle_notification"]
    assert [m.sender for m in notices] == ["ben"]
    assert "BEN-DONE" in notices[0].text
    assert report.message == ("teams: team crew, member amy: RuntimeError: "
                              "amy's driver is broken")


async def test_a_restarted_member_process_reads_the_taken_messages_first(workspace, configure,
                                                                         home):
    """A member process killed after taking messages and before their turn started, and
    restarted mid-turn (``nyz team member``, its session resumed): its first turn is the
    "you were restarted" prompt, and the messages reach that turn's first model call, the
    taken ones before the one sent since, in one user message and only there."""
    from nyzhi.core.runtime.teams.membership import RESTARTED
    from nyzhi.team_files.store import Member, TeamConfig

    store = TeamStore()
    store.create(TeamConfig("crew", members=[Member("lead"), Member("alice")]))
    subscribed = trio.Event()

    async def once_subscribed(_request):  # the turn cannot end before the test listens
        await subscribed.wait()
        return reply("carrying on")

    script = PerAgent({"Your process was restarted": [once_subscribed]})
    options = {"cwd": workspace, "trust": "full", "team": "crew", "member": "alice"}
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(**options)) as rt:  # alice's first process
            session = rt.session_id
        # what its kill left: running, the lead's message taken, its turn never started
        store.set_status("crew", "alice", status=ev.AgentState.RUNNING)
        inbox = store.inbox("crew", "alice")
        deliver(store, "crew", "lead", "alice", "OLD-JOB: first")
        assert [m.text for m in inbox.take()] == ["OLD-JOB: first"]
        deliver(store, "crew", "lead", "alice", "NEW-JOB: second")
        async with open_runtime(RuntimeOptions(**options, session=session)) as rt:
            async with rt.subscribe() as events:
                subscribed.set()
                with trio.fail_after(30):
                    await _until(lambda e: isinstance(e, ev.AgentStatus)
                                 and e.detail == "waiting for messages", events)
    [request] = script.seen["Your process was restarted"]  # one model call: one turn
    users = [text for role, text in request.transcript() if role == "user"]
    assert users == [RESTARTED, "[message from lead]\n> OLD-JOB: first\n\n"
                                "[message from lead]\n> NEW-JOB: second"]
    assert inbox.taken() == [] and inbox.unread_count() == 0
