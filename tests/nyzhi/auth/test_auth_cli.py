"""`nyz login / logout / whoami` with HOME isolated; no command prints a secret."""

import io
import json
import os
import stat
import subprocess
import sys
import time

from nyzhi.auth import AuthStore
from nyzhi.cli.main import main
from nyzhi.config import paths

KEY1 = "sk-live-1111111111111111aaaa"
KEY2 = "sk-live-2222222222222222bbbb"


def run(capsys, monkeypatch, *argv, stdin=""):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))  # not a TTY: the key is read from it
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_login_from_stdin_and_second_account(env, capsys, monkeypatch):
    code, out, err = run(capsys, monkeypatch, "login", "openai", stdin=KEY1 + "\n")
    assert code == 0, err
    assert "account 'default'" in out and KEY1 not in out + err
    code, out, err = run(capsys, monkeypatch, "login", "openai", "--label", "work", stdin=KEY2)
    assert code == 0 and "(2 accounts)" in out
    data = json.loads(paths.auth_path().read_text())
    assert [(a["label"], a["key"]) for a in data["providers"]["openai"]] == [
        ("default", KEY1), ("work", KEY2)]
    assert stat.S_IMODE(paths.auth_path().stat().st_mode) == 0o600


def test_login_errors(env, capsys, monkeypatch):
    code, _, err = run(capsys, monkeypatch, "login", stdin=KEY1)
    assert code == 1 and "name a provider" in err
    code, _, err = run(capsys, monkeypatch, "login", "openai", stdin="")
    assert code == 1 and "no key" in err
    code, _, err = run(capsys, monkeypatch, "login", "openai", "--device", stdin="")
    assert code == 1 and "[provider.openai.oauth]" in err
    assert not paths.auth_path().exists()
    env.write(env.global_config, "[provider]\ndefault = 'groq'\n")
    code, out, _ = run(capsys, monkeypatch, "login", stdin=KEY1)
    assert code == 0 and "for groq" in out


def test_login_notes_env_precedence(env, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY2)
    code, _, err = run(capsys, monkeypatch, "login", "anthropic", stdin=KEY1)
    assert code == 0 and "ANTHROPIC_API_KEY is set" in err and KEY2 not in err


def test_whoami_lists_sources_and_never_prints_secrets(env, capsys, monkeypatch):
    env.write(env.global_config, f"[provider]\ndefault = 'openai'\n"
                                 f"[provider.corp]\napi_key = '{KEY2}'\n")
    monkeypatch.setenv("OPENAI_API_KEY", KEY1)
    store = AuthStore()
    store.add_account("openai", "sk-stored-3333333333333cccc", label="personal")
    store.add_account("anthropic", "sk-ant-4444444444444444dddd", label="pro")
    store.mark_rate_limited("anthropic", "pro", time.time() + 90)
    code, out, err = run(capsys, monkeypatch, "whoami")
    assert code == 0, err
    for secret in (KEY1, KEY2, "sk-stored-3333333333333cccc", "sk-ant-4444444444444444dddd"):
        assert secret not in out + err
    lines = out.splitlines()
    assert "openai (default):" in lines
    openai = lines[lines.index("openai (default):") + 1: lines.index("openai (default):") + 3]
    assert "env OPENAI_API_KEY" in openai[0] and openai[0].lstrip().startswith("*")
    assert "personal" in openai[1] and "auth.json" in openai[1]
    assert any("pro" in line and "rate-limited for 1m" in line for line in lines)
    assert any(line.startswith("corp:") for line in lines)
    assert any("config" in line and "sk-…" in line for line in lines)
    assert "gemini: not connected (set GEMINI_API_KEY or run `nyz login gemini`)" in lines
    assert "ollama: no key needed" in lines


def test_logout(env, capsys, monkeypatch):
    store = AuthStore()
    store.add_account("openai", KEY1)
    store.add_account("openai", KEY2, label="work")
    store.add_account("groq", KEY1)
    code, out, _ = run(capsys, monkeypatch, "logout", "openai", "--label", "work")
    assert code == 0 and "Removed 1 stored account " in out
    assert [a.label for a in store.accounts("openai")] == ["default"]
    code, _, err = run(capsys, monkeypatch, "logout")
    assert code == 1 and "--all" in err
    code, out, _ = run(capsys, monkeypatch, "logout", "--all")
    assert code == 0 and "Removed 2 stored accounts" in out
    assert store.load() == {}


def test_login_via_real_subprocess_reads_piped_stdin(env):
    proc = subprocess.run([sys.executable, "-m", "nyzhi", "login", "deepseek"], input=KEY1 + "\n",
                          capture_output=True, text=True, env={**os.environ}, cwd=env.project)
    assert proc.returncode == 0, proc.stderr
    assert KEY1 not in proc.stdout + proc.stderr
    assert [a.key for a in AuthStore().accounts("deepseek")] == [KEY1]
    who = subprocess.run([sys.executable, "-m", "nyzhi", "whoami"], capture_output=True,
                         text=True, env={**os.environ}, cwd=env.project, check=True)
    assert "deepseek:" in who.stdout and KEY1 not in who.stdout
