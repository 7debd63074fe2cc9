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


def write_provider_config(ws, base_url: str, api_style: str = "openai", extra: str = "",
                          approve: bool = True) -> None:
    """The project config a test's user wrote; ``approve`` (default): and approved, as
    ``nyz config trust`` would, so its hooks and settings are used (escape tests pass False).

    Not approved, the provider (its base_url and key: gated keys, ``project_trust``) is written
    to the user's own config instead, where a user keeps it, so the run still reaches the fake
    LLM while everything the project sets waits for approval."""
    provider = f"""[provider]
default = "fake"

[provider.fake]
api_style = "{api_style}"
base_url = "{base_url}"
model = "fake-model-1"
api_key = "sk-test-key"
"""
    if not approve:
        from nyzhi.config.paths import global_config_path

        user = global_config_path()
        user.parent.mkdir(parents=True, exist_ok=True)
        mark = "\n# the test's provider (write_provider_config)\n"
        before = user.read_text().split(mark)[0] if user.exists() else ""  # the test's own
        user.write_text(f"{before}{mark}{provider}")
        provider = ""
    (ws / ".nyzhi" / "config.toml").write_text(
        f"""{provider}
[agent.retry]
max_retries = 2
initial_backoff_ms = 1
max_backoff_ms = 5
{extra}
"""
    )
    if approve:
        _approve_project(ws)


def _approve_project(ws) -> None:
    """Approve the project's hooks, MCP servers and security settings as they are now, as
    ``nyz config trust --yes`` does (``nyzhi.config.project_trust``)."""
    from nyzhi.config import load_config
    from nyzhi.config.project_trust import approve

    approve(load_config(ws))


@pytest.fixture
def approve_project():
    """``approve_project(ws)``: the user approved the project's configuration as it is now."""
    return _approve_project


@pytest.fixture
def configure():
    """``configure(ws, base_url, api_style="openai", extra="", approve=True)`` writes the
    project config (approved by default)."""
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
