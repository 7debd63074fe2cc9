"""Teams inside one runtime: a plain session's agent creates a team and spawns a teammate
(in-process, under /team/<team>/<member>); its report wakes the idle lead; two teammates
racing to claim one task leave exactly one owner; the teammate_idle hook can keep a teammate
working."""

from __future__ import annotations

import json

import trio

from nyzhi.core import events as ev
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.team_files.store import TeamStore
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call
from nyzhi.testing.runtime import run_turn


async def _until(rt, predicate, events):
    """Collect events until ``predicate(event)``."""
    async for event in events:
        if predicate(event):
            return event
    raise AssertionError("the event stream ended")


async def test_the_main_agent_creates_a_team_and_a_teammate_reports_back(workspace, configure,
                                                                          home):
    lead_idle = trio.Event()

    async def say_hi_once_the_lead_is_idle(_request):
        # alice's message must find the lead idle (else the lead's running turn reads it
        # before its next step, and nothing is left to wake it for)
        await lead_idle.wait()
        return reply(tool_calls=[tool_call("send_team_message", {"to": "lead", "message": "hi"})])

    script = PerAgent({
        "MAIN-TASK": [
            reply(tool_calls=[tool_call("team_create", {
                "name": "pair", "members": [{"name": "alice", "role": "worker"}]})]),
            reply(tool_calls=[tool_call("spawn_teammate", {
                "name": "alice", "message": "ALICE-JOB: say hi to the lead"})]),
            reply("alice is on it"),
            reply("alice said hi"),  # the lead's second turn, woken by alice
        ],
        "ALICE-JOB": [say_hi_once_the_lead_is_idle, reply("said hi")],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True)) as rt:
            async with rt.subscribe() as events:
                handle, _ = await run_turn(rt, "MAIN-TASK")
                assert handle.outcome.text == "alice is on it"
                lead_idle.set()
                with trio.fail_after(120):
                    done = await _until(rt, lambda e: isinstance(e, ev.TurnComplete)
                                        and e.agent == ev.MAIN_AGENT
                                        and e.text != "alice is on it", events)
            assert done.text == "alice said hi"
            assert rt.system.lookup("/team/pair/alice") is not None
            assert rt.main_agent.tooling.context.team_name == "pair"
    woken = script.seen["MAIN-TASK"][-1].transcript()
    # (alice's idle notification may have arrived by then too, in the same user message)
    assert any(role == "user" and text.startswith("[message from alice]\n> hi") for role, text in woken)
    alice_status = TeamStore().statuses("pair")["alice"]
    assert alice_status["status"] == "stopped"  # the runtime closed


async def test_two_teammates_racing_for_one_task_leave_one_owner(workspace, configure, home):
    def claim(request):  # each racer's first step claims; its second reports
        if request.tool_results():
            return reply("tried")
        return reply(tool_calls=[tool_call("task_update", {"task_id": "1",
                                                           "status": "in_progress"})])
    script = PerAgent({
        "LEAD": [
            reply(tool_calls=[tool_call("task_create", {"subject": "the one task"})]),
            reply(tool_calls=[tool_call("send_team_message", {
                "to": "all", "message": "RACE: claim task 1"})]),
            reply("go"),
        ],
        "RACE": [claim] * 4,  # amy's and ben's requests, in whatever order they come
    })
    store = TeamStore()
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True,
                                               team="race")) as rt:
            for name in ("amy", "ben"):
                await rt.teams.spawn_teammate("race", name, "", "worker", None, ev.MAIN_AGENT)
            await run_turn(rt, "LEAD")
            with trio.fail_after(120):
                await rt.teams.wait_quiet("race")
    task = store.board("race").get("1")
    assert task.owner in ("amy", "ben") and task.status == "in_progress"
    outputs = [json.dumps(r.transcript()) for r in script.seen["RACE"]]
    assert sum("is owned by" in o for o in outputs) == 1  # the loser was told who owns it


async def test_a_front_end_sends_to_a_teammate_by_path(workspace, configure, home):
    """``Runtime.send`` to ``/team/<team>/<member>`` (the console's agent tree) puts a message
    from ``user`` in the teammate's inbox, which wakes it."""
    script = PerAgent({"FROM-USER": [reply("hello user")]})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True,
                                               team="tree")) as rt:
            await rt.teams.spawn_teammate("tree", "amy", "", "worker", None, ev.MAIN_AGENT)
            async with rt.subscribe() as events:
                sent = await rt.send("/team/tree/amy", "FROM-USER: hi amy")
                assert sent["status"] == "sent"
                with trio.fail_after(120):
                    done = await _until(rt, lambda e: isinstance(e, ev.TurnComplete)
                                        and e.agent == "/team/tree/amy", events)
    assert done.text == "hello user"
    assert script.seen["FROM-USER"][0].first_user_text() == "[message from user]\n> FROM-USER: hi amy"


async def test_team_tools_are_offered_to_team_members_only(workspace, configure, home):
    """An agent in no team is offered none of the team tools but team_create (deferred); once
    it leads a team it gets the teammate's everyday tools and the rest in the deferred list."""
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, ephemeral=True)) as rt:
            tooling = rt.main_agent.tooling
            names = {s.name for s in tooling.schemas()}
            assert not names & {"send_team_message", "read_inbox", "task_list", "task_update"}
            assert "- team_create:" in tooling.deferred_text()
            assert "- spawn_teammate:" not in tooling.deferred_text()
            tooling.context.team_name = "crew"  # what team_create does to its caller
            names = {s.name for s in tooling.schemas()}
            assert {"send_team_message", "read_inbox", "task_list", "task_update"} <= names
            assert "- spawn_teammate:" in tooling.deferred_text()
