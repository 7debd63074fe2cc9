"""Memory, skills, custom commands and plan mode as a user meets them: ``nyz run`` and the line
chat in real subprocesses, real HTTP to the scripted fake LLM, real files."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from nyzhi.knowledge.memory import MemoryStore
from nyzhi.testing.cli import read_until, start_chat
from nyzhi.testing.cli import run_nyz as nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


def system_text(request) -> str:
    return "\n".join(text for role, text in request.transcript() if role == "system")


def tool_names(request) -> set[str]:
    return {t["function"]["name"] for t in request.json.get("tools") or ()}


def skill(root: Path, rel: str, name: str, description: str, body: str) -> None:
    path = root / rel / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")


async def test_memory_written_in_one_session_is_recalled_in_the_next(workspace, home, configure):
    intro = "Unit tests run with pytest -q."
    note = "Run the integration tests with make itest; they need the fake S3 on port 9000."
    first = [
        reply(tool_calls=[tool_call("memory_write", {"topic": "testing", "content": intro}),
                          tool_call("memory_write", {"topic": "testing", "content": note})]),
        reply("noted"),
    ]
    async with open_fake_llm(script=first) as server:
        configure(workspace, server.url_for("openai"))
        proc = await nyz(workspace, home, "run", "-y", "full", "remember how to run itests")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "saved in project memory" in server.requests[1].tool_results()[0]
    assert note in (MemoryStore.for_workspace(workspace).read_topic("testing") or "")

    async with open_fake_llm(script=[reply("use make itest")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await nyz(workspace, home, "run", "how do I run the integration tests?")
    assert proc.returncode == 0, proc.stderr.decode()
    [request] = server.requests
    sent = request.last_user_text()
    assert sent.startswith("how do I run the integration tests?")
    assert "<recalled_memory>" in sent and note in sent  # the relevant fact rides along
    # the project index (each topic's first line) is in the prompt, so it is not recalled again
    assert f"testing: {intro}" in system_text(request) and intro not in sent

    # auto_memory = false: neither the index nor recall
    async with open_fake_llm(script=[reply("?")]) as server:
        configure(workspace, server.url_for("openai"), extra="[memory]\nauto_memory = false\n")
        proc = await nyz(workspace, home, "run", "how do I run the integration tests?")
    assert proc.returncode == 0, proc.stderr.decode()
    assert note not in server.requests[0].last_user_text()
    assert "memory_read(topic)" not in system_text(server.requests[0])


async def test_nyz_memory_commands(workspace, home):
    store = MemoryStore.for_workspace(workspace)
    store.write("build", "Build with make.")
    store.write("style", "Short answers.", scope="user")
    proc = await nyz(workspace, home, "memory", "list")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "build: Build with make." in proc.stdout.decode()
    proc = await nyz(workspace, home, "memory", "show", "build")
    assert proc.stdout.decode().strip() == "# build\n\nBuild with make."
    proc = await nyz(workspace, home, "memory", "show", "nope")
    assert proc.returncode == 1 and "project topics: build" in proc.stderr.decode()
    proc = await nyz(workspace, home, "memory", "clear")  # stdin not a tty, no --yes
    assert proc.returncode == 1 and "--yes" in proc.stderr.decode()
    assert store.topics() == ["build"]
    proc = await nyz(workspace, home, "memory", "clear", "--yes")
    assert proc.returncode == 0 and store.topics() == [] and store.read_user()


async def test_skills_from_nyzhi_and_claude(workspace, home, configure):
    skill(workspace, ".nyzhi/skills", "release", "Cut a release", "RELEASE STEPS: tag, push.")
    skill(workspace, ".claude/skills", "pdf", "Fill PDF forms", "PDF BODY: use pdftk.")
    skill(workspace, ".claude/skills", "release", "shadowed", "CLAUDE RELEASE")
    script = [
        reply(tool_calls=[tool_call("load_skill", {"name": "pdf"}),
                          tool_call("load_skill", {"name": "release"})]),
        reply("ok"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await nyz(workspace, home, "run", "fill the form")
    assert proc.returncode == 0, proc.stderr.decode()
    system = system_text(server.requests[0])
    assert "pdf: Fill PDF forms" in system and "release: Cut a release" in system
    assert "PDF BODY" not in system and "RELEASE STEPS" not in system  # only the index
    pdf, release = server.requests[1].tool_results()
    assert "PDF BODY: use pdftk." in pdf and "name: pdf" not in pdf
    assert "RELEASE STEPS" in release and "CLAUDE RELEASE" not in release


async def test_nyz_run_expands_custom_commands_from_each_source(workspace, home, configure):
    (workspace / ".nyzhi/commands").mkdir()
    (workspace / ".nyzhi/commands/review.md").write_text(
        "# Review code\nReview $ARGUMENTS for bugs.\n")
    (workspace / ".claude/commands").mkdir(parents=True)
    (workspace / ".claude/commands/explain.md").write_text(
        "---\ndescription: Explain\n---\nExplain $1 to a newcomer, then $2.\n")
    extra = '[[agent.commands]]\nname = "ship"\nprompt = "Ship it"\n'
    script = [reply(x) for x in "abcde"]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        for prompt in ("/review src/app.py", "/explain gates.py summarise", "/ship now",
                       "/etc/hosts stays as typed", "//review is sent with one slash"):
            proc = await nyz(workspace, home, "run", "--ephemeral", prompt)
            assert proc.returncode == 0, proc.stderr.decode()
        # the one rule of every front end: an unknown /x is said, and nothing is sent
        proc = await nyz(workspace, home, "run", "--ephemeral", "/unknown stays as typed")
        assert proc.returncode == 1
        assert "unknown command /unknown (not sent to the model)" in proc.stderr.decode()
    sent = [r.last_user_text() for r in server.requests]
    assert sent[0] == "Review src/app.py for bugs."
    assert sent[1] == "Explain gates.py to a newcomer, then summarise."
    assert sent[2] == "Ship it\n\nARGUMENTS: now"
    assert sent[3] == "/etc/hosts stays as typed"
    assert sent[4] == "/review is sent with one slash"
    assert len(sent) == 5


async def test_plan_mode_blocks_a_write_and_writes_the_plan(workspace, home, configure):
    plan = {"name": "Add a flag", "overview": "Add --dry-run", "plan": "1. edit cli.py",
            "todos": [{"id": "1", "content": "edit cli.py"}]}
    script = [
        reply(tool_calls=[tool_call("write", {"file_path": "cli.py", "content": "x"})]),
        reply(tool_calls=[tool_call("create_plan", plan)]),
        reply("Plan ready."),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await nyz(workspace, home, "run", "--plan", "-y", "full",
                         "--output-format", "stream-json", "add a dry-run flag")
    assert proc.returncode == 0, proc.stderr.decode()
    assert not (workspace / "cli.py").exists()
    [denied] = server.requests[1].tool_results()
    assert denied.startswith("Permission denied (plan mode)")
    names = tool_names(server.requests[0])
    assert {"read", "grep", "create_plan"} <= names and not names & {"write", "bash", "edit"}
    assert "<plan_mode>" in server.requests[0].last_user_text()
    session = json.loads(proc.stdout.decode().splitlines()[0])["session_id"]
    written = (workspace / ".nyzhi/plans" / f"{session}.plan.md").read_text()
    assert written.startswith('---\nname: "Add a flag"') and "1. edit cli.py" in written
    assert '"id": "1"' in written


async def test_line_chat_plan_toggle_executes_the_plan(workspace, home, configure):
    plan = {"name": "P", "plan": "step one", "todos": []}
    script = [
        reply(tool_calls=[tool_call("create_plan", plan)]),
        reply("planned"),
        reply("executed"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra="[agent.trust]\nmode = \"full\"\n")
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"/plan\n")
        await read_until(proc.stdout, out, b"[plan mode on")
        await proc.stdin.send_all(b"plan the change\n")
        await read_until(proc.stdout, out, b"planned")
        await read_until(proc.stdout, out, b"planned\n> ")
        await proc.stdin.send_all(b"/plan\n")
        await read_until(proc.stdout, out, b"executed")
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            assert await proc.wait() == 0
    assert "write" not in tool_names(server.requests[0])
    last = server.requests[2]
    assert "write" in tool_names(last)
    assert last.last_user_text().startswith("Plan mode is off. Execute the plan in ")
    assert ".plan.md" in last.last_user_text() and "<plan_mode>" not in last.last_user_text()


async def test_replay_json_prints_what_stream_json_printed_less_what_is_not_recorded(
        workspace, home, configure):
    """docs/architecture.md says exactly what ``nyz replay --json`` prints: the recorded
    events of the run, in order, as stream-json printed them; not the deltas (their text is in
    the messages and each turn_complete) nor the result (computed by ``nyz run`` at exit); and,
    after them, the agent_status events of the session's close."""
    import json

    from nyzhi.testing.fake_llm import tool_call

    script = [reply(tool_calls=[tool_call("list_dir", {"path": "."})]), reply("all done")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra='[agent.trust]\nmode = "full"\n')
        run = await nyz(workspace, home, "run", "--output-format", "stream-json", "look")
        assert run.returncode == 0, run.stderr.decode()
    streamed = [json.loads(line) for line in run.stdout.splitlines()]
    replay = await nyz(workspace, home, "replay", "--json", streamed[0]["session_id"][:8])
    assert replay.returncode == 0, replay.stderr.decode()
    replayed = [json.loads(line) for line in replay.stdout.splitlines()]
    not_recorded = {"text_delta", "thinking_delta", "tool_output_delta", "result"}
    assert {e["type"] for e in streamed} & not_recorded == {"text_delta", "result"}

    def without_status(events: list[dict]) -> list[dict]:
        return [e for e in events if e["type"] not in not_recorded | {"agent_status"}]

    assert without_status(replayed) == without_status(streamed)  # the same JSON, in order
    # every status stream-json printed is in the log, in order; the log has all of them
    statuses = [e for e in replayed if e["type"] == "agent_status"]
    printed = iter(statuses)
    assert all(any(e == r for r in printed) for e in streamed if e["type"] == "agent_status")
    assert statuses[-1]["status"] == "shutdown"
