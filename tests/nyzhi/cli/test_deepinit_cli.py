"""``nyz deepinit`` and ``/init-deep`` (issue 37): three real ``explorer`` subagents (scripted
by the fake LLM) study the project; the commands they report run in the sandbox through the
verify tool's gates, and only those that passed are written, which the marker files each
command leaves prove; an existing AGENTS.md is replaced only with --force, after a diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply

MAKEFILE = """\
test:
\ttouch test-ran.marker
lint:
\ttouch lint-ran.marker && exit 3
"""
COMMANDS = ("build: touch build-ran.marker\n"
            "test: make test\n"
            "lint: make lint\n")
LAYOUT = "- src/: the code\n- Makefile: the checks"
CONVENTIONS = "- Tabs in Makefiles\n- Tests under tests/"


def explorers() -> PerAgent:
    return PerAgent({
        "[deepinit:commands]": [reply(COMMANDS)],
        "[deepinit:layout]": [reply(LAYOUT)],
        "[deepinit:conventions]": [reply(CONVENTIONS)],
    })


def project(workspace: Path) -> None:
    (workspace / "Makefile").write_text(MAKEFILE)
    (workspace / "src").mkdir()


async def deepinit(workspace: Path, home: Path, *args: str):
    with trio.fail_after(90):
        return await run_nyz(workspace, home, "deepinit", *args)


async def test_deepinit_writes_the_commands_that_ran_and_passed(workspace, home, configure):
    project(workspace)
    script = explorers()
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await deepinit(workspace, home, "--run-checks")
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    # every explorer asked once, as the read-only explorer role (no write or bash tool)
    for key, seen in script.seen.items():
        assert len(seen) == 1, key
        assert "read" in seen[0].tool_names() and "bash" not in seen[0].tool_names()
        assert "write" not in seen[0].tool_names()
    # the commands ran, in the workspace, sandboxed
    for marker in ("build-ran.marker", "test-ran.marker", "lint-ran.marker"):
        assert (workspace / marker).exists(), marker
    text = (workspace / "AGENTS.md").read_text()
    assert "- build: `touch build-ran.marker`" in text and "- test: `make test`" in text
    assert "make lint" not in text  # it failed: not written
    assert "SKIP lint: make lint (exit 2)" in err
    assert f"## Layout\n\n{LAYOUT}\n" in text and f"## Conventions\n\n{CONVENTIONS}\n" in text
    # the diff came first, on stdout: the whole new file
    out = proc.stdout.decode()
    assert out.startswith("--- /dev/null\n+++ b/AGENTS.md\n")
    assert "+- test: `make test`" in out
    # the explorers are in the session journal, with their role
    stats = await run_nyz(workspace, home, "stats", "--by", "agent", "--json")
    assert set(json.loads(stats.stdout)["groups"]) == {"explorer"}


async def test_without_approval_nothing_runs_and_nothing_is_claimed(workspace, home, configure):
    project(workspace)
    async with open_fake_llm(script=explorers()) as server:
        configure(workspace, server.url_for("openai"))
        proc = await deepinit(workspace, home)
    assert proc.returncode == 0, proc.stderr.decode()
    assert not list(workspace.glob("*.marker"))
    text = (workspace / "AGENTS.md").read_text()
    assert "No build, test or lint command could be verified." in text
    assert "SKIP build: touch build-ran.marker (not run:" in proc.stderr.decode()


async def test_an_existing_file_needs_force_and_the_diff_shows_first(workspace, home, configure):
    project(workspace)
    (workspace / "AGENTS.md").write_text("# Hand written\n\nKeep me.\n")
    async with open_fake_llm(script=explorers()) as server:
        configure(workspace, server.url_for("openai"))
        proc = await deepinit(workspace, home)
    assert proc.returncode == 1
    assert (workspace / "AGENTS.md").read_text() == "# Hand written\n\nKeep me.\n"
    out = proc.stdout.decode()
    assert out.startswith("--- a/AGENTS.md\n+++ b/AGENTS.md\n")
    assert "-Keep me." in out and f"+# {workspace.name}" in out
    assert "run with --force to replace it" in proc.stderr.decode()

    async with open_fake_llm(script=explorers()) as server:
        configure(workspace, server.url_for("openai"))
        proc = await deepinit(workspace, home, "--force")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "Keep me." not in (workspace / "AGENTS.md").read_text()
    assert "## Layout" in (workspace / "AGENTS.md").read_text()


async def test_slash_init_deep_asks_before_running_the_commands(workspace, home, configure):
    project(workspace)
    async with open_fake_llm(script=explorers()) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(90):
            proc = await run_nyz(workspace, home, "chat", "--plain",
                                 stdin=b"/init-deep\ny\n/exit\n")
    out = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 0, out
    assert "verify" in out  # the approval asked about the verify tool's commands
    assert (workspace / "test-ran.marker").exists()
    assert "- test: `make test`" in (workspace / "AGENTS.md").read_text()
    assert "+++ b/AGENTS.md" in out and "wrote" in out


def test_init_deep_is_in_the_command_registry():
    from nyzhi.core.runtime.commands import COMMANDS

    assert COMMANDS["init-deep"].idle_only and not COMMANDS["init-deep"].needs


async def test_init_deep_in_the_console_asks_in_its_approval_dialog(workspace, home, configure):
    from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

    if not TmuxPane.available():
        pytest.skip("tmux is not installed")
    project(workspace)
    async with open_fake_llm(script=explorers()) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "/init-deep")
            screen = await pane.wait_for("Approve verify?", limit_s=60)
            assert "make test" in screen
            assert not (workspace / "test-ran.marker").exists()
            await pane.keys("y")
            await pane.wait_for("\nwrote", limit_s=60)
    assert (workspace / "test-ran.marker").exists()
    assert "- test: `make test`" in (workspace / "AGENTS.md").read_text()


async def test_init_deep_in_the_web_console_is_approved_by_the_same_viewer(
        workspace, home, configure):
    """The web console reads a viewer's messages one by one: the command runs in a task, so
    the approval its commands need can come from the viewer that sent it."""
    from nyzhi.testing.web import event_type, serve_nyz

    project(workspace)
    async with open_fake_llm(script=explorers()) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home) as srv, srv.connect() as client:
            await client.hello()
            await client.send({"type": "command", "line": "/init-deep"})
            asked = await client.until(lambda m: event_type(m) == "approval_request")
            assert asked["event"]["tool"] == "verify"
            await client.send({"type": "approve", "request_id": asked["event"]["request_id"],
                               "answer": "approve"})
            await client.until(lambda m: m["type"] == "output" and "wrote" in m["text"])
    assert (workspace / "test-ran.marker").exists()
    assert "- test: `make test`" in (workspace / "AGENTS.md").read_text()
