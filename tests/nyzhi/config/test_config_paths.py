from pathlib import Path

from nyzhi.config import paths


def test_defaults_follow_home_at_call_time(env, monkeypatch, tmp_path):
    assert paths.config_dir() == env.home / ".config" / "nyzhi"
    assert paths.data_dir() == env.home / ".local" / "share" / "nyzhi"
    assert paths.state_dir() == env.home / ".local" / "state" / "nyzhi"
    assert paths.cache_dir() == env.home / ".cache" / "nyzhi"
    assert paths.nyzhi_home() == env.home / ".nyzhi"
    assert paths.global_config_path() == env.home / ".config" / "nyzhi" / "config.toml"
    assert paths.sessions_dir() == env.home / ".local" / "share" / "nyzhi" / "sessions"
    assert paths.auth_path() == env.home / ".local" / "share" / "nyzhi" / "auth.json"
    other = tmp_path / "other"
    monkeypatch.setenv("HOME", str(other))
    assert paths.config_dir() == other / ".config" / "nyzhi"  # not cached


def test_xdg_variables_and_nyzhi_home(env, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "s"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "k"))
    monkeypatch.setenv("NYZHI_HOME", str(tmp_path / "n"))
    assert paths.global_config_path() == tmp_path / "c" / "nyzhi" / "config.toml"
    assert paths.auth_path() == tmp_path / "d" / "nyzhi" / "auth.json"
    assert paths.state_dir() == tmp_path / "s" / "nyzhi"
    assert paths.cache_dir() == tmp_path / "k" / "nyzhi"
    assert paths.nyzhi_home() == tmp_path / "n"


def test_relative_xdg_value_is_ignored(env, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")
    assert paths.config_dir() == env.home / ".config" / "nyzhi"


def test_explicit_env_mapping():
    assert paths.data_dir({"HOME": "/h"}) == Path("/h/.local/share/nyzhi")
