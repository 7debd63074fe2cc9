"""``nyz team start --worktrees``: each teammate writes in its own git worktree on its own
branch; ``nyz team merge`` brings the work back; ``nyz team delete`` removes the worktrees.
The worktree hooks fire."""

from __future__ import annotations

import subprocess

import pytest
import trio

from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call

HOOKS = """
[[agent.hooks]]
event = "worktree_create"
command = "echo created >> {log}"

[[agent.hooks]]
event = "worktree_remove"
command = "echo removed >> {log}"
"""


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@pytest.mark.parametrize("mode", ["in-process", "process"])
async def test_teammates_work_in_worktrees_that_merge_back(mode, workspace, home, configure,
                                                           tmp_path):
    _git(workspace, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
         "--allow-empty", "-m", "root")
    log = tmp_path / "hooks.log"
    script = PerAgent({
        "LEAD-TASK": [
            reply(tool_calls=[tool_call("send_team_message",
                                        {"to": "alice", "message": "ALICE-JOB: write notes"})]),
            reply("sent"),
        ],
        "ALICE-JOB": [
            reply(tool_calls=[tool_call("write", {"file_path": "notes.txt",
                                                  "content": "alice was here\n"})]),
            reply("wrote notes.txt"),
        ],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=HOOKS.format(log=log))
        with trio.fail_after(120):
            proc = await run_nyz(workspace, home, "team", "start", "wt", "--members",
                                 "alice:worker", "--worktrees", "--task", "LEAD-TASK",
                                 "--teammate-mode", mode, "--headless", "-y", "full")
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    tree = workspace / ".nyzhi" / "worktrees" / "alice"
    assert (tree / "notes.txt").read_text() == "alice was here\n"
    assert not (workspace / "notes.txt").exists()  # alice wrote in her worktree only
    assert "nyz/wt/alice" in _git(tree, "branch", "--show-current")
    assert ".nyzhi/worktrees" not in _git(workspace, "status", "--porcelain")

    merged = await run_nyz(workspace, home, "team", "merge", "wt", "alice")
    assert merged.returncode == 0, merged.stderr.decode()
    assert (workspace / "notes.txt").read_text() == "alice was here\n"

    deleted = await run_nyz(workspace, home, "team", "delete", "wt")
    assert deleted.returncode == 0, deleted.stderr.decode()
    assert not tree.exists()
    assert "nyz/wt/alice" in _git(workspace, "branch", "--list", "nyz/wt/alice")  # work kept
    assert log.read_text().split() == ["created", "removed"]
