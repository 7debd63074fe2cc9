"""Shared set-up for runtime tests: an isolated HOME and a workspace pointing at the fake LLM."""

from __future__ import annotations

import os
import subprocess

import pytest


@pytest.fixture
def home(tmp_path, monkeypatch):
    """HOME and XDG dirs under tmp_path, so no test sees the user's config or sessions."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "NYZHI_HOME"):
        monkeypatch.delenv(var, raising=False)
    for var in list(os.environ):
        if var.endswith("_API_KEY"):
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
