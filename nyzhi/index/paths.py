"""Where a workspace's semantic index lives: apart from ``store`` (and its SQLite), so that
setting up the index service at start-up does not import what only reading the index needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nyzhi.config.paths import project_data_dir


def index_dir(workspace_root: Path, env: Any = None) -> Path:
    """``$XDG_DATA_HOME/nyzhi/projects/<hash>/index`` for a workspace."""
    return project_data_dir(workspace_root, env) / "index"
