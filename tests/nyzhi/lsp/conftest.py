"""Real language servers for the tests: basedpyright from PyPI (the ``dev`` extra) and
typescript-language-server with typescript from npm, in the venv's ``node_modules`` (``make
test`` installs them there; when they are missing and npm exists, the first test that needs
them installs them). Tests skip, saying why, only when npm itself is absent.

Each test gets a small Python or TypeScript project and an LSP pool in its own actor system,
with PATH set so the pool finds exactly these servers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _lsp_projects import PY_MAIN, PY_SHAPES, TS_MAIN, TS_SHAPES, TSCONFIG

NPM_PACKAGES = ("typescript-language-server@5.3.0", "typescript@5.9.3")
NODE_BIN = Path(sys.prefix) / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent



@pytest.fixture(scope="session")
def pyright() -> Path:
    found = shutil.which("basedpyright-langserver", path=str(VENV_BIN))
    if found is None:
        pytest.skip("basedpyright is not installed (pip install -e '.[dev]')")
    return Path(found)


@pytest.fixture(scope="session")
def ts_server() -> Path:
    server = NODE_BIN / "typescript-language-server"
    if not (server.exists() and (NODE_BIN / "tsserver").exists()):
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed, so typescript-language-server cannot be installed")
        subprocess.run(
            [npm, "install", "--prefix", sys.prefix, "--no-audit", "--no-fund",
             "--loglevel=error", *NPM_PACKAGES], check=True, capture_output=True)
    return server


@pytest.fixture
def lsp_env(home) -> dict[str, str]:
    """The environment the pool starts servers with: these servers on PATH, nothing else."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join((str(VENV_BIN), str(NODE_BIN), "/usr/bin", "/bin"))
    return env


@pytest.fixture
def py_project(workspace) -> Path:
    (workspace / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (workspace / "shapes.py").write_text(PY_SHAPES)
    (workspace / "main.py").write_text(PY_MAIN)
    return workspace


@pytest.fixture
def ts_project(workspace) -> Path:
    (workspace / "tsconfig.json").write_text(TSCONFIG)
    (workspace / "shapes.ts").write_text(TS_SHAPES)
    (workspace / "main.ts").write_text(TS_MAIN)
    return workspace
