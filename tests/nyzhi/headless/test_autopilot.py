"""Autopilot (``nyz run --autopilot``, ``/autopilot``) against the scripted fake LLM: each
phase on its own subagent (routed by its task), the real verify tool on a real Makefile, the
state file on disk, and a real ``kill -9`` mid-execution."""

from __future__ import annotations

import json
import signal
import subprocess

import trio

from nyzhi.testing.cli import NYZ, json_lines, nyz_env, read_until, run_nyz, start_chat
from nyzhi.testing.fake_llm import PerAgent, hang, open_fake_llm, reply, tool_call

GOAL = "add a fixed.txt marker file"


def makefile(ws, recipe="@test -f fixed.txt || (echo fixed.txt-is-missing >&2; exit 1)"):
    (ws / "Makefile").write_text(f"test:\n\t{recipe}\n")


def state(ws) -> dict:
    return json.loads((ws / ".nyzhi" / "state" / "autopilot.json").read_text())


def writes_marker() -> list:
    """A worker that writes ``fixed.txt`` (what makes the check pass), then says so."""
    return [reply(tool_calls=[tool_call("write", {"file_path": "fixed.txt", "content": "ok\n"})]),
            reply("WORK: wrote fixed.txt")]


def routes(**extra) -> PerAgent:
    script = {"phase EXPAND": [reply("REQS: 1. fixed.txt exists")],
              "phase PLAN": [reply("PLAN: 1. write fixed.txt")],
              "phase EXECUTE": writes_marker(),
              "phase VALIDATE": [reply("All requirements met.\nVERDICT: APPROVE")]}
    script.update(extra)
    return PerAgent(script)


async def autopilot(ws, home, *args, fmt="stream-json"):
    with trio.fail_after(120):
        proc = await run_nyz(ws, home, "run", "--full-auto", "--output-format", fmt,
                             "--autopilot", *args)
    return proc


def phases(events) -> list[tuple[str, int]]:
    return [(e["phase"], e["loop"]) for e in events if e["type"] == "autopilot_phase"]


async def test_autopilot_runs_every_phase_on_its_subagent(workspace, home, configure):
    makefile(workspace)
    script = routes()
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await autopilot(workspace, home, GOAL)
    assert proc.returncode == 0, proc.stdout.decode()[-4000:]
    events = json_lines(proc.stdout)
    assert phases(events) == [("expand", 0), ("plan", 0), ("execute", 0), ("qa", 0),
                              ("validate", 0), ("done", 0)]
    # each phase ran on a subagent of its role, in the agent tree
    started = [(e["agent"], e["detail"].split(",")[0]) for e in events
               if e["type"] == "agent_status" and e["status"] == "pending_init"]
    assert started == [("/agents/main/planner-1", "role planner"),
                       ("/agents/main/planner-2", "role planner"),
                       ("/agents/main/worker-1", "role worker"),
                       ("/agents/main/reviewer-1", "role reviewer")]
    assert [len(script.seen[k]) for k in script.routes] == [1, 1, 2, 1]
    # later phases were handed what the earlier ones produced
    assert "REQS: 1. fixed.txt exists" in script.seen["phase PLAN"][0].first_user_text()
    work = script.seen["phase EXECUTE"][0].first_user_text()
    assert GOAL in work and "PLAN: 1. write fixed.txt" in work
    review = script.seen["phase VALIDATE"][0].first_user_text()
    assert "WORK: wrote fixed.txt" in review and "1/1 checks passed" in review
    assert (workspace / "fixed.txt").read_text() == "ok\n"
    result = events[-1]
    assert result["type"] == "result" and result["subtype"] == "success"
    assert "Autopilot done" in result["result"] and "VERDICT: APPROVE" in result["result"]
    assert set(result["usage_by_agent"]) >= {"/agents/main/worker-1", "/agents/main/reviewer-1"}
    saved = state(workspace)
    assert saved["phase"] == "done" and saved["goal"] == GOAL and saved["loops"] == 0
    assert saved["phases"] == ["expand", "plan", "execute", "qa", "validate"]
    assert saved["requirements"] == "REQS: 1. fixed.txt exists"
    assert "1/1 checks passed" in saved["verify"]
    assert (workspace / ".nyzhi" / ".gitignore").read_text().count("/state/") == 1


async def test_failed_checks_and_a_rejection_loop_back_to_execute(workspace, home, configure):
    makefile(workspace)
    script = routes(**{
        "phase EXECUTE": [reply("WORK: did nothing"), *writes_marker(),
                          reply("WORK: polished")],
        "phase VALIDATE": [reply("fixed.txt lacks a title\nVERDICT: REJECT"),
                           reply("VERDICT: APPROVE")],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await autopilot(workspace, home, GOAL)
    assert proc.returncode == 0, proc.stdout.decode()[-3000:]
    events = json_lines(proc.stdout)
    assert phases(events) == [("expand", 0), ("plan", 0), ("execute", 0), ("qa", 0),
                              ("execute", 1), ("qa", 1), ("validate", 1),
                              ("execute", 2), ("qa", 2), ("validate", 2), ("done", 2)]
    backs = [e["detail"] for e in events if e["type"] == "autopilot_phase" and e["loop"]
             and e["phase"] == "execute"]
    assert backs == ["QA failed; back to execute",
                     "validation (the reviewer) failed; back to execute"]
    # each new worker was told what failed
    second, third = (r.first_user_text() for r in script.seen["phase EXECUTE"][1:4:2])
    assert "QA failed" in second and "fixed.txt-is-missing" in second
    assert "fixed.txt lacks a title" in third
    assert state(workspace)["loops"] == 2 and state(workspace)["phase"] == "done"


async def test_checks_that_keep_failing_stop_after_the_limit_with_a_report(
        workspace, home, configure):
    makefile(workspace, "@echo broken-check >&2; exit 1")
    script = routes(**{"phase EXECUTE": [reply("WORK: try 1"), reply("WORK: try 2"),
                                         reply("WORK: try 3")]})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra="[agent]\nautopilot_max_loops = 1\n")
        proc = await autopilot(workspace, home, GOAL)
    assert proc.returncode == 1
    events = json_lines(proc.stdout)
    assert phases(events) == [("expand", 0), ("plan", 0), ("execute", 0), ("qa", 0),
                              ("execute", 1), ("qa", 1), ("failed", 1)]
    assert len(script.seen["phase EXECUTE"]) == 2  # one return to execute, as configured
    assert script.seen["phase VALIDATE"] == []  # never validated what does not pass
    result = events[-1]
    assert result["is_error"] and result["subtype"] == "error"
    assert "QA still failed after 1 loop(s)" in result["error"]
    assert "broken-check" in result["result"] and "WORK: try 2" in result["result"]
    saved = state(workspace)
    assert saved["phase"] == "failed" and "broken-check" in saved["report"]
    # a finished autopilot is not resumed: a run without a goal says so
    again = await autopilot(workspace, home, fmt="json")
    assert again.returncode == 1
    assert "no unfinished autopilot" in json_lines(again.stdout)[-1]["error"]


async def test_a_budget_stops_it_resumably(workspace, home, configure):
    makefile(workspace)
    script = routes()
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await autopilot(workspace, home, "--budget-tokens", "30", GOAL)
        assert proc.returncode == 1
        result = json_lines(proc.stdout)[-1]
        assert result["subtype"] == "budget_tokens", result
        assert script.seen["phase EXECUTE"] == []  # two planners spent 38 tokens of 30
        saved = state(workspace)
        assert saved["phase"] == "execute" and saved["stop_reason"].startswith("budget: tokens")
        # a goal other than the unfinished one is refused, naming the file
        other = await autopilot(workspace, home, "something else", fmt="json")
        assert other.returncode == 1
        assert "autopilot.json" in json_lines(other.stdout)[-1]["error"]
        proc = await autopilot(workspace, home, GOAL)  # the same goal resumes it
    assert proc.returncode == 0, proc.stdout.decode()[-3000:]
    assert phases(json_lines(proc.stdout))[0] == ("execute", 0)
    assert len(script.seen["phase EXPAND"]) == 1 and len(script.seen["phase PLAN"]) == 1


async def test_resumed_after_kill_9_mid_execution(workspace, home, configure):
    makefile(workspace)
    asked = trio.Event()

    def blocked(_request):
        asked.set()
        return hang()  # until the client goes away

    script = routes(**{"phase EXECUTE": [blocked, *writes_marker()]})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await trio.lowlevel.open_process(
            [*NYZ, "run", "--full-auto", "--output-format", "stream-json", "--autopilot", GOAL],
            cwd=workspace, env=nyz_env(home), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with trio.fail_after(60):
                await asked.wait()  # the worker is asking its model: execute is under way
            assert state(workspace)["phase"] == "execute"
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        assert proc.returncode == -signal.SIGKILL
        proc = await autopilot(workspace, home)  # no goal: resume
    assert proc.returncode == 0, proc.stdout.decode()[-3000:]
    events = json_lines(proc.stdout)
    assert phases(events) == [("execute", 0), ("qa", 0), ("validate", 0), ("done", 0)]
    first = next(e for e in events if e["type"] == "autopilot_phase")
    assert first["detail"] == "resumed at execute"
    # expand and plan were not redone: their one request each was the killed run's
    assert len(script.seen["phase EXPAND"]) == 1 and len(script.seen["phase PLAN"]) == 1
    assert "PLAN: 1. write fixed.txt" in script.seen["phase EXECUTE"][1].first_user_text()
    saved = state(workspace)
    assert saved["phase"] == "done"
    assert saved["phases"] == ["expand", "plan", "execute", "execute", "qa", "validate"]
    assert (workspace / "fixed.txt").read_text() == "ok\n"


async def test_autopilot_in_the_line_chat(workspace, home, configure):
    makefile(workspace)
    asked = trio.Event()

    def blocked(_request):
        asked.set()
        return hang()

    script = routes(**{"phase EXECUTE": [blocked, *writes_marker()]})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc, out = await start_chat(workspace, home)

        async def say(line: str, marker: str) -> None:  # each marker is new output
            await proc.stdin.send_all(line.encode() + b"\n")
            await read_until(proc.stdout, out, marker.encode())

        await say("/autopilot", "no autopilot here yet")
        await say("/plan", "plan mode on")
        await say(f"/autopilot {GOAL}", "plan mode is on (read-only tools)")
        await say("/plan", "plan mode off")
        await say(f"/autopilot {GOAL}", "autopilot starting")
        with trio.fail_after(60):
            await asked.wait()
        await say("/autopilot", "phase: execute")
        await say("/autopilot another goal", "an autopilot is running")
        await say("/autopilot clear", "the autopilot is running: /autopilot cancel first")
        await say("/autopilot cancel", "autopilot stopped: cancelled")
        await say("/autopilot", "phase: execute (stopped: cancelled by /autopilot cancel")
        await say("/autopilot another goal", "resume it")
        await say("/autopilot resume", "Approve write")  # the chat asks, as for any agent
        await say("y", "Autopilot done")
        await say("/autopilot", "phases run: expand → plan → execute → execute → qa → validate")
        await say("/autopilot clear", "autopilot state cleared")
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(30):
            assert await proc.wait() == 0
    text = out.decode()
    for phase in ("expand", "plan", "execute", "qa", "validate", "done"):
        assert f"[autopilot {phase}" in text, phase
    assert "[autopilot execute: resumed at execute]" in text
    assert not (workspace / ".nyzhi" / "state" / "autopilot.json").exists()
    assert (workspace / "fixed.txt").exists()
    assert len(script.seen["phase EXPAND"]) == 1


async def test_a_project_without_checks_is_left_to_the_reviewer(workspace, home, configure):
    script = routes(**{"phase EXECUTE": [reply("WORK: nothing to build")]})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await autopilot(workspace, home, GOAL)
    assert proc.returncode == 0, proc.stdout.decode()[-3000:]
    review = script.seen["phase VALIDATE"][0].first_user_text()
    assert "(no checks: the project has no build, test or lint target to run)" in review


async def test_bad_input_is_one_line(workspace, home, configure):
    proc = await run_nyz(workspace, home, "run", "--autopilot", "--plan", GOAL)
    assert proc.returncode == 1 and proc.stdout == b""
    assert proc.stderr.decode() == ("nyz run: --autopilot cannot be combined with --plan, "
                                    "--output-schema or --image\n")
    path = workspace / ".nyzhi" / "state" / "autopilot.json"
    path.parent.mkdir()
    path.write_text('{"goal": 5}')
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await autopilot(workspace, home, fmt="text")
    assert proc.returncode == 1 and server.requests == []
    err = proc.stderr.decode()
    assert f"{path}: 'goal' must be a string" in err and "Traceback" not in err


async def test_one_process_at_a_time_runs_a_workspaces_autopilot(workspace, home, configure):
    import fcntl

    lock = workspace / ".nyzhi" / "state" / "autopilot.lock"
    lock.parent.mkdir()
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        with lock.open("a") as held:  # as a running nyz holds it
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            proc = await autopilot(workspace, home, GOAL, fmt="json")
    assert proc.returncode == 1 and server.requests == []
    assert "another nyz is running this workspace's autopilot" in (
        json_lines(proc.stdout)[-1]["error"])
