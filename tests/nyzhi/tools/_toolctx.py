"""Helpers for the built-in tool tests: a context over a real workspace with a real sandbox."""

from __future__ import annotations

import subprocess
from pathlib import Path

from nyzhi.tools.base import SandboxLevel, ToolContext
from nyzhi.tools.sandbox import SandboxPolicy


def make_ctx(root: Path, *, sandbox: bool = True, **kw) -> ToolContext:
    """A context rooted at ``root``. The sandbox is workspace-write WITHOUT the temp directory
    (tmp_path lives under /tmp, so allowing temp would let every 'outside' write through)."""
    policy = (
        SandboxPolicy(level=SandboxLevel.WORKSPACE_WRITE, workspace_root=root, allow_temp=False)
        if sandbox
        else None
    )
    return ToolContext(workspace_root=root, cwd=root, sandbox=policy, **kw)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def git_env(monkeypatch, home: Path) -> None:
    """Isolate git from the machine's configuration and give commits an identity."""
    for key, value in {
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Test Author",
        "GIT_COMMITTER_EMAIL": "author@example.com",
    }.items():
        monkeypatch.setenv(key, value)


def init_repo(root: Path, text: str = "one\n", message: str = "first commit") -> Path:
    """A git repository at ``root`` on branch ``main`` with one commit: ``a.txt`` holding
    ``text``. Call ``git_env`` first (identity, no machine config)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text(text)
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", message)
    return root
