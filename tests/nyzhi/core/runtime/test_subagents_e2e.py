"""Subagents through ``nyz run`` as a user runs it: a real subprocess, real HTTP to the fake LLM,
the five lifecycle tools called by the (scripted) model, real files and real subprocesses.

One dynamic script serves every agent of a run: each agent's thread starts with its own task
(``first_user_text``), and each agent answers its requests in order (``PerAgent``)."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from nyzhi.testing.cli import (
    json_lines,
    read_until,
    run_nyz,
    settled_running,
    start_chat,
    started_running,
)
from nyzhi.testing.fake_llm import FakeRequest, PerAgent, reply, tool_call


def results(request: FakeRequest) -> list[dict]:
    """The JSON tool results the model is answering now."""
    out = []
    for text in request.tool_results():
        try:
            out.append(json.loads(text))
        except ValueError:
            out.append({"error": text})
    return out


def ids_of(request: FakeRequest) -> list[str]:
    return [r["agent_id"] for r in results(request) if "agent_id" in r]


async def run_json(ws: Path, home: Path, prompt: str, *extra: str):
    proc = await run_nyz(ws, home, "run", "--output-format", "stream-json", *extra, prompt)
    return proc, json_lines(proc.stdout)


def statuses(events: list[dict], agent: str) -> list[str]:
    return [e["status"] for e in events if e["type"] == "agent_status" and e["agent"] == agent]


async def test_two_explorers_in_parallel_wait_send_close_resume(workspace, home, configure):
    from nyzhi.testing.fake_llm import open_fake_llm

    (workspace / "notes.txt").write_text("the answer is 42\n")
    spawned: list[str] = []

    def spawn_two(_req):
        return reply(tool_calls=[
            tool_call("spawn_agent", {"message": "EXPLORE-A find notes", "agent_type": "explorer"}),
            tool_call("spawn_agent", {"message": "EXPLORE-B count files",
                                      "agent_type": "explorer"}),
        ])

    def wait_one(req):
        spawned[:] = sorted(ids_of(req))
        return reply(tool_calls=[tool_call("wait", {"ids": [spawned[0]], "timeout_ms": 60000})])

    def wait_other(req):
        return reply(tool_calls=[tool_call("wait", {"ids": [spawned[1]], "timeout_ms": 60000})])

    def send_more(_req):
        return reply(tool_calls=[tool_call("send_input", {"id": spawned[0],
                                                          "message": "MORE please"})])

    def wait_first(_req):
        return reply(tool_calls=[tool_call("wait", {"ids": [spawned[0]]})])

    def close_second(_req):
        return reply(tool_calls=[tool_call("close_agent", {"id": spawned[1]})])

    def resume_second(_req):
        return reply(tool_calls=[tool_call("resume_agent", {"id": spawned[1]})])

    def send_again(_req):
        return reply(tool_calls=[tool_call("send_input", {"id": spawned[1],
                                                          "message": "AGAIN what did you do"})])

    def wait_second(_req):
        return reply(tool_calls=[tool_call("wait", {"ids": [spawned[1]], "timeout_ms": 1})])

    def remembers(req):
        seen = [t for r, t in req.transcript() if r == "user"]
        return reply("remembers: " + " | ".join(seen))

    agents = PerAgent({
        "MAIN": [spawn_two, wait_one, wait_other, send_more, wait_first, close_second,
                 resume_second, send_again, wait_second, reply("all done")],
        "EXPLORE-A": [reply(tool_calls=[tool_call("read", {"file_path": "notes.txt"})]),
                      reply("A: the answer is 42"), remembers],
        "EXPLORE-B": [reply(tool_calls=[tool_call("glob", {"pattern": "*"})]),
                      reply("B: one file"), remembers],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"))
        proc, events = await run_json(workspace, home, "MAIN go")
    assert proc.returncode == 0, proc.stderr.decode()
    assert events[-1]["type"] == "result" and events[-1]["result"] == "all done"
    a, b = "/agents/main/explorer-1", "/agents/main/explorer-2"
    assert set(spawned) == {a, b}
    main = agents.seen["MAIN"]
    # spawn_agent returned at once, with the original's keys
    first = results(main[1])
    assert {r["role"] for r in first} == {"explorer"}
    assert all(set(r) >= {"agent_id", "agent_nickname", "role", "status"} for r in first)
    # wait returned each agent's final message
    assert "agents" in results(main[2])[-1], dump(agents)
    waited = results(main[2])[-1]["agents"] + results(main[3])[-1]["agents"]
    finals = {r["agent_id"]: r.get("message") for r in waited if r["status"] == "completed"}
    assert "the answer is 42" in " ".join(v or "" for v in finals.values())
    # send_input to a finished agent started a new turn; wait saw its new answer
    after_more = results(main[5])[-1]["agents"][0]
    assert after_more["status"] == "completed", after_more
    assert "EXPLORE-" in after_more["message"] and "MORE please" in after_more["message"]
    # close, resume: the thread is intact
    closed = results(main[6])[-1]
    assert closed["status"] == "shutdown"
    resumed = results(main[7])[-1]
    assert resumed["status"] == "idle"
    last = results(main[9])[-1]["agents"][0]
    assert last["status"] == "completed", last
    assert "EXPLORE-" in last["message"] and "AGAIN" in last["message"]
    # every agent's events are in the one stream, tagged with its path
    assert statuses(events, b)[:2] == ["pending_init", "running"]
    assert "shutdown" in statuses(events, b) and "idle" in statuses(events, b)
    assert statuses(events, a)[-1] == "completed"
    assert any(e["type"] == "tool_done" and e["agent"] in (a, b) and e["name"] == "read"
               for e in events)
    status = next(e for e in events if e["type"] == "agent_status" and e["agent"] == a
                  and e["status"] == "completed")
    assert status["step"] >= 2 and status["tokens"] > 0
    # the explorer role's fence: the child was offered no writing tool and no spawn_agent
    offered = set(agents.seen["EXPLORE-A"][0].tool_names())
    assert "read" in offered and not offered & {"write", "edit", "bash", "spawn_agent"}
    # and its system prompt carries the parent's briefing
    assert "# Context Briefing (from parent)" in agents.seen["EXPLORE-A"][0].system_text()
    assert len(server.requests) == sum(len(v) for v in agents.seen.values())


def dump(agents: PerAgent) -> str:  # for failure messages
    return "\n".join(f"{k}[{i}]: {r.tool_results()}" for k, reqs in agents.seen.items()
                     for i, r in enumerate(reqs))


def error_texts(request: FakeRequest) -> list[str]:
    return [r["error"] for r in results(request) if "error" in r]


async def test_depth_two_chain_works_and_depth_three_is_refused(workspace, home, configure):
    from nyzhi.testing.fake_llm import open_fake_llm

    def spawn(task):
        return reply(tool_calls=[tool_call("spawn_agent", {"message": task})])

    def wait_child(req):
        return reply(tool_calls=[tool_call("wait", {"ids": ids_of(req)[-1:]})])

    def report(prefix):
        def step(req):
            got = results(req)[-1]
            text = got["agents"][0].get("message", "") if "agents" in got else got.get("error")
            return reply(f"{prefix} got: {text}")
        return step

    agents = PerAgent({
        "MAIN": [spawn("LEVEL-ONE task"), wait_child, report("main")],
        "LEVEL-ONE": [spawn("LEVEL-TWO task"), wait_child, report("one")],
        "LEVEL-TWO": [spawn("LEVEL-THREE task"), report("two")],
        "LEVEL-THREE": [reply("should never run")],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        proc, events = await run_json(workspace, home, "MAIN chain")
    assert proc.returncode == 0, proc.stderr.decode()
    final = events[-1]["result"]
    assert final.startswith("main got: one got: two got: Agent depth limit (2) reached."), final
    assert "Solve the task yourself" in final
    assert agents.seen["LEVEL-THREE"] == []
    two = "/agents/main/default-1/default-2"
    assert statuses(events, two)[-1] == "completed"
    # the depth-2 agent had the lifecycle tools, and asked for them itself
    assert "spawn_agent" in agents.seen["LEVEL-TWO"][0].tool_names()


async def test_max_threads_refuses_a_third_running_agent(workspace, home, configure):
    from nyzhi.testing.fake_llm import open_fake_llm

    release = trio.Event()

    async def busy(_req):
        await release.wait()
        return reply("finished")

    def after_spawns(req):
        release.set()
        return reply(tool_calls=[tool_call("wait", {"ids": ids_of(req)})])

    agents = PerAgent({
        "MAIN": [reply(tool_calls=[tool_call("spawn_agent", {"message": f"WORKER-{i} go"})
                                   for i in range(3)]),
                 after_spawns, reply("main done")],
        "WORKER-0": [busy], "WORKER-1": [busy], "WORKER-2": [busy],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"), extra="[agent.agents]\nmax_threads = 2\n")
        proc, events = await run_json(workspace, home, "MAIN spawn three")
    assert proc.returncode == 0, proc.stderr.decode()
    spawned = results(agents.seen["MAIN"][1])
    assert sum(1 for r in spawned if r.get("status") == "running") == 2
    [refused] = error_texts(agents.seen["MAIN"][1])
    assert refused.startswith("Agent limit (2) reached.")
    assert sum(1 for v in agents.seen.values() if v) == 3  # main and two workers


async def test_budget_stops_a_runaway_child_and_its_parent_is_told(workspace, home, configure):
    from nyzhi.testing.fake_llm import FakeUsage, open_fake_llm

    def forever(_req):
        return reply(tool_calls=[tool_call("think", {"thought": "again"})],
                     usage=FakeUsage(input_tokens=9000, output_tokens=1000))

    agents = PerAgent({
        "MAIN": [reply(tool_calls=[tool_call("spawn_agent", {"message": "RUNAWAY loop",
                                                             "agent_type": "runaway"})]),
                 lambda req: reply(tool_calls=[tool_call("wait", {"ids": ids_of(req)})]),
                 lambda req: reply("child said: " + json.dumps(results(req)[-1]))],
        "RUNAWAY": [forever] * 50,
    })
    extra = """[agent.agents.roles.runaway]
description = "Loops until stopped."

[agent.agents.roles.runaway.budget]
tokens = 20000
"""
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc, events = await run_json(workspace, home, "MAIN budget")
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(agents.seen["RUNAWAY"]) == 2  # 2 x 10000 tokens, then stopped before step 3
    waited = results(agents.seen["MAIN"][2])[-1]["agents"][0]
    assert waited["status"] == "errored"
    assert waited["reason"] == "budget: tokens 20000/20000"
    child = "/agents/main/runaway-1"
    assert statuses(events, child)[-1] == "errored"
    assert any(e["type"] == "error" and e["agent"] == child and e["kind"] == "budget"
               for e in events)
    assert events[-1]["result"].startswith("child said:")


async def test_run_budget_tokens_stops_the_whole_run(workspace, home, configure):
    from nyzhi.testing.fake_llm import open_fake_llm

    def forever(_req):
        return reply(tool_calls=[tool_call("think", {"thought": "again"})])

    agents = PerAgent({"MAIN": [forever] * 50})
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"))
        proc, events = await run_json(workspace, home, "MAIN loop", "--budget-tokens", "50")
    assert proc.returncode == 1
    assert len(agents.seen["MAIN"]) == 3  # 19 tokens a step: 57 >= 50 after three
    assert events[-1]["is_error"] is True
    assert any(e["type"] == "error" and e["message"] == "budget: tokens 57/50" for e in events)


# ---- the line chat ----------------------------------------------------------------------


async def test_approval_from_a_depth_two_agent_answered_in_the_chat(workspace, home, configure):
    from nyzhi.testing.fake_llm import open_fake_llm

    def spawn(task, role):
        return reply(tool_calls=[tool_call("spawn_agent", {"message": task, "agent_type": role})])

    def wait_for(nickname):
        def step(req):
            ids = [i for i in ids_of(req) if i.endswith(nickname)]
            return reply(tool_calls=[tool_call("wait", {"ids": ids, "timeout_ms": 300000})])
        return step

    agents = PerAgent({
        "MAIN": [reply(tool_calls=[
                     tool_call("spawn_agent", {"message": "LEVEL-ONE task",
                                               "agent_type": "worker"}),
                     tool_call("spawn_agent", {"message": "SIBLING task",
                                               "agent_type": "explorer"})]),
                 wait_for("worker-1"), reply("main done")],
        "LEVEL-ONE": [spawn("LEVEL-TWO task", "worker"), wait_for("worker-2"),
                      reply(tool_calls=[tool_call("write", {"file_path": "two.txt",
                                                            "content": "2"})]),
                      reply("one done")],
        "LEVEL-TWO": [reply(tool_calls=[tool_call("write", {"file_path": "deep.txt",
                                                            "content": "deep"})]),
                      reply("two done")],
        "SIBLING": [reply("sibling finished while the other waits")],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"))
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"MAIN go\n")
        await read_until(proc.stdout, out, b"/agents/main/worker-1/worker-2 asks: Approve write")
        # the depth-2 agent waits for the answer; its sibling goes on
        await read_until(proc.stdout, out, b"[explorer-1] sibling finished while the other")
        assert not (workspace / "deep.txt").exists()
        await proc.stdin.send_all(b"a\n")  # always, for this session: every agent
        await read_until(proc.stdout, out, b"main done")
        await read_until(proc.stdout, out, b"> ")
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            code = await proc.wait()
    assert code == 0
    assert (workspace / "deep.txt").read_text() == "deep"
    assert (workspace / "two.txt").read_text() == "2"  # not asked again: "always" covers the tree
    assert bytes(out).count(b"Approve write") == 1
    assert b"[worker-2] [tool: write]" in out and b"[worker-1] one done" in out


async def test_ctrl_c_cancels_the_subtree_kills_its_bash_and_the_child_can_continue(
        workspace, home, configure):
    import os
    import signal

    from nyzhi.testing.fake_llm import open_fake_llm

    marker = "876543"
    fifo = workspace / "ready.fifo"
    os.mkfifo(fifo)
    command = f"sleep {marker} & echo go > ready.fifo; sleep {marker}"

    def continue_child(_req):  # by nickname, as a model may
        return reply(tool_calls=[tool_call("send_input", {"id": "worker-1",
                                                          "message": "CONTINUE after"})])

    agents = PerAgent({
        "MAIN": [reply(tool_calls=[tool_call("spawn_agent", {"message": "BASHER run",
                                                             "agent_type": "worker"})]),
                 lambda req: reply(tool_calls=[tool_call("wait", {"ids": ids_of(req),
                                                                  "timeout_ms": 300000})]),
                 continue_child,
                 reply(tool_calls=[tool_call("wait", {"ids": ["worker-1"]})]),
                 lambda req: reply("main: " + results(req)[-1]["agents"][0]["message"])],
        "BASHER": [reply(tool_calls=[tool_call("bash", {"command": command, "timeout": 600})]),
                   lambda req: reply("basher saw: " + " | ".join(
                       t for r, t in req.transcript() if r in ("user", "tool")))],
    })
    extra = '[agent.trust]\nmode = "full"\n[agent.sandbox]\nlevel = "full-access"\n'
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"MAIN go\n")
        with trio.fail_after(30):  # the fifo opens when the child's bash has started its sleep
            assert (await trio.to_thread.run_sync(fifo.read_text)).strip() == "go"
        assert await started_running(marker)
        proc.send_signal(signal.SIGINT)
        await read_until(proc.stdout, out, b"[worker-1] shutdown: interrupted")
        await read_until(proc.stdout, out, b"[cancelled]")
        assert await settled_running(marker) == []
        await read_until(proc.stdout, out, b"> ")
        await proc.stdin.send_all(b"MAIN continue\n")
        await read_until(proc.stdout, out, b"main: basher saw:")
        await read_until(proc.stdout, out, b"> ")
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            code = await proc.wait()
    assert code == 0
    last = agents.seen["BASHER"][-1].transcript()
    texts = [t for r, t in last if r in ("user", "tool")]
    assert texts[0] == "BASHER run" and texts[-1] == "CONTINUE after"
    assert any("cancel" in t.lower() for t in texts[1:-1])  # the killed call kept its result


# ---- leases, roles, models, sessions ----------------------------------------------------------


async def test_two_subagents_race_to_edit_one_file_and_both_edits_land(workspace, home, configure):
    from nyzhi.testing.fake_llm import open_fake_llm

    target = workspace / "app.py"
    target.write_text("a = 1\nb = 2\n")
    arrived = {"n": 0}
    both = trio.Event()

    async def edit(old, new):
        async def step(_req):
            # both children answer at the same moment, so their edits run together
            arrived["n"] += 1
            if arrived["n"] == 2:
                both.set()
            await both.wait()
            return reply(tool_calls=[tool_call("edit", {"file_path": "app.py", "old_string": old,
                                                        "new_string": new})])
        return step

    agents = PerAgent({
        "MAIN": [reply(tool_calls=[tool_call("spawn_agent", {"message": f"EDITOR-{k} go",
                                                             "agent_type": "worker"})
                                   for k in "AB"]),
                 lambda req: reply(tool_calls=[tool_call("wait", {"ids": ids_of(req)[:1]})]),
                 lambda req: reply(tool_calls=[tool_call("wait", {"ids": [
                     i for i in ("/agents/main/worker-1", "/agents/main/worker-2")
                     if i != results(req)[-1]["agents"][0]["agent_id"]]})]),
                 reply("both edited")],
        "EDITOR-A": [await edit("a = 1", "a = 10"), lambda req: reply(req.tool_results()[-1])],
        "EDITOR-B": [await edit("b = 2", "b = 20"), lambda req: reply(req.tool_results()[-1])],
    })
    async with open_fake_llm(script=agents) as server:
        # Leases are under test here, not the stale-write guard (tests/nyzhi/core/runtime/test_stale_writes.py):
        # each child edits without reading first.
        configure(workspace, server.url_for("openai"),
                  extra='[agent]\nstale_write_guard = false\n[agent.trust]\nmode = "full"\n')
        proc, events = await run_json(workspace, home, "MAIN race")
    assert proc.returncode == 0, proc.stderr.decode()
    assert target.read_text() == "a = 10\nb = 20\n"
    done = [e for e in events if e["type"] == "tool_done" and e["name"] == "edit"]
    assert len(done) == 2 and not any(e["is_error"] for e in done)
    assert {e["agent"] for e in done} == {"/agents/main/worker-1", "/agents/main/worker-2"}


async def test_claude_role_fence_and_per_role_models(workspace, home, configure):
    from nyzhi.testing.fake_llm import open_fake_llm

    roles = workspace / ".claude" / "agents"
    roles.mkdir(parents=True)
    (roles / "scout.md").write_text(
        "---\nname: scout\ndescription: Looks, never touches.\ntools: Read, Grep\n"
        "model: fake-model-2\n---\nYou are SCOUT-PROMPT, a careful reader.\n")
    agents = PerAgent({
        "MAIN": [reply(tool_calls=[
                     tool_call("spawn_agent", {"message": "SCOUT go", "agent_type": "scout"}),
                     tool_call("spawn_agent", {"message": "PLAIN go", "agent_type": "explorer"}),
                 ]),
                 lambda req: reply(tool_calls=[tool_call("wait", {"ids": ["scout-1"]})]),
                 lambda req: reply(tool_calls=[tool_call("wait", {"ids": ["explorer-1"]})]),
                 lambda req: reply("main done")],
        "SCOUT": [reply(tool_calls=[tool_call("write", {"file_path": "x.txt", "content": "x"})]),
                  lambda req: reply("scout: " + req.tool_results()[-1])],
        "PLAIN": [reply("plain done")],
    })
    extra = '[agent]\nsubagent_model = "fake-model-3"\n[agent.trust]\nmode = "full"\n'
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc, events = await run_json(workspace, home, "MAIN roles")
    assert proc.returncode == 0, proc.stderr.decode()
    scout = agents.seen["SCOUT"]
    assert set(scout[0].tool_names()) == {"read", "grep"}
    assert "SCOUT-PROMPT" in scout[0].system_text()
    assert not (workspace / "x.txt").exists()  # the gate refused the fenced-out tool
    refusal = scout[1].tool_results()[-1]
    assert "role fence" in refusal and "`write`" in refusal
    # the models really used: the role's, agent.subagent_model, the configured one for main
    assert {r.model for r in scout} == {"fake-model-2"}
    assert {r.model for r in agents.seen["PLAIN"]} == {"fake-model-3"}
    assert {r.model for r in agents.seen["MAIN"]} == {"fake-model-1"}
    # the spawn_agent description lists the roles, the user's included
    spawn = next(t for t in agents.seen["MAIN"][0].json["tools"]
                 if t["function"]["name"] == "spawn_agent")
    assert "- scout: Looks, never touches." in spawn["function"]["description"]
    assert "- explorer:" in spawn["function"]["description"]


async def test_a_resumed_session_continues_a_subagent_and_replay_shows_the_tree(
        workspace, home, configure):
    from nyzhi.testing.fake_llm import open_fake_llm

    keeper = "/agents/main/worker-1"
    agents = PerAgent({
        "MAIN": [
            # first run
            reply(tool_calls=[tool_call("spawn_agent", {"message": "KEEPER remember PURPLE",
                                                        "agent_type": "worker"})]),
            reply(tool_calls=[tool_call("wait", {"ids": [keeper]})]),
            reply("first run done"),
            # second run (--continue)
            reply(tool_calls=[tool_call("resume_agent", {"id": keeper})]),
            reply(tool_calls=[tool_call("send_input", {"id": keeper,
                                                       "message": "which colour?"})]),
            reply(tool_calls=[tool_call("wait", {"ids": [keeper]})]),
            lambda req: reply("keeper said: " + results(req)[-1]["agents"][0]["message"]),
        ],
        "KEEPER": [reply("noted PURPLE"),
                   lambda req: reply("it was " + ("PURPLE" if ("assistant", "noted PURPLE")
                                                  in req.transcript() else "unknown"))],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"))
        one, first = await run_json(workspace, home, "MAIN one")
        assert one.returncode == 0, one.stderr.decode()
        two, second = await run_json(workspace, home, "MAIN two", "--continue")
    assert two.returncode == 0, two.stderr.decode()
    assert second[-1]["result"] == "keeper said: it was PURPLE"
    assert first[0]["session_id"] == second[0]["session_id"]
    resumed = results(agents.seen["MAIN"][4])[-1]
    assert resumed["status"] == "idle" and resumed["agent_id"] == keeper
    replay = await run_nyz(workspace, home, "replay", first[0]["session_id"])
    text = replay.stdout.decode()
    assert replay.returncode == 0, replay.stderr.decode()
    assert "└ worker-1 (worker, fake-model-1, 4 messages)" in text
    assert f" {keeper}  turn_complete" in text


async def test_nyz_run_applies_its_trust_rules_to_every_agent(workspace, home, configure):
    from nyzhi.testing.fake_llm import open_fake_llm

    def run(label):
        return PerAgent({
            "MAIN": [reply(tool_calls=[tool_call("spawn_agent", {"message": f"WRITER {label}",
                                                                 "agent_type": "worker"})]),
                     lambda req: reply(tool_calls=[tool_call("wait", {"ids": ids_of(req)})]),
                     lambda req: reply(results(req)[-1]["agents"][0]["message"])],
            "WRITER": [reply(tool_calls=[tool_call("write", {"file_path": "w.txt",
                                                             "content": label})]),
                       lambda req: reply(req.tool_results()[-1])],
        })

    denied_script, allowed_script = run("denied"), run("allowed")
    async with open_fake_llm(script=denied_script) as server:
        configure(workspace, server.url_for("openai"))
        proc, events = await run_json(workspace, home, "MAIN write")
    assert proc.returncode == 0, proc.stderr.decode()
    assert not (workspace / "w.txt").exists()
    assert "--trust" in events[-1]["result"]  # the child's refusal, reported up to the parent
    async with open_fake_llm(script=allowed_script) as server:
        configure(workspace, server.url_for("openai"))
        proc, events = await run_json(workspace, home, "MAIN write", "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (workspace / "w.txt").read_text() == "allowed"


async def test_run_budget_time_stops_a_hanging_run(workspace, home, configure):
    from nyzhi.testing.fake_llm import hang, open_fake_llm

    async with open_fake_llm(script=[hang()]) as server:
        configure(workspace, server.url_for("openai"))
        proc, events = await run_json(workspace, home, "MAIN hang", "--budget-time", "1s")
    assert proc.returncode == 1
    assert any(e["type"] == "error" and e["kind"] == "budget"
               and e["message"].startswith("budget: time 1s/1s") for e in events)
    assert events[-1]["type"] == "result" and events[-1]["is_error"] is True


async def test_bad_budget_flags_are_refused_clearly(workspace, home):
    proc = await run_nyz(workspace, home, "run", "--budget-time", "soon", "hi")
    assert proc.returncode == 2 and b"--budget-time" in proc.stderr and b"10m" in proc.stderr
    proc = await run_nyz(workspace, home, "run", "--budget-tokens", "0", "hi")
    assert proc.returncode == 2 and b"greater than zero" in proc.stderr
