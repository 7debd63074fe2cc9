"""Wrong types and broken TOML are errors naming file, key path, expected and found; unknown
and not-yet-active keys are warnings naming file and key."""

import pytest

from nyzhi.config import ConfigError, load_config
from nyzhi.config.modes import TrustMode


def _error(env) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config()
    return info.value


def test_unknown_key_is_a_warning_naming_file_key_and_suggestion(env):
    path = env.write(env.project_config, "[agent.trust]\nmodee = 'full'\nmode = 'limited'\n")
    loaded = load_config()  # a typo does not stop loading
    assert loaded.config.agent.trust.mode is TrustMode.LIMITED
    (warning,) = loaded.warnings
    assert warning.file == path and warning.key == "agent.trust.modee"
    assert str(warning) == f'{path}: agent.trust.modee: unknown key, ignored (did you mean "mode"?)'


def test_unknown_keys_anywhere_are_warned_and_dropped(env):
    g = env.write(env.global_config, """
tuii = 1
[provider.corp]
base_url = "http://x"
modle = "m"
[[agent.hooks]]
event = "after_turn"
command = "true"
timout = 3
[[nodes]]
name = "box"
host = "h"
prot = 2
""")
    loaded = load_config()
    shown = {w.key: str(w) for w in loaded.warnings}
    assert set(shown) == {"tuii", "provider.corp.modle", "agent.hooks[0].timout", "nodes[0].prot"}
    assert 'did you mean "tui"?' in shown["tuii"] and str(g) in shown["tuii"]
    assert 'did you mean "model"?' in shown["provider.corp.modle"]
    assert 'did you mean "timeout"?' in shown["agent.hooks[0].timout"]
    assert 'did you mean "port"?' in shown["nodes[0].prot"]
    assert loaded.config.provider.get("corp").base_url == "http://x"
    assert loaded.config.agent.hooks[0].timeout == 30.0 and loaded.config.nodes[0].port == 22


def test_unknown_key_without_a_close_match_lists_the_known_ones(env):
    env.write(env.global_config, "[agent.retry]\nzzz = 1\n")
    (warning,) = load_config().warnings
    assert "unknown key, ignored (known keys here: max_retries, initial_backoff_ms" in str(warning)


def test_a_key_that_is_not_yet_active_gets_a_notice_once_per_table(env):
    path = env.write(env.project_config, """
[agent]
auto_commit = true
[tui]
theme = "light"
accent = "blue"
[[agent.hooks]]
event = "after_turn"
command = "true"
model = "m"
""")
    shown = {w.key: str(w) for w in load_config().warnings}
    assert shown == {
        "agent.auto_commit": f"{path}: agent.auto_commit: not yet active (not planned yet), "
                             "so it has no effect",
        "tui.accent": f"{path}: tui.accent: not yet active (issue: console), "
                      "so it has no effect",
        "agent.hooks[0].model": f"{path}: agent.hooks[0].model: not yet active (not planned yet), "
                                "so it has no effect",
    }


def test_active_keys_get_no_warning(env):
    env.write(env.project_config, "[agent.trust]\nauto_approve = ['bash']\nremember_approvals = true\n")
    assert load_config().warnings == ()


def test_wrong_type_names_expected_and_found(env):
    path = env.write(env.global_config, "[agent]\nmax_steps = 'lots'\n")
    err = _error(env)
    assert str(err) == f'{path}: agent.max_steps: expected an integer, found string "lots"'


def test_literal_lists_allowed_values(env):
    env.write(env.local_config, "[agent.trust]\nmode = 'yolo'\n")
    text = str(_error(env))
    assert "config.local.toml: agent.trust.mode" in text
    assert 'expected one of "off", "limited", "autoedit", "full"' in text
    assert 'found string "yolo"' in text


def test_bool_is_not_an_integer_and_int_is_not_a_string(env):
    env.write(env.global_config, "[agent]\nmax_steps = true\n[provider.openai]\nmodel = 4\n")
    err = _error(env)
    keys = {p.key: p for p in err.problems}
    assert keys["agent.max_steps"].found == "boolean true"
    assert keys["provider.openai.model"].expected == "a string"
    assert keys["provider.openai.model"].found == "integer 4"


def test_errors_inside_arrays_and_maps_have_indexed_paths(env):
    env.write(env.global_config, """
[[agent.hooks]]
event = "after_turn"
[[agent.hooks]]
event = "nope"
timeout = "x"
[agent.trust]
deny_tools = ["bash", 3]
[mcp.servers.weird]
foo = 1
""")
    keys = {p.key: p for p in _error(env).problems}
    assert keys["agent.hooks[1].event"].found == 'string "nope"'
    assert keys["agent.hooks[1].timeout"].expected == "a number"
    assert keys["agent.trust.deny_tools[1]"].found == "integer 3"
    assert "command" in keys["mcp.servers.weird"].expected


def test_missing_required_key(env):
    env.write(env.global_config, "[[nodes]]\nname = 'a'\n")
    (problem,) = _error(env).problems
    assert problem.key == "nodes[0].host"
    assert "required" in problem.expected


def test_toml_syntax_error_names_file(env):
    path = env.write(env.project_config, "[agent\nmax_steps = 1\n")
    err = _error(env)
    assert err.file == path
    assert "valid TOML" in str(err)


def test_problems_from_several_layers_are_all_reported(env):
    env.write(env.global_config, "bogus = 1\n[agent]\nmax_steps = 'x'\n")
    env.write(env.project_config, "[tui]\ntheme = 1\n")
    files = {p.file for p in _error(env).problems}
    assert files == {env.global_config, env.project_config}


def test_loading_never_modifies_files(env):
    files = [
        env.write(env.global_config, "# comment\n[agent]\nmax_steps = 3\n"),
        env.write(env.project_config, "[agent.trust]\nmode = 'limited'  # why\n"),
    ]
    before = [(p.read_bytes(), p.stat().st_mtime_ns) for p in files]
    load_config()
    env.write(env.local_config, "oops = 1\n[agent]\nmax_steps = 'x'\n")
    with pytest.raises(ConfigError):
        load_config()
    assert [(p.read_bytes(), p.stat().st_mtime_ns) for p in files] == before
    assert sorted(p.name for p in env.project_config.parent.iterdir()) == [
        "config.local.toml", "config.toml"]
