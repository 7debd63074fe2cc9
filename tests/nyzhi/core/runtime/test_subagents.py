"""The subagent manager in process: budgets, wait, close of a subtree (its subprocesses
included), scoped cancel, hooks, and subagent threads in the session log (crash repair)."""

from __future__ import annotations

import json
import os

import pytest
import trio

from nyzhi.core import events as ev
from nyzhi.core.runtime.budget import Budget, Limits
from nyzhi.core.runtime.placement import AgentRecord
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.core.runtime.sessions import SessionStore
from nyzhi.core.runtime.sessions.pairing import INTERRUPTED_TEXT
from nyzhi.core.runtime.subagents import SubagentError, SubagentManager, clamp_wait_ms
from nyzhi.provider.types import Message, ToolCall
from nyzhi.testing.cli import settled_running, started_running
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

# ---- budgets --------------------------------------------------------------------------------


async def test_a_child_budget_is_carved_from_what_the_parent_has_left():
    root = Budget(Limits(tokens=1000, steps=10))
    root.charge(tokens=600, steps=4)
    child = root.carve(Limits(tokens=5000))
    assert child.limits == Limits(tokens=400, steps=6)  # capped at the parent's remainder
    child.charge(tokens=400)
    assert child.over() == "budget: tokens 400/400"
    assert root.tokens == 1000 and root.over() == "budget: tokens 1000/1000"
    assert (child.own_tokens, root.own_tokens) == (400, 600)


async def test_a_sibling_spending_the_parent_budget_stops_the_other_child():
    root = Budget(Limits(usd=1.0))
    a, b = root.carve(Limits()), root.carve(Limits())
    a.charge(usd=1.0)
    assert b.over() == "budget: usd 1.0000/1.0000"  # the tree's limit covers every child


async def test_steps_and_time_limits():
    budget = Budget(Limits(steps=2))
    assert budget.before_step() is None and budget.before_step() is None
    assert budget.before_step() == "budget: steps 2/2"
    timed = Budget(Limits(time=60))
    assert timed.deadline == timed.started + 60
    assert timed.carve(Limits(time=600)).deadline == timed.deadline  # capped by the parent


def test_wait_timeouts_are_clamped_like_the_original():
    assert clamp_wait_ms(None) == 30_000
    assert clamp_wait_ms(1) == 10_000
    assert clamp_wait_ms(10**9) == 300_000


async def test_wait_reports_not_found_at_once_and_times_out_on_running_agents(autojump_clock):
    manager = SubagentManager(
        system=None, factory=None, catalog=None, models=None,  # type: ignore[arg-type]
        root_budget=Budget(), emit=_discard,
    )
    rec = AgentRecord(path="/agents/main/w-1", nickname="w-1", role="worker", model="m",
                      agent=None, budget=Budget(), status="running")
    manager.records[rec.path] = rec
    start = trio.current_time()
    got = await manager.wait(["nobody", "w-1"])
    assert trio.current_time() == start  # an unknown id is final: no waiting
    assert got["agents"][0] == {"agent_id": "nobody", "status": "not_found"}
    got = await manager.wait(["w-1"], timeout_ms=1)
    assert got["timed_out"] is True and trio.current_time() - start == 10  # clamped up
    with pytest.raises(SubagentError, match="not_found"):
        await manager.send("nobody", "hi")


async def _discard(_event):
    return None


# ---- a real runtime ---------------------------------------------------------------------------


async def test_close_agent_stops_the_subtree_and_kills_its_bash(workspace, configure):
    marker = "765432"
    fifo = workspace / "ready.fifo"
    os.mkfifo(fifo)
    command = f"sleep {marker} & echo go > ready.fifo; sleep {marker}"

    def script(request):
        first = request.first_user_text()
        if first.startswith("PARENT"):
            if not request.tool_results():
                return reply(tool_calls=[tool_call("spawn_agent", {"message": "GRANDCHILD"})])
            return reply("parent waits")
        if first.startswith("GRANDCHILD") and not request.tool_results():
            return reply(tool_calls=[tool_call("bash", {"command": command, "timeout": 600})])
        return reply("done")

    log = workspace / "hooks.jsonl"
    extra = (f'[agent.sandbox]\nlevel = "full-access"\n'
             f'[[agent.hooks]]\nevent = "subagent_stop"\ncommand = "cat >> {log}; echo >> {log}"\n'
             f'[[agent.hooks]]\nevent = "subagent_start"\ncommand = "cat >> {log}; echo >> {log}"\n')
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full",
                                               ephemeral=True)) as rt:
            parent = (await rt.agents.spawn(ev.MAIN_AGENT, "PARENT task"))["agent_id"]
            with trio.fail_after(30):
                assert (await trio.to_thread.run_sync(fifo.read_text)).strip() == "go"
            grandchild = f"{parent}/default-2"
            assert rt.agents.records[grandchild].status == "running"
            assert await started_running(marker)
            closed = await rt.agents.close(parent)
            assert closed["status"] == "shutdown"
            assert await settled_running(marker) == []  # close returns once they are gone
            assert rt.agents.records[grandchild].status == "shutdown"
            assert rt.system.lookup(grandchild) is None
            with pytest.raises(SubagentError, match="resume_agent it first"):
                await rt.agents.send(grandchild, "more")
            # the grandchild cannot come back before its parent does
            with pytest.raises(SubagentError, match=f"resume_agent {parent} first"):
                await rt.agents.resume(grandchild)
            assert (await rt.agents.resume(parent))["status"] == "idle"
            assert (await rt.agents.resume(grandchild))["status"] == "idle"
    hooks = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    starts = [h["agent"] for h in hooks if h.get("status") == "running"]
    assert parent in starts and grandchild in starts
    assert any(h["agent"] == parent and h["status"] == "completed" for h in hooks)
    assert any(h["agent"] == grandchild and h["status"] == "shutdown" for h in hooks)


async def test_scoped_cancel_and_send_by_path(workspace, configure):
    release = trio.Event()

    async def script(request):
        first = request.first_user_text()
        if first.startswith("PARENT") and not request.tool_results():
            return reply(tool_calls=[tool_call("spawn_agent", {"message": "CHILD task"})])
        if first.startswith("CHILD") and request.last_user_text() == "CHILD task":
            await release.wait()
        return reply(f"{request.last_user_text()} answered")

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full",
                                               ephemeral=True)) as rt:
            parent = (await rt.agents.spawn(ev.MAIN_AGENT, "PARENT task"))["agent_id"]
            child = f"{parent}/default-2"
            await server.wait_for_requests(3)  # the parent's two and the child's first, held
            got = await rt.agents.wait([parent])
            assert got["agents"][0]["status"] == "completed"
            # cancelling the parent's turn alone leaves the child running
            await rt.cancel(parent, scope="turn")
            assert rt.agents.records[child].status == "running"
            # the subtree scope reaches it: interrupted, thread kept
            assert await rt.cancel(parent, scope="subtree")
            got = await rt.agents.wait([child])
            assert got["agents"][0]["status"] == "shutdown"
            assert got["agents"][0]["reason"].startswith("interrupted")
            status = await rt.send(child, "CHILD again")
            assert status["status"] == "running"
            got = await rt.agents.wait([child])
            assert got["agents"][0]["message"] == "CHILD again answered"
            thread = rt.agents.records[child].agent.loop.messages
            assert [m.content for m in thread if m.role == "user"] == ["CHILD task",
                                                                       "CHILD again"]
            with pytest.raises(ValueError, match="scope"):
                await rt.cancel(child, scope="everything")
    release.set()


# ---- the session log ----------------------------------------------------------------------------


def test_a_subagent_thread_is_journaled_and_its_unanswered_call_repaired(tmp_path):
    store = SessionStore(tmp_path)
    writer = store.create(cwd="/p", sync="never")
    path = "/agents/main/worker-1"
    call = ToolCall("k1", "bash", '{"command": "make"}')
    writer.append_message(Message("user", "main task"))
    writer.append_agent(path, {"role": "worker", "model": "m2"})
    writer.append_message(Message("user", "child task"), agent=path)
    writer.append_message(Message("assistant", "", tool_calls=(call,)), agent=path)
    # killed here: the child's call has no result
    loaded = store.load(writer.id)
    assert [m.content for m in loaded.messages] == ["main task"]  # main's thread untouched
    thread = loaded.agents[path]
    assert thread.info == {"role": "worker", "model": "m2"}
    assert thread.interrupted == [call]
    assert thread.messages[-1].content == INTERRUPTED_TEXT and thread.messages[-1].tool_call_id == "k1"
    reopened = store.open(writer.id, sync="never")  # resume records the repair, under the path
    reopened.close()
    again = store.load(writer.id)
    assert again.agents[path].interrupted == []
    assert again.agents[path].messages[-1].content == INTERRUPTED_TEXT
    marks = [e for e in again.events if isinstance(e, ev.ToolDone)]
    assert [m.agent for m in marks] == [path]
    assert again.meta.message_count == 1  # the main thread's count
