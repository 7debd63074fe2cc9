"""The facts about the machine and project that the system prompt states, taken once per session.

Why once: providers cache a request's prefix (tools, then system prompt) only while it stays
byte-identical, so anything in the prompt that could drift between steps (the clock, the git
working tree) is read when the session starts and frozen. The date therefore has day
granularity and the git state is labelled "at session start". A resumed session reuses the
snapshot recorded in its first ``session_start`` event, so its prefix matches the original run
and the provider's cache still applies.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nyzhi import convert, records

GIT_TIMEOUT_S = 2.0  # a huge repository must not hold up start-up; the flag is then unknown


def _text(value: Any) -> str:
    return str(value or "")


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _opt_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


# Read leniently: a field of the wrong shape is unknown (None) rather than an error, so an
# older or damaged log still resumes (its snapshot, or a fresh one, is used).
@convert.wire(read={"platform": _text, "date": _text, "project_type": _opt_str,
                    "git_branch": _opt_str, "git_dirty": _opt_bool, "in_git": _opt_bool})
@records.frozen
class Environment:
    """What the prompt's environment block says. ``None`` means unknown (left out).

    In a ``session_start`` event's ``prompt`` it is this object; its JSON form (the one
    converter's) is a plain object of these fields."""

    platform: str = ""
    date: str = ""  # YYYY-MM-DD
    project_type: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None  # None: git could not tell
    in_git: bool | None = None  # False: git says this is not a repository; None: unknown


def read_environment(data: Any) -> Environment | None:
    """The snapshot recorded in a session log (or already one), or None when it is missing
    or not an object (an older log): the caller then takes a fresh one."""
    if isinstance(data, Environment) or data is None:
        return data
    try:
        return convert.structure(data, Environment, "environment snapshot")
    except convert.RecordError:
        return None


def git_state(root: Path) -> tuple[bool | None, str | None, bool | None]:
    """(in a repository, branch, dirty) from one ``git status`` run. Unknowns are None (git
    missing or too slow); outside a repository it is (False, None, None). A detached HEAD
    reports its branch as "(detached)"."""
    from nyzhi.tools.gitsafe import run_git

    try:
        # neutralised (nyzhi.tools.gitsafe): a repository's config must not make start-up run
        # its commands (fsmonitor, a clean filter on a changed file...)
        proc = run_git(
            root, "status", "--porcelain=v1", "--branch", "--untracked-files=normal",
            timeout=GIT_TIMEOUT_S,
            # English messages to parse; no index lock, so a concurrent git command never fails
            env={**os.environ, "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None, None, None
    if proc.returncode != 0:
        not_repo = b"not a git repository" in proc.stderr
        return (False if not_repo else None), None, None
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    branch: str | None = None
    if lines and lines[0].startswith("## "):
        head = lines[0][3:]
        if head.startswith("No commits yet on "):
            branch = head[len("No commits yet on "):]
        elif head.startswith("HEAD (no branch)"):
            branch = "(detached)"
        else:
            branch = head.split("...", 1)[0].split(" ", 1)[0]
        lines = lines[1:]
    return True, branch, any(line.strip() for line in lines)


def take_environment(workspace: Any, *, today: datetime.date | None = None) -> Environment:
    """A fresh snapshot for ``workspace`` (a ``nyzhi.config.workspace.Workspace``). Blocking:
    runs ``git status`` once, so call it from a worker thread in async code."""
    in_git, branch, dirty = git_state(Path(workspace.root))
    return Environment(
        platform=f"{platform.system()} {platform.machine()}".strip(),
        date=(today or datetime.date.today()).isoformat(),
        project_type=workspace.project_type,
        git_branch=branch or workspace.git_branch,
        git_dirty=dirty,
        in_git=in_git,
    )


def recorded_environment(events: Iterable[Any]) -> Environment | None:
    """The snapshot of the first ``session_start`` event that has one (a resumed session)."""
    for event in events:
        if getattr(event, "type", "") != "session_start":
            continue
        prompt = getattr(event, "prompt", None)
        if isinstance(prompt, Mapping):
            found = read_environment(prompt.get("environment"))
            if found is not None:
                return found
    return None
