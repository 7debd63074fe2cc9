"""The environment snapshot: real git repositories in every state the prompt describes."""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

from nyzhi import convert
from nyzhi.config.workspace import detect_workspace
from nyzhi.core import events as ev
from nyzhi.core.prompt_env import (
    Environment,
    git_state,
    read_environment,
    recorded_environment,
    take_environment,
)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)


def test_git_state_in_every_state(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "trunk")
    assert git_state(repo) == (True, "trunk", False)  # no commits yet, nothing in it
    (repo / "a.txt").write_text("a\n")
    assert git_state(repo) == (True, "trunk", True)  # untracked counts as dirty
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a")
    assert git_state(repo) == (True, "trunk", False)
    (repo / "a.txt").write_text("b\n")
    assert git_state(repo) == (True, "trunk", True)
    git(repo, "checkout", "-q", "--detach")
    assert git_state(repo)[1] == "(detached)"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_state(plain) == (False, None, None)


def test_take_environment_reads_the_workspace_once(tmp_path, home):
    project = tmp_path / "p"
    project.mkdir()
    (project / "Cargo.toml").write_text("[package]\n")
    git(project, "init", "-q", "-b", "main")
    env = take_environment(detect_workspace(project), today=datetime.date(2026, 11, 23))
    assert env.date == "2026-11-23" and env.project_type == "rust"
    assert (env.in_git, env.git_branch, env.git_dirty) == (True, "main", True)
    assert env.platform


def test_snapshot_round_trips_and_tolerates_old_logs():
    env = Environment("Linux x86_64", "2026-11-23", "go", "dev", True, True)
    assert read_environment(convert.unstructure(env)) == env
    assert read_environment(None) is None and read_environment("x") is None
    assert read_environment({"git_dirty": "yes", "date": 5}) == Environment(date="5")


def test_recorded_environment_takes_the_first_session_start_that_has_one():
    first = Environment(date="2026-11-01", git_branch="a")
    events = [
        ev.SessionStart("s"),  # a log written before the prompt field existed
        ev.TurnStart("t"),
        ev.SessionStart("s", prompt={"environment": convert.unstructure(first)}),  # from a log
        ev.SessionStart("s", prompt={"environment": Environment(date="2026-11-02")}),  # live
    ]
    assert recorded_environment(events) == first
    assert recorded_environment(events[:2]) is None
