"""Shared test set-up: an isolated user (HOME, XDG, no keys), a workspace, the fake LLM config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import trio

from nyzhi.tools.base import Permission, Tool, ToolResult

KEY_VARS = [v for v in os.environ if v.endswith("_API_KEY")] + ["NYZHI_HOME"]
XDG_VARS = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


@pytest.fixture
def home(tmp_path, monkeypatch):
    """HOME and XDG dirs under tmp_path, no API keys: no test sees the user's config,
    credentials or sessions."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    for var in (*XDG_VARS, *KEY_VARS):
        monkeypatch.delenv(var, raising=False)
    return h


@pytest.fixture
def workspace(tmp_path, home):
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".nyzhi").mkdir()
    return ws


def write_provider_config(ws, base_url: str, api_style: str = "openai", extra: str = "") -> None:
    (ws / ".nyzhi" / "config.toml").write_text(
        f"""[provider]
default = "fake"

[provider.fake]
api_style = "{api_style}"
base_url = "{base_url}"
model = "fake-model-1"
api_key = "sk-test-key"

[agent.retry]
max_retries = 2
initial_backoff_ms = 1
max_backoff_ms = 5
{extra}
"""
    )


@pytest.fixture
def configure():
    """``configure(ws, base_url, api_style="openai", extra="")`` writes the project config."""
    return write_provider_config


@pytest.fixture
def env(tmp_path, monkeypatch, home):
    """An isolated user: HOME and XDG_* under tmp_path, no API keys, cwd = a project dir."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    return Env(home=home, project=project)


class Env:
    def __init__(self, home: Path, project: Path):
        self.home = home
        self.project = project

    @property
    def global_config(self) -> Path:
        return self.home / ".config" / "nyzhi" / "config.toml"

    @property
    def project_config(self) -> Path:
        return self.project / ".nyzhi" / "config.toml"

    @property
    def local_config(self) -> Path:
        return self.project / ".nyzhi" / "config.local.toml"

    def write(self, path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path


class SlowAppend(Tool):
    """A file-writing tool (``slow_append``) whose read-modify-write spans an await the test
    controls (``entered`` / ``release``): the shape a lost update needs, for the lease tests."""

    name = "slow_append"
    description = "append a line, slowly"
    permission = Permission.NEEDS_APPROVAL
    writes_files = True

    def __init__(self) -> None:
        self.entered = trio.Event()
        self.release = trio.Event()

    async def run(self, args, ctx):
        path = Path(ctx.workspace_root) / args["path"]
        before = path.read_text()
        self.entered.set()
        await self.release.wait()
        path.write_text(before + args["line"] + "\n")
        return ToolResult("appended")


@pytest.fixture
def slow_append():
    return SlowAppend()
