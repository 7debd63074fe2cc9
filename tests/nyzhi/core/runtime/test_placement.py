"""One placement path: an agent placed by the ``spawn_agent`` tool, by the embedding API
(``Runtime.spawn_agent`` / ``Runtime.spawn``) or by a team (an in-process teammate) is placed
by the runtime's agent tree, so the same depth and thread limits refuse it and its usage is
charged to a budget carved from its parent's, up to the root budget."""

from __future__ import annotations

import json

import pytest
import trio

from nyzhi.core import events as ev
from nyzhi.core.loop.agent import UserInput
from nyzhi.core.runtime.budget import Budget, Limits
from nyzhi.core.runtime.placement import AgentTree, Placed, PlacementError
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import FakeRequest, PerAgent, open_fake_llm, reply, tool_call

LIMITS = "[agent.agents]\nmax_depth = 1\nmax_threads = 1\n"
STEP = 19  # the fake LLM's tokens per reply (12 in, 7 out)


def results(request: FakeRequest) -> list[dict]:
    out = []
    for text in request.tool_results():
        try:
            out.append(json.loads(text))
        except ValueError:
            out.append({"error": text})
    return out


def spawn(*tasks: str):
    return reply(tool_calls=[tool_call("spawn_agent", {"message": t}) for t in tasks])


def wait_spawned(request: FakeRequest):
    ids = [r["agent_id"] for r in results(request) if "agent_id" in r]
    return reply(tool_calls=[tool_call("wait", {"ids": ids, "timeout_ms": 60000})])


def think(_request: FakeRequest):
    return reply(tool_calls=[tool_call("think", {"thought": "again"})])


def placed(rt) -> dict:
    return {p.path: p for p in rt.agents.placed()}


async def test_the_spawn_agent_tool_places_within_the_limits_and_the_budget(
        workspace, configure, home):
    script = PerAgent({
        # two at once: whichever comes second finds the one thread taken
        "MAIN": [spawn("CHILD one", "CHILD two"), wait_spawned, reply("main done")],
        "CHILD": [spawn("GRANDCHILD go"), reply("child done")],
        "GRANDCHILD": [reply("never")],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=LIMITS)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full",
                                               ephemeral=True)) as rt:
            handle = await rt.submit("MAIN go")
            with trio.fail_after(30):
                assert (await handle.wait()).text == "main done"
            tree = rt.agents
            child = "/agents/main/default-1"
            assert tree.budget_of(child).parent is tree.root_budget
            used = placed(rt)
            assert tree.root_budget.tokens == 5 * STEP == sum(p.tokens for p in used.values())
    refused = [r["error"] for r in results(script.seen["MAIN"][1]) if "error" in r]
    assert [e.split(".")[0] for e in refused] == ["Agent limit (1) reached"]
    [deeper] = results(script.seen["CHILD"][1])
    assert deeper["error"].startswith("Agent depth limit (1) reached.")
    assert script.seen["GRANDCHILD"] == [] and len(script.seen["CHILD"]) == 2
    assert (used[child].kind, used[child].status, used[child].tokens) == (
        "subagent", "completed", 2 * STEP)
    assert (used[ev.MAIN_AGENT].kind, used[ev.MAIN_AGENT].tokens) == ("main", 3 * STEP)


async def test_the_embedding_api_places_within_the_limits_and_the_budget(
        workspace, configure, home):
    running, release = trio.Event(), trio.Event()

    async def busy(_request):
        running.set()
        await release.wait()
        return reply("a done")

    script = PerAgent({"A-TASK": [busy, think, think, think, think]})
    extra = LIMITS + "[agent.agents.budget]\ntokens = 50\n"
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full",
                                               ephemeral=True)) as rt:
            tree = rt.agents
            a = await rt.spawn_agent("a")
            first = await a.ask(UserInput("A-TASK one"))
            with trio.fail_after(30):
                await running.wait()
            assert tree.lookup("/agents/main/a").status == "running"
            with pytest.raises(PlacementError, match=r"^Agent limit \(1\) reached"):
                await rt.spawn_agent("b")  # one thread runs already
            release.set()
            with trio.fail_after(30):
                assert (await first.wait()).text == "a done"
            with pytest.raises(PlacementError, match=r"^Agent depth limit \(1\) reached"):
                await rt.spawn(rt.main_agent.spec.child("a").child("deeper"))
            # a spec's own budget is carved from its parent's
            capped = rt.main_agent.spec.child("c", budget=Budget(Limits(tokens=10, usd=9.0)))
            await rt.spawn(capped)
            c_budget = tree.budget_of("/agents/main/c")
            assert c_budget.limits == Limits(tokens=10, usd=9.0)
            assert c_budget.parent is tree.root_budget
            with pytest.raises(PlacementError, match="already placed"):
                await rt.spawn(capped)
            # the root budget covers what the embedded agent uses
            second = await a.ask(UserInput("think until stopped"))
            with trio.fail_after(30):
                outcome = await second.wait()
            assert (outcome.stop_reason, outcome.reason) == ("budget", "budget: tokens 57/50")
            assert tree.root_budget.tokens == 3 * STEP
            used = placed(rt)
            assert (used["/agents/main/a"].kind, used["/agents/main/a"].tokens) == (
                "embedded", 3 * STEP)
            assert used["/agents/main/c"].tokens == 0


async def test_an_in_process_teammate_is_placed_within_the_limits_and_the_budget(
        workspace, configure, home):
    script = PerAgent({
        "AMY-JOB": [spawn("AMY-CHILD one", "AMY-CHILD two"), wait_spawned,
                    think, think, think, think],
        "AMY-CHILD": [spawn("AMY-GRAND go"), reply("child done")],
        "AMY-GRAND": [reply("never")],
    })
    extra = (LIMITS + '[agent.agents.roles.capped]\ndescription = "Stops at 100 tokens."\n'
             "[agent.agents.roles.capped.budget]\ntokens = 100\n")
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True,
                                               team="t")) as rt:
            tree, amy = rt.agents, "/team/t/amy"
            async with rt.subscribe() as events:
                await rt.teams.spawn_teammate("t", "amy", "AMY-JOB go", "capped", None,
                                              ev.MAIN_AGENT)
                with trio.fail_after(30):
                    async for event in events:
                        if isinstance(event, ev.TurnComplete) and event.agent == amy:
                            break
            assert (event.stop_reason, event.text) == ("budget", "")
            assert tree.budget_of(amy).limits.tokens == 100
            assert tree.budget_of(amy).parent is tree.root_budget
            child = f"{amy}/default-1"
            assert tree.budget_of(child).parent is tree.budget_of(amy)
            used = placed(rt)
            assert tree.budget_of(amy).tokens == 6 * STEP  # its own four and its child's two
            assert tree.root_budget.tokens == 6 * STEP == sum(p.tokens for p in used.values())
    refused = [r["error"] for r in results(script.seen["AMY-JOB"][1]) if "error" in r]
    assert [e.split(".")[0] for e in refused] == ["Agent limit (1) reached"]
    [deeper] = results(script.seen["AMY-CHILD"][1])
    assert deeper["error"].startswith("Agent depth limit (1) reached.")
    assert len(script.seen["AMY-JOB"]) == 4  # 76 tokens, 95, 114: stopped before a fifth
    assert script.seen["AMY-GRAND"] == [] and len(script.seen["AMY-CHILD"]) == 2
    assert (used[amy].kind, used[amy].tokens) == ("teammate", 4 * STEP)
    assert used[child].tokens == 2 * STEP


async def test_usage_of_an_agent_placed_in_another_process_is_charged_to_its_placed_root():
    """A process teammate's own subagents are placed in its process; their usage comes back as
    events under its path and is charged to the budget the lead's tree reserved for it."""
    tree = AgentTree(system=None, factory=None, root_budget=Budget(Limits(tokens=100)),
                     emit=None)  # type: ignore[arg-type]
    member = tree.reserve("/team/t/bob")
    await tree.on_event(ev.Usage(agent="/team/t/bob/default-1", input_tokens=30,
                                 output_tokens=10))
    await tree.on_event(ev.AgentStatus(agent="/team/t/bob", status="running"))
    assert (member.own_tokens, member.parent) == (40, tree.root_budget)
    assert tree.root_budget.tokens == 40
    assert tree.placed() == [Placed("/team/t/bob", "process", "running", 40, 0.0, 0)]


async def test_the_main_agents_status_carries_the_steps_it_took(workspace, home, configure):
    """Issue 56: the web tree said "0 st" for an agent that had taken steps: the main agent's
    agent_status carried no step count (a child's did, from its budget)."""
    script = [reply(tool_calls=[tool_call("glob", {"pattern": "*.md"})]), reply("two steps"),
              reply("one more")]

    def after_turns(seen: list[ev.AgentStatus]) -> list[int]:
        """The step of the idle status that follows each running one."""
        out, running = [], False
        for status in seen:
            if status.status == ev.AgentState.RUNNING:
                running = True
            elif status.status == ev.AgentState.IDLE and running:
                out.append(status.step)
                running = False
        return out

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, ephemeral=True)) as rt:
            seen: list[ev.AgentStatus] = []
            async with rt.subscribe() as channel:
                await (await rt.submit("look")).wait()
                await (await rt.submit("again")).wait()
                with trio.fail_after(30):
                    while len(after_turns(seen)) < 2:
                        event = await channel.receive()
                        if isinstance(event, ev.AgentStatus) and event.agent == ev.MAIN_AGENT:
                            seen.append(event)
    assert after_turns(seen) == [2, 3]  # cumulative, over the session's turns


async def test_a_resumed_session_starts_in_the_plan_mode_it_was_left_in(
        workspace, home, configure):
    """Issue 56: ACP's session/load (and every resume) brought plan mode back as off."""
    async with open_fake_llm(script=[reply("planned")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            rt.knowledge.set_plan_mode(True)
            await (await rt.submit("plan it")).wait()
            session_id = rt.session_id
        async with open_runtime(RuntimeOptions(cwd=workspace, session=session_id)) as rt:
            assert rt.knowledge.plan_mode
            rt.knowledge.set_plan_mode(False)
        async with open_runtime(RuntimeOptions(cwd=workspace, session=session_id)) as rt:
            assert not rt.knowledge.plan_mode
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert not rt.knowledge.plan_mode  # a new session: off
