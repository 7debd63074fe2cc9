"""/review, /verify, /qa, /handoff and /context, driven through the line chat like a person,
against the scripted fake LLM, real git and the real sandbox."""

from __future__ import annotations

import subprocess

import trio

from nyzhi.testing.cli import read_until, start_chat
from nyzhi.testing.fake_llm import open_fake_llm, reply


def git(ws, *args):
    subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True)


def committed(ws):
    git(ws, "config", "user.email", "t@example.com")
    git(ws, "config", "user.name", "T")
    (ws / "app.py").write_text("def total(xs):\n    return sum(xs)\n")
    git(ws, "add", "app.py")
    git(ws, "commit", "-qm", "first")


async def chat(ws, home, lines, *, until):
    """Send ``lines`` (each waits for its marker in ``until``), then /exit; the output."""
    proc, out = await start_chat(ws, home)
    for line, marker in zip(lines, until, strict=True):
        await proc.stdin.send_all(line.encode() + b"\n")
        await read_until(proc.stdout, out, marker.encode())
    await proc.stdin.send_all(b"/exit\n")
    with trio.fail_after(30):
        assert await proc.wait() == 0
    return out.decode()


async def test_review_hands_the_working_diff_to_a_reviewer_and_shows_its_findings(
        workspace, home, configure):
    committed(workspace)
    (workspace / "app.py").write_text("def total(xs):\n    return sum(xs[1:])\n")
    (workspace / "new_module.py").write_text("X = 1\n")
    async with open_fake_llm(script=[reply("BLOCKER app.py:2 drops the first item")]) as server:
        configure(workspace, server.url_for("openai"))
        out = await chat(workspace, home, ["/review"], until=["drops the first item"])
    assert "reviewer-1 is reviewing the working changes" in out
    [request] = server.requests
    task = request.last_user_text()
    assert "-    return sum(xs)" in task and "+    return sum(xs[1:])" in task
    assert "new untracked file: new_module.py" in task
    assert "review" in request.system_text().lower()
    # the reviewer role is read-only: it was offered no tool that changes files
    assert "write" not in request.tool_names() and "edit" not in request.tool_names()


async def test_review_of_a_ref_and_refusals(workspace, home, configure):
    committed(workspace)
    (workspace / "app.py").write_text("def total(xs):\n    return 0\n")
    git(workspace, "commit", "-qam", "second")
    async with open_fake_llm(script=[reply("LGTM")]) as server:
        configure(workspace, server.url_for("openai"))
        out = await chat(workspace, home,
                         ["/review --output=/tmp/x", "/review no-such-ref", "/review HEAD~1"],
                         until=["is not a git ref", "git diff failed", "LGTM"])
    assert not (workspace.parent / "x").exists()
    [request] = server.requests  # only the valid ref reached a model
    assert "+    return 0" in request.last_user_text()
    assert "the diff against HEAD~1" in out


async def test_review_with_nothing_changed_asks_no_model(workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        committed(workspace)
        git(workspace, "add", "-A")
        git(workspace, "commit", "-qm", "config")
        await chat(workspace, home, ["/review"], until=["nothing to review"])
    assert server.requests == []


def makefile(ws, recipe):
    (ws / "Makefile").write_text(f"test:\n\t{recipe}\n")


async def test_verify_runs_the_checks_sandboxed_and_reports(workspace, home, configure):
    # the check also tries to plant a git hook: the sandbox must stop it
    makefile(workspace, "@echo all good > result.txt; echo evil > .git/hooks/pre-commit; true")
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        out = await chat(workspace, home, ["/verify"], until=["checks passed"])
    assert "1/1 checks passed" in out and "PASS test: make test" in out
    assert (workspace / "result.txt").read_text() == "all good\n"
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert server.requests == []  # no model involved


async def test_verify_reports_a_failure_and_deny_rules_still_hold(workspace, home, configure):
    makefile(workspace, "@echo broken-test >&2; exit 3")
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        out = await chat(workspace, home, ["/verify"], until=["checks passed"])
        assert "0/1 checks passed" in out and "FAIL test" in out and "broken-test" in out
        configure(workspace, server.url_for("openai"),
                  extra='[agent.trust]\ndeny_commands = ["make*"]\n')
        out = await chat(workspace, home, ["/verify"], until=["make*"])
    assert "checks passed" not in out


async def test_qa_sends_the_failures_to_the_agent(workspace, home, configure):
    makefile(workspace, "@echo assertion-failed-in-test_total >&2; exit 1")
    async with open_fake_llm(script=[reply("Fixed total(); the check passes now.")]) as server:
        configure(workspace, server.url_for("openai"))
        out = await chat(workspace, home, ["/qa"], until=["the check passes now"])
    assert "the agent is fixing what failed" in out
    [request] = server.requests
    assert request.last_user_text().startswith("QA: these checks fail.")
    assert "assertion-failed-in-test_total" in request.last_user_text()


async def test_qa_with_passing_checks_asks_no_model(workspace, home, configure):
    makefile(workspace, "@true")
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        await chat(workspace, home, ["/qa"], until=["1/1 checks passed"])
    assert server.requests == []


async def test_handoff_writes_a_note_for_the_next_session(workspace, home, configure):
    committed(workspace)
    script = [reply("Sure, noted."), reply("Goal: fix total(). Next steps: run make test.")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        out = await chat(workspace, home,
                         ["please remember the total bug (key sk-test-key)", "/handoff"],
                         until=["Sure, noted.", "handoff written to"])
    [note] = list((workspace / ".nyzhi").glob("handoff-*.md"))
    text = note.read_text()
    assert "Goal: fix total(). Next steps: run make test." in text
    assert "please remember the total bug" in text  # the state record's first request
    assert "sk-test-key" not in text  # the provider's key, typed into the prompt: redacted
    assert "session:" in text and "fake/fake-model-1" in text
    assert "Write a handoff note" in server.requests[1].last_user_text()
    status = (await trio.run_process(["git", "-C", str(workspace), "status", "--porcelain"],
                                     capture_stdout=True)).stdout.decode()
    assert "handoff" not in status  # never committed by accident
    assert str(note) in out


async def test_context_shows_what_fills_the_window(workspace, home, configure):
    async with open_fake_llm(script=[reply("hello " * 300)]) as server:
        configure(workspace, server.url_for("openai"))
        out = await chat(workspace, home, ["say hello a lot", "/context"],
                         until=["hello hello", "free"])
    report = out.split("context: ~", 1)[1]
    for part in ("system prompt", "tool definitions", "your messages (1)",
                 "answers and tool calls (1)", "tool results", "free"):
        assert part in report, part
    assert "of 128,000 tokens" in report or "tokens (" in report


async def test_verify_keeps_plan_mode(workspace, home, configure):
    makefile(workspace, "@echo ran > ran.txt")
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        out = await chat(workspace, home, ["/plan", "/verify"],
                         until=["plan mode on", "blocked in plan mode"])
    assert "checks passed" not in out
    assert not (workspace / "ran.txt").exists()
