import os
from pathlib import Path

import pytest

KEY_VARS = [v for v in os.environ if v.endswith("_API_KEY")] + ["NYZHI_HOME"]


@pytest.fixture
def env(tmp_path, monkeypatch):
    """An isolated user: HOME and XDG_* under tmp_path, no API keys, cwd = a project dir."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", *KEY_VARS):
        monkeypatch.delenv(var, raising=False)
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
