"""``nyz team start --headless`` end to end, in both teammate modes, against the fake LLM.

The lead makes a three-task graph (2 waits for 1, 3 waits for 2) and sends alice her job;
alice does task 1 and hands task 2 to bob; bob does it and hands task 3 back to alice; alice
does it and reports to the lead, whose second turn ends the run. So messages flow
lead → alice → bob → alice → lead, and the tasks can only complete in dependency order.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
import trio
from _team_graph import _calls, team_script

from nyzhi.testing.cli import NYZ, json_lines, nyz_env, read_until, run_nyz
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call
from nyzhi.testing.waits import settled


@pytest.mark.parametrize("mode", ["in-process", "process"])
async def test_team_start_headless_runs_the_task_graph(mode, workspace, home, configure):
    script = team_script()
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(120):
            proc = await run_nyz(
                workspace, home, "team", "start", "crew", "--members",
                "alice:worker,bob:reviewer", "--task", "LEAD-TASK: build it",
                "--teammate-mode", mode, "--headless", "--output-format", "stream-json",
            )
        assert proc.returncode == 0, proc.stderr.decode()[-3000:]
        events = json_lines(proc.stdout)

        # messages flowed lead → alice → bob → alice → lead
        messages = [(e["sender"], e["to"]) for e in events
                    if e["type"] == "team_message" and e["kind"] == "message"]
        assert messages == [("lead", "alice"), ("alice", "bob"), ("bob", "alice"),
                            ("alice", "lead")]
        # the teammates' events reach the lead's stream tagged with their paths
        agents = {e["agent"] for e in events}
        assert {"/team/crew/alice", "/team/crew/bob"} <= agents
        # tasks completed in dependency order; each completion unblocked the next
        completed = [(e["task_id"], e["unblocked"]) for e in events
                     if e["type"] == "task_update" and e["status"] == "completed"]
        assert completed == [("1", ["2"]), ("2", ["3"]), ("3", [])]
        assert events[-1]["type"] == "result"
        assert events[-1]["result"] == "the team finished"
        assert events[-1]["is_error"] is False and events[-1]["subtype"] == "success"
        # usage is the whole team's, per agent path (issue 40): every model call counted
        by_agent = events[-1]["usage_by_agent"]
        routes = {"/agents/main": "LEAD-TASK", "/team/crew/alice": "ALICE-JOB",
                  "/team/crew/bob": "BOB-JOB"}
        assert set(by_agent) == set(routes)
        for path, key in routes.items():
            assert by_agent[path]["input_tokens"] == 12 * len(script.seen[key]), path
        calls = sum(len(requests) for requests in script.seen.values())
        assert events[-1]["usage"]["input_tokens"] == 12 * calls
        assert events[-1]["usage"]["output_tokens"] == 7 * calls
        # the lead's second turn saw alice's report as a [message from alice] user message
        lead_second = script.seen["LEAD-TASK"][-1].transcript()
        assert any(role == "user" and text.startswith("[message from alice]")
                   and "ALL-DONE" in text for role, text in lead_second)

        status = await run_nyz(workspace, home, "team", "status", "crew", "--json")
        assert status.returncode == 0, status.stderr.decode()
        data = json.loads(status.stdout)
        assert data["mode"] == mode
        members = {m["name"]: m for m in data["members"]}
        assert set(members) == {"lead", "alice", "bob"}
        assert all(m["unread"] == 0 for n, m in members.items() if n != "lead")
        assert {m["status"] for m in members.values()} == {"stopped"}
        tasks = {t["id"]: (t["status"], t["owner"]) for t in data["tasks"]}
        assert tasks == {"1": ("completed", "alice"), "2": ("completed", "bob"),
                         "3": ("completed", "alice")}
        text = await run_nyz(workspace, home, "team", "status", "crew")
        out = text.stdout.decode()
        assert "alice" in out and "#3" in out and "completed" in out


async def test_team_send_list_and_delete(workspace, home, configure):
    async with open_fake_llm(script=[reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "team", "start", "duo", "--members", "amy:worker",
                             "--headless")
        assert proc.returncode == 0, proc.stderr.decode()
    sent = await run_nyz(workspace, home, "team", "send", "duo", "amy", "hello", "there")
    assert sent.returncode == 0, sent.stderr.decode()
    status = json.loads((await run_nyz(workspace, home, "team", "status", "duo", "--json")).stdout)
    assert {m["name"]: m["unread"] for m in status["members"]}["amy"] == 1
    listed = await run_nyz(workspace, home, "team", "list")
    assert "duo" in listed.stdout.decode() and "amy" in listed.stdout.decode()
    bad = await run_nyz(workspace, home, "team", "send", "duo", "zed", "hi")
    assert bad.returncode == 1 and b"no member 'zed'" in bad.stderr
    gone = await run_nyz(workspace, home, "team", "delete", "duo")
    assert gone.returncode == 0, gone.stderr.decode()
    missing = await run_nyz(workspace, home, "team", "status", "duo")
    assert missing.returncode == 1 and b"no team 'duo'" in missing.stderr
    assert nyz_env(home)["HOME"] == str(home)


async def test_a_killed_process_teammate_is_restarted_and_carries_on(workspace, home, configure):
    """kill -9 of alice's process mid-turn: every team file still parses, the lead restarts
    her, she resumes her session (told she was restarted) and finishes her task."""
    from nyzhi.team_files.store import TeamStore

    asked = trio.Event()

    async def hold(_request):
        asked.set()
        await trio.sleep_forever()  # until the test kills the process that asked

    script = PerAgent({
        "LEAD-TASK": [
            _calls(tool_call("task_create", {"subject": "one"})),
            _calls(tool_call("send_team_message", {"to": "alice", "message": "ALICE-JOB: do 1"})),
            reply("assigned"),
            reply("the team finished"),
        ],
        "ALICE-JOB": [
            _calls(tool_call("task_update", {"task_id": "1", "status": "in_progress"})),
            hold,
            _calls(tool_call("task_update", {"task_id": "1", "status": "completed"})),
            _calls(tool_call("send_team_message", {"to": "lead", "message": "ALICE-DONE"})),
            reply("did task 1"),
        ],
    })
    env = nyz_env(home)
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(120):
            lead = await trio.lowlevel.open_process(
                [*NYZ, "team", "start", "crew", "--members", "alice:worker", "--task",
                 "LEAD-TASK", "--teammate-mode", "process", "--headless", "--output-format",
                 "stream-json"],
                cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            async with trio.open_nursery() as nursery:
                out, err = bytearray(), bytearray()

                async def drain(stream, buf):
                    while chunk := await stream.receive_some(65536):
                        buf += chunk

                nursery.start_soon(drain, lead.stdout, out)
                nursery.start_soon(drain, lead.stderr, err)
                await asked.wait()
                store = TeamStore(env)
                first = store.statuses("crew")["alice"]
                os.kill(first["pid"], signal.SIGKILL)
                code = await lead.wait()
        assert code == 0, err.decode()[-3000:]
    store = TeamStore(env)
    team_dir = store.team_dir("crew")
    for path in [*team_dir.rglob("*.json"), *store.board("crew").dir.glob("*.json")]:
        json.loads(path.read_text())  # nothing half-written
    alice = store.statuses("crew")["alice"]
    assert alice["restarts"] == 1 and alice["pid"] != first["pid"]
    assert store.board("crew").get("1").status == "completed"
    resumed = script.seen["ALICE-JOB"][2].transcript()
    assert any("was restarted" in text for role, text in resumed if role == "user")
    events = json_lines(bytes(out))
    assert events[-1]["result"] == "the team finished"
    assert ("alice", "lead") in [(e["sender"], e["to"]) for e in events
                                 if e["type"] == "team_message" and e["kind"] == "message"]


async def test_detached_teammates_outlive_the_lead_until_team_stop(workspace, home, configure):
    from nyzhi.team_files.store import TeamStore

    served = trio.Event()

    def answer(_request):
        served.set()
        return reply("got it")

    env = nyz_env(home)
    async with open_fake_llm(script=PerAgent({"AMY-JOB": [answer]})) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(120):
            started = await run_nyz(workspace, home, "team", "start", "det", "--members",
                                    "amy:worker", "--teammate-mode", "process", "--detach",
                                    "--headless")
            assert started.returncode == 0, started.stderr.decode()[-3000:]
            pid = TeamStore(env).statuses("det")["amy"]["pid"]
            assert _running(pid)  # still running after its lead exited
            sent = await run_nyz(workspace, home, "team", "send", "det", "amy", "AMY-JOB: hi")
            assert sent.returncode == 0, sent.stderr.decode()
            await served.wait()  # the detached teammate woke on the message
            stopped = await run_nyz(workspace, home, "team", "stop", "det")
        assert stopped.returncode == 0, stopped.stderr.decode()
        assert b"amy" in stopped.stdout
    assert await settled(lambda: [pid] if _running(pid) else []) == []
    assert TeamStore(env).statuses("det")["amy"]["status"] == "stopped"


def _running(pid: int) -> bool:
    """Alive and not a zombie (the detached member's parent, its lead, is gone; in a container
    nobody may reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_a_process_teammates_approval_is_answered_in_the_leads_chat(workspace, home,
                                                                          configure):
    """The lead's chat shows a process teammate's approval request (tagged with its path);
    the answer typed there goes down the teammate's pipe and its write happens."""
    script = PerAgent({
        "LEAD-TASK": [
            _calls(tool_call("send_team_message", {"to": "amy", "message": "AMY-JOB: write"})),
            reply("asked amy"),
        ],
        "AMY-JOB": [
            _calls(tool_call("write", {"file_path": "amy.txt", "content": "approved\n"})),
            reply("wrote it"),
        ],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await trio.lowlevel.open_process(
            [*NYZ, "team", "start", "ap", "--members", "amy:worker", "--teammate-mode",
             "process", "--task", "LEAD-TASK"],
            cwd=workspace, env=nyz_env(home), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL)
        out = bytearray()
        with trio.fail_after(60):
            await read_until(proc.stdout, out, b"Approve write")
            assert b"/team/ap/amy asks: Approve write" in out
            await proc.stdin.send_all(b"y\n")
            await read_until(proc.stdout, out, b"[amy] [write done]")
            await proc.stdin.send_all(b"/exit\n")
            assert await proc.wait() == 0
    assert (workspace / "amy.txt").read_text() == "approved\n"


async def test_team_name_flag_makes_the_session_a_lead(workspace, home, configure):
    """``--team-name`` (a global flag of the original) binds any session's main agent as the
    team's lead: the team is created, and the agent's team tools default to it."""
    script = PerAgent({"SOLO": [
        _calls(tool_call("task_create", {"subject": "from the lead"})), reply("made it")]})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "--team-name", "solo", "--ephemeral",
                             "SOLO")
    assert proc.returncode == 0, proc.stderr.decode()
    data = json.loads((await run_nyz(workspace, home, "team", "status", "solo", "--json")).stdout)
    assert [m["name"] for m in data["members"]] == ["lead"]
    assert [t["subject"] for t in data["tasks"]] == ["from the lead"]
