"""Real MCP servers for the tests: two from npm, two from PyPI, and a small scripted one.

The npm servers live in ``<venv>/node_modules`` (``make test`` installs them there); when
they are missing and npm exists, the first test that needs them installs them (about 11 s).
Tests skip, saying why, only when npm itself is absent. The PyPI servers come with the
``dev`` extra. ``pidfile`` wrappers record each server process start, so tests can count
processes and kill one mid-call.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NPM_PACKAGES = (
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
)
NODE_PREFIX = Path(sys.prefix)
HELPER = Path(__file__).with_name("helper_server.py")


def _npm_bin(name: str) -> Path:
    return NODE_PREFIX / "node_modules" / ".bin" / name


@pytest.fixture(scope="session")
def npm_servers() -> dict[str, Path]:
    wanted = {"everything": _npm_bin("mcp-server-everything"),
              "filesystem": _npm_bin("mcp-server-filesystem")}
    if not all(p.exists() for p in wanted.values()):
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed, so the npm MCP test servers cannot be installed")
        subprocess.run(
            [npm, "install", "--prefix", str(NODE_PREFIX), "--no-audit", "--no-fund",
             "--loglevel=error", *NPM_PACKAGES],
            check=True, capture_output=True,
        )
    return wanted


def _python_server(module: str) -> list[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")
    return [sys.executable, "-m", module]


@pytest.fixture
def time_server() -> list[str]:
    return _python_server("mcp_server_time")


@pytest.fixture
def git_server() -> list[str]:
    return _python_server("mcp_server_git")


@pytest.fixture
def helper_server() -> list[str]:
    return [sys.executable, str(HELPER)]
