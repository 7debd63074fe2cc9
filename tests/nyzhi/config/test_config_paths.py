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


def test_display_path_is_the_one_way_a_path_is_shown(tmp_path):
    """Relative under the root, as given outside it or with no root; ``real_root`` for a
    resolved path shown against a root reached through a symlink (a lease, a checkpoint)."""
    from nyzhi.config.paths import display_path

    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(root)
    assert display_path(root / "src" / "a.py", root) == "src/a.py"
    assert display_path(root, root) == "."
    assert display_path("/etc/hosts", root) == "/etc/hosts"
    assert display_path(root / "a.py", None) == str(root / "a.py")
    resolved = root.resolve() / "src" / "a.py"
    assert display_path(resolved, link) == str(resolved)  # lexically outside the link
    assert display_path(resolved, link, real_root=True) == "src/a.py"
