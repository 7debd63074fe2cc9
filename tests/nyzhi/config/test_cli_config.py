"""`nyz config show/get/set` and `nyz init`, through nyzhi.cli.main.main and a subprocess."""

import os
import stat
import subprocess
import sys
import tomllib

from nyzhi.cli.main import main
from nyzhi.config import load_config
from nyzhi.config.scaffold import CONFIG_TEMPLATE


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_annotates_each_value_with_its_layer(env, capsys):
    env.write(env.global_config, "[agent]\nmax_steps = 7\n")
    env.write(env.project_config, "[agent.trust]\nmode = 'limited'\n")
    env.write(env.local_config, "[[agent.hooks]]\nevent = 'after_turn'\ncommand = 'echo hi'\n")
    code, out, _ = run(capsys, "config", "show")
    assert code == 0
    lines = out.splitlines()
    project = env.project.resolve() / ".nyzhi"
    assert f"max_steps = 7  # from global ({env.global_config})" in lines
    assert f'mode = "limited"  # from project ({project / "config.toml"})' in lines
    assert f"[[agent.hooks]]  # from local ({project / 'config.local.toml'})" in lines
    assert "auto_compact_threshold = 0.85  # default" in lines
    assert "[agent.trust]" in lines
    # the output (minus unset lines) is TOML that loads back to the same values
    data = tomllib.loads(out)
    assert data["agent"]["max_steps"] == 7 and data["agent"]["hooks"][0]["command"] == "echo hi"
    assert run(capsys, "config")[1] == out  # plain `nyz config` = show


def test_show_and_get_never_print_secrets(env, capsys):
    secret = "sk-test-0123456789abcdefSECRET"
    env.write(env.global_config, f"[provider.openai]\napi_key = '{secret}'\n"
                                 f"[provider.openai.headers]\nAuthorization = 'Bearer {secret}'\n")
    _, out, _ = run(capsys, "config", "show")
    _, got, _ = run(capsys, "config", "get", "provider.openai.api_key")
    _, table, _ = run(capsys, "config", "get", "provider.openai")
    for text in (out, got, table):
        assert secret not in text
    assert got.strip() == "sk-…CRET"


def test_get(env, capsys):
    env.write(env.project_config, "[provider]\ndefault = 'groq'\n[index]\nexclude = ['a', 'b']\n")
    assert run(capsys, "config", "get", "provider.default")[1] == "groq\n"
    assert run(capsys, "config", "get", "agent.max_steps")[1] == "100\n"
    assert run(capsys, "config", "get", "index.exclude")[1] == '["a", "b"]\n'
    assert run(capsys, "config", "get", "memory.auto_memory")[1] == "true\n"
    assert "level = \"workspace-write\"" in run(capsys, "config", "get", "agent.sandbox")[1]
    code, _, err = run(capsys, "config", "get", "agent.max_tokens")
    assert code == 1 and "not set" in err
    code, _, err = run(capsys, "config", "get", "agent.max_stepz")
    assert code == 1 and "agent.max_stepz" in err and "unknown key" in err


def test_set_keeps_comments_and_layout(env, capsys):
    original = "# my settings\n[agent]  # agent table\nmax_steps = 5  # keep this comment\n\n[tui]\ntheme = 'dark'\n"
    env.write(env.global_config, original)
    code, out, _ = run(capsys, "config", "set", "agent.max_steps", "12")
    assert code == 0 and "agent.max_steps = 12" in out
    assert run(capsys, "config", "set", "agent.trust.mode", "full")[0] == 0
    assert run(capsys, "config", "set", "agent.trust.deny_tools", '["bash"]')[0] == 0
    assert run(capsys, "config", "set", "provider.openai.model", "gpt-4.1")[0] == 0
    text = env.global_config.read_text()
    assert text.startswith("# my settings\n[agent]  # agent table\nmax_steps = 12  # keep this comment\n")
    assert "[tui]\ntheme = 'dark'\n" in text
    cfg = load_config().config
    assert cfg.agent.max_steps == 12 and cfg.agent.trust.mode == "full"
    assert cfg.agent.trust.deny_tools == ("bash",)
    assert cfg.provider.entries["openai"].model == "gpt-4.1"


def test_set_refuses_invalid_values_and_leaves_file_unchanged(env, capsys):
    env.write(env.global_config, "# keep\n[agent]\nmax_steps = 5\n")
    before = env.global_config.read_bytes()
    code, _, err = run(capsys, "config", "set", "agent.max_steps", "many")
    assert code == 1
    assert f'{env.global_config}: agent.max_steps: expected an integer, found string "many"' in err
    code, _, err = run(capsys, "config", "set", "agent.trust.mood", "full")
    assert code == 1 and "agent.trust.mood" in err and "unknown key" in err
    code, _, err = run(capsys, "config", "set", "agent.trust.mode", "yolo")
    assert code == 1 and "expected one of" in err
    assert env.global_config.read_bytes() == before
    assert [p.name for p in env.global_config.parent.iterdir()] == ["config.toml"]  # no temp left


def test_set_targets_project_and_local_layers(env, capsys):
    assert run(capsys, "config", "set", "agent.max_steps", "20", "--project")[0] == 0
    assert run(capsys, "config", "set", "agent.max_steps", "30", "--local")[0] == 0
    assert tomllib.loads(env.project_config.read_text()) == {"agent": {"max_steps": 20}}
    assert tomllib.loads(env.local_config.read_text()) == {"agent": {"max_steps": 30}}
    assert not env.global_config.exists()
    assert load_config().source_of("agent.max_steps") == "local"
    assert stat.S_IMODE(env.local_config.stat().st_mode) == 0o600


def test_set_secret_is_not_echoed_and_new_global_file_is_private(env, capsys):
    code, out, err = run(capsys, "config", "set", "provider.corp.api_key", "abcdefghijklmnopqrstu")
    assert code == 0 and "abcdefghijklmnopqrstu" not in out + err
    assert stat.S_IMODE(env.global_config.stat().st_mode) == 0o600


def test_init_scaffolds_and_never_overwrites(env, capsys):
    sub = env.project / "src"
    sub.mkdir()
    os.chdir(sub)  # init goes to the workspace root, not the cwd
    (env.project / ".nyzhi").mkdir()
    (env.project / ".nyzhi" / "rules.md").write_text("mine")
    code, out, _ = run(capsys, "init")
    assert code == 0
    nyzhi = env.project / ".nyzhi"
    for name in ("config.toml", "commands/explain.md", ".gitignore"):
        assert (nyzhi / name).is_file()
    for name in ("agents", "commands", "skills", "rules"):
        assert (nyzhi / name).is_dir()
    assert (nyzhi / "rules.md").read_text() == "mine"
    assert "exists   .nyzhi/rules.md (left unchanged)" in out
    assert "created  .nyzhi/config.toml" in out
    (nyzhi / "config.toml").write_text("[agent]\nmax_steps = 1\n")
    code, out, _ = run(capsys, "init")
    assert code == 0 and "created" not in out and "nothing to do" in out
    assert (nyzhi / "config.toml").read_text() == "[agent]\nmax_steps = 1\n"


def test_init_template_loads_and_its_examples_are_valid(env, capsys):
    assert run(capsys, "init")[0] == 0
    assert load_config().config.agent.max_steps == 100  # all comments: defaults
    uncommented = "\n".join(
        line[2:] if line.startswith("# ") else line
        for line in CONFIG_TEMPLATE.splitlines() if not line.startswith("##")
    )
    env.project_config.write_text(uncommented)
    cfg = load_config().config
    assert cfg.provider.default == "anthropic"
    assert cfg.agent.hooks[0].event == "after_edit"
    assert cfg.nodes[0].name == "build-box"


def test_config_via_real_subprocess(env, tmp_path):
    run_env = {**os.environ, "HOME": str(env.home)}
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        run_env.pop(var, None)
    py = [sys.executable, "-m", "nyzhi"]
    subprocess.run([*py, "config", "set", "agent.max_steps", "42"], env=run_env, check=True,
                   cwd=env.project, capture_output=True)
    got = subprocess.run([*py, "config", "get", "agent.max_steps"], env=run_env, cwd=env.project,
                         capture_output=True, text=True, check=True)
    assert got.stdout == "42\n"
    bad = subprocess.run([*py, "config", "set", "agent.max_steps", "x"], env=run_env,
                         cwd=env.project, capture_output=True, text=True)
    assert bad.returncode == 1 and "agent.max_steps: expected an integer" in bad.stderr


def test_show_and_get_warn_about_unknown_keys_on_stderr_and_still_work(env, capsys):
    path = env.write(env.project_config, "[agent]\nmax_stepz = 3\nmax_steps = 9\n")
    code, out, err = run(capsys, "config", "show")
    assert code == 0 and "max_steps = 9" in out and "max_stepz" not in out
    assert f'nyz: warning: {path}: agent.max_stepz: unknown key, ignored (did you mean "max_steps"?)' in err
    code, out, err = run(capsys, "config", "get", "agent.max_steps")
    assert code == 0 and out == "9\n" and "agent.max_stepz" in err


def test_config_trust_shows_what_runs_and_approves_only_what_it_showed(env, capsys, monkeypatch):
    from nyzhi.config.project_trust import check

    code, out, _ = run(capsys, "config", "trust")
    assert code == 0 and "nothing to approve" in out
    env.write(env.project_config, "[provider]\ndefault = 'x'\n")  # not gated: still nothing
    assert "nothing to approve" in run(capsys, "config", "trust")[1]
    env.write(env.local_config, "[[agent.hooks]]\nevent = 'after_turn'\ncommand = 'echo hi'\n"
                                "[agent.sandbox]\nlevel = 'full-access'\n")
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, out, err = run(capsys, "config", "trust")  # nobody to ask, no --yes: not approved
    assert code == 1 and "echo hi" in out and "full-access" in out and "--yes" in err
    assert not check(load_config()).approved
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda _q: "n")
    assert run(capsys, "config", "trust")[0] == 1 and not check(load_config()).approved
    code, out, _ = run(capsys, "config", "trust", "--yes")
    assert code == 0 and "approved" in out and check(load_config()).approved
    assert "approved" in run(capsys, "config", "trust")[1].splitlines()[0]
    env.write(env.local_config, "[[agent.hooks]]\nevent = 'after_turn'\ncommand = 'echo bye'\n")
    assert not check(load_config()).approved  # changed: asked again
