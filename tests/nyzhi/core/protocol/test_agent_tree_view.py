"""The one agent-tree view model (``nyzhi.core.protocol.agents``): a real run's live events and
the same run read back from its session log reduce to the same tree, and the console's panel
and the web console's ``state.agents`` show the same agents for one event stream.

In-process: the real runtime, a real subagent, real HTTP to the fake LLM, the real log."""

from __future__ import annotations

import json

import trio

from nyzhi.core import events as ev
from nyzhi.core.protocol import Session
from nyzhi.core.protocol.agents import AgentTreeView
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


def script(request):
    if request.first_user_text().startswith("CHILD"):
        return reply("child done")
    if not request.tool_results():
        return reply(tool_calls=[tool_call("spawn_agent", {"message": "CHILD task"})])
    return reply("main done")


def rows(tree: AgentTreeView) -> dict[str, tuple]:
    return {r.path: (r.status, r.detail, r.step, r.tokens, round(r.cost_usd, 9), r.activity)
            for r in tree.sorted()}


async def run_with_a_subagent(workspace) -> tuple[str, list[ev.Event], object]:
    """One turn whose main agent spawns a subagent, both to their end: the session id, every
    event a front end saw, and a WebSession fed them live."""
    from nyzhi.web.session import WebSession

    live: list[ev.Event] = []
    async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt, \
            rt.subscribe() as events, trio.open_nursery() as nursery:
        web = WebSession(rt, nursery)
        child_done = trio.Event()

        async def collect() -> None:
            async for event in events:
                live.append(event)
                web.record(event)
                if (isinstance(event, ev.AgentStatus) and event.agent != ev.MAIN_AGENT
                        and event.status == ev.AgentState.COMPLETED):
                    child_done.set()

        nursery.start_soon(collect)
        handle = await rt.submit("MAIN task")
        await handle.wait()
        with trio.fail_after(60):
            await child_done.wait()
        session_id = rt.session_id
        nursery.cancel_scope.cancel()
    return session_id, live, web


async def test_a_recorded_run_reduces_to_the_tree_the_live_run_did(workspace, home, configure):
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        session_id, live, _web = await run_with_a_subagent(workspace)
        async with open_runtime(RuntimeOptions(cwd=workspace, session=session_id)) as rt:
            recorded, _restored = Session(rt).replay()
    tree = AgentTreeView(live)
    [child] = [p for p in tree.rows if p != ev.MAIN_AGENT]
    assert tree.rows[child].status == ev.AgentState.COMPLETED
    assert tree.rows[child].tokens > 0 and tree.rows[ev.MAIN_AGENT].tokens > 0
    assert not any(e.is_delta for e in recorded)  # a log, not the live stream
    # the log goes on past what was watched live: the statuses of the runtime's close
    # the log holds what was watched live, in order, between the runtime's opening status
    # and its closing one (published before the subscription and after it)
    watched = [e for e in live if not e.is_delta]
    types, n = [e.type for e in watched], len(watched)
    at = next(i for i in range(len(recorded)) if [e.type for e in recorded[i:i + n]] == types)
    logged = recorded[at:at + n]
    assert {e.type for e in recorded[:at] + recorded[at + n:]} <= {"session_start", "agent_status"}
    assert rows(AgentTreeView(logged)) == rows(tree)
    # and decoded from its JSON, as a viewer or `nyz replay` reads it
    decoded = (ev.from_json(json.loads(json.dumps(ev.to_json(e)))) for e in live)
    assert rows(AgentTreeView(decoded)) == rows(tree)


async def test_the_console_and_the_web_show_the_same_agents_for_one_stream(
        workspace, home, configure):
    from nyzhi.tui.app import Console

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        _sid, live, web = await run_with_a_subagent(workspace)
    console = Console(workspace, no_color=True)
    send, receive = trio.open_memory_channel[ev.Event](len(live))
    for event in live:
        send.send_nowait(event)
    send.close()
    await console._pump(receive)  # the console's own event pump
    shown = {r.path: (r.status, r.tokens, round(r.cost_usd, 9)) for r in console.panel.tree.sorted()}
    served = {a.path: (a.status, a.tokens, round(a.cost_usd, 9)) for a in web.state().agents}
    assert shown == served and len(shown) == 2
    console.panel.refresh(ev.MAIN_AGENT)
    drawn = [row.base_widget.text for row in console.panel.walker]
    for path, (status, tokens, _cost) in served.items():
        name = path.rsplit("/", 1)[-1]
        assert any(f"{name} [{status}]" in text and f"{tokens} tok" in text for text in drawn)
