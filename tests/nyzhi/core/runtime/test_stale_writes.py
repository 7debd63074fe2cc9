"""The stale-write guard (issue 41): a write to a file that changed since the agent read it is
refused, naming who changed it, and nothing is written.

Through ``nyz run`` as a user runs it: a real subprocess, the scripted model on loopback, real
files, and real bash making the "outside" change.
"""

from __future__ import annotations

import json

import trio
from _scripted_run import TRUST, answer_last, run

from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import FakeRequest, PerAgent, open_fake_llm, reply, tool_call

SUMMARISER = "You write precise working summaries"  # the compaction request's system prompt


def write(path: str, content: str):
    return reply(tool_calls=[tool_call("write", {"file_path": path, "content": content})])


def read(path: str):
    return reply(tool_calls=[tool_call("read", {"file_path": path})])


def bash(command: str):
    return reply(tool_calls=[tool_call("bash", {"command": command})])


def tool_errors(events: list[dict]) -> list[str]:
    return [e["output"] for e in events if e["type"] == "tool_done" and e.get("is_error")]


async def test_read_then_outside_change_then_write_is_refused(workspace, home, configure):
    f = workspace / "f.txt"
    f.write_text("one\n")
    events, server = await run(workspace, home, configure, [
        read("f.txt"),
        bash("echo theirs >> f.txt"),
        write("f.txt", "mine\n"),
        answer_last,
    ])
    assert f.read_text() == "one\ntheirs\n"  # the outside change survived; nothing written
    [refusal] = tool_errors(events)
    assert "changed outside nyz" in refusal and "Read it again" in refusal
    assert "Nothing was written" in server.requests[-1].tool_results()[-1]


async def test_edit_with_a_unique_old_text_still_needs_an_unchanged_file(
    workspace, home, configure
):
    f = workspace / "f.txt"
    f.write_text("a = 1\nb = 2\n")
    events, _ = await run(workspace, home, configure, [
        read("f.txt"),
        bash("sed -i 's/b = 2/b = 3/' f.txt"),
        reply(tool_calls=[tool_call("edit", {"file_path": "f.txt", "old_string": "a = 1",
                                             "new_string": "a = 10"})]),
        answer_last,
    ])
    assert f.read_text() == "a = 1\nb = 3\n"
    assert "changed outside nyz" in tool_errors(events)[0]


async def test_read_own_write_then_second_write_is_allowed(workspace, home, configure):
    f = workspace / "f.txt"
    f.write_text("one\n")
    events, _ = await run(workspace, home, configure, [
        read("f.txt"),
        write("f.txt", "two\n"),
        reply(tool_calls=[tool_call("edit", {"file_path": "f.txt", "old_string": "two",
                                             "new_string": "three"})]),
        write("f.txt", "four\n"),
        answer_last,
    ])
    assert tool_errors(events) == []
    assert f.read_text() == "four\n"


async def test_blind_write_to_an_existing_file_is_refused_and_a_new_file_is_not(
    workspace, home, configure
):
    f = workspace / "f.txt"
    f.write_text("precious\n")
    events, _ = await run(workspace, home, configure, [
        write("f.txt", "clobbered\n"),
        reply(tool_calls=[tool_call("apply_patch", {"patch": (
            "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-precious\n+patched\n")})]),
        write("new.txt", "fresh\n"),
        answer_last,
    ])
    assert f.read_text() == "precious\n"
    errors = tool_errors(events)
    assert len(errors) == 2
    assert all("you have not read it" in e for e in errors)
    assert (workspace / "new.txt").read_text() == "fresh\n"


async def test_guard_off_restores_blind_writes(workspace, home, configure):
    f = workspace / "f.txt"
    f.write_text("old\n")
    events, _ = await run(workspace, home, configure, [write("f.txt", "new\n"), answer_last],
                          extra=TRUST + "[agent]\nstale_write_guard = false\n")
    assert tool_errors(events) == []
    assert f.read_text() == "new\n"


async def test_a_subagent_write_over_another_subagents_change_is_refused_naming_it(
    workspace, home, configure
):
    """A reads, B reads and edits, then A writes: refused, naming B's path."""
    target = workspace / "app.py"
    target.write_text("a = 1\n")
    b_done = trio.Event()

    async def a_writes_after_b(_req):
        await b_done.wait()
        return write("app.py", "a = 'from A'\n")

    def b_finished(req):
        b_done.set()
        return reply("B done")

    agents = PerAgent({
        "MAIN": [
            reply(tool_calls=[
                tool_call("spawn_agent", {"message": "AGENT-A go", "agent_type": "worker"}),
                tool_call("spawn_agent", {"message": "AGENT-B go", "agent_type": "worker"}),
            ]),
            reply(tool_calls=[tool_call("wait", {"ids": ["/agents/main/worker-1"]})]),
            reply(tool_calls=[tool_call("wait", {"ids": ["/agents/main/worker-2"]})]),
            reply("all done"),
        ],
        "AGENT-A": [read("app.py"), a_writes_after_b, answer_last],
        "AGENT-B": [
            read("app.py"),
            reply(tool_calls=[tool_call("edit", {"file_path": "app.py", "old_string": "a = 1",
                                                 "new_string": "a = 2"})]),
            b_finished,
        ],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"), extra=TRUST)
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "MAIN go")
    assert proc.returncode == 0, proc.stderr.decode()
    assert target.read_text() == "a = 2\n"  # B's change kept
    # MAIN's second request answers its two spawn_agent calls, A's first
    a_id, b_id = (json.loads(r)["agent_id"] for r in agents.seen["MAIN"][1].tool_results())
    a_results = agents.seen["AGENT-A"][-1].tool_results()
    assert f"changed by {b_id} since you last read it" in a_results[-1], (a_id, a_results)


async def test_a_subagent_does_not_inherit_its_parents_reads(workspace, home, configure):
    target = workspace / "app.py"
    target.write_text("a = 1\n")
    agents = PerAgent({
        "MAIN": [
            read("app.py"),
            reply(tool_calls=[tool_call("spawn_agent", {"message": "CHILD go",
                                                        "agent_type": "worker"})]),
            reply(tool_calls=[tool_call("wait", {"ids": ["/agents/main/worker-1"]})]),
            reply("done"),
        ],
        "CHILD": [write("app.py", "child\n"), answer_last],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"), extra=TRUST)
        proc = await run_nyz(workspace, home, "run", "MAIN go")
    assert proc.returncode == 0, proc.stderr.decode()
    assert target.read_text() == "a = 1\n"
    assert "you have not read it" in agents.seen["CHILD"][-1].tool_results()[-1]


async def test_the_ledger_survives_continue(workspace, home, configure):
    """Run 1 reads; run 2 (--continue) may write without reading again, but an outside
    change between the runs is still caught."""
    f = workspace / "f.txt"
    f.write_text("one\n")
    await run(workspace, home, configure, [read("f.txt"), reply("read it")])
    events, _ = await run(workspace, home, configure, [write("f.txt", "two\n"), answer_last],
                          "--continue")
    assert tool_errors(events) == [] and f.read_text() == "two\n"
    f.write_text("outside\n")
    events, _ = await run(workspace, home, configure, [write("f.txt", "three\n"), answer_last],
                          "--continue")
    assert "changed outside nyz" in tool_errors(events)[0]
    assert f.read_text() == "outside\n"


async def test_the_ledger_survives_compaction_and_resume_after_it(workspace, home, configure):
    f = workspace / "f.txt"
    f.write_text("one\n")
    turns = {
        "read it": [read("f.txt"), reply("read")],
        "write it": [write("f.txt", "two\n"), reply("written")],
        "again": [write("f.txt", "three\n"), reply("written again")],
    }

    def script(request: FakeRequest):
        if any(role == "system" and SUMMARISER in text for role, text in request.transcript()):
            return reply("")  # an empty summary: only the state record carries on
        return turns[request.last_user_text()].pop(0)

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            outcome = await (await rt.submit("read it")).wait()
            assert not outcome.is_error
            await rt.compact()
            outcome = await (await rt.submit("write it")).wait()
            assert not outcome.is_error
            await rt.compact()
            session_id = rt.session_id
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full",
                                               session=session_id)) as rt:
            outcome = await (await rt.submit("again")).wait()
    assert f.read_text() == "three\n"
    assert not any("have not read" in t or "changed" in t
                   for r in server.requests for t in r.tool_results())
