"""Unknown keys, wrong types and broken TOML name file, key path, expected and found."""

import pytest

from nyzhi.config import ConfigError, load_config


def _error(env) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config()
    return info.value


def test_unknown_key_names_file_path_and_suggestion(env):
    path = env.write(env.project_config, "[agent.trust]\nmodee = 'full'\n")
    err = _error(env)
    text = str(err)
    assert str(path) in text
    assert "agent.trust.modee" in text
    assert "unknown key" in text
    assert 'did you mean "mode"' in text
    assert err.file == path and err.key == "agent.trust.modee"


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
    env.write(env.global_config, "bogus = 1\n")
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
    env.write(env.local_config, "oops = 1\n")
    with pytest.raises(ConfigError):
        load_config()
    assert [(p.read_bytes(), p.stat().st_mtime_ns) for p in files] == before
    assert sorted(p.name for p in env.project_config.parent.iterdir()) == [
        "config.local.toml", "config.toml"]
