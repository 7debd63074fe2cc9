"""The environment policy, the redactor and the network hint, on their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from nyzhi.config.modes import SandboxLevel
from nyzhi.config.secrets import Redactor
from nyzhi.tools.env_policy import CORE_VARS, EnvPolicy, child_env
from nyzhi.tools.sandbox import SandboxPolicy, network_hint

PARENT = {
    "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "EDITOR": "vi",
    "OPENAI_API_KEY": "sk-1", "GOOGLE_API_KEY": "g", "github_token": "t", "DB_PASSWORD": "p",
    "AWS_SECRET_ACCESS_KEY": "s", "GCP_CREDENTIALS": "c", "OLLAMA_HOST": "h",
}


def test_default_policy_drops_secret_names_case_insensitively():
    env = child_env(parent=PARENT)
    assert env == {"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "EDITOR": "vi",
                   "OLLAMA_HOST": "h"}


def test_provider_key_variables_are_in_the_default_exclude():
    assert {"OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"} <= set(EnvPolicy().exclude)


def test_core_none_include_only_and_set():
    assert set(child_env(EnvPolicy(inherit="core"), parent=PARENT)) == {"PATH", "HOME", "LANG"}
    assert set(CORE_VARS) >= {"PATH", "HOME", "USER", "LANG", "TERM", "TMPDIR", "SHELL"}
    assert child_env(EnvPolicy(inherit="none", set={"A": "1"}), parent=PARENT) == {"A": "1"}
    only = EnvPolicy(include_only=("PATH", "OLLAMA_*"))
    assert child_env(only, parent=PARENT) == {"PATH": "/usr/bin", "OLLAMA_HOST": "h"}
    # extra (a process's own env table) comes last; keep survives any policy
    env = child_env(EnvPolicy(inherit="none"), {"K": "v"}, parent=PARENT, keep=("HOME",))
    assert env == {"HOME": "/home/u", "K": "v"}


def test_empty_exclude_passes_everything_and_excluded_lists_values():
    assert child_env(EnvPolicy(exclude=()), parent=PARENT) == PARENT
    assert EnvPolicy().excluded(PARENT)["DB_PASSWORD"] == "p"


def test_bad_inherit_is_a_clear_error():
    with pytest.raises(ValueError, match="shell.env.inherit"):
        EnvPolicy(inherit="some")


def test_redactor_ignores_short_values_and_prefers_the_longest():
    r = Redactor()
    r.add("SHORT", "abc1234")  # 7 chars: ordinary output is not mangled
    r.add("A", "secret-value-1")
    r.add("AB", "secret-value-1-and-more")
    text = "abc1234 secret-value-1-and-more secret-value-1"
    assert r.redact(text) == "abc1234 [redacted: AB] [redacted: A]"
    data = {"x": ["secret-value-1", 3], "y": "plain"}
    assert r.redact_value(data) == {"x": ["[redacted: A]", 3], "y": "plain"}
    clean = {"y": "plain"}
    assert r.redact_value(clean) is clean


def test_network_hint_only_when_confined_without_network(tmp_path: Path):
    off = SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, tmp_path)
    on = SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, tmp_path, network=True)
    failure = "curl: (6) Could not resolve host: example.com"
    assert "nyz run --network" in network_hint(off, failure, sandboxed=True)
    assert network_hint(on, failure, sandboxed=True) == ""
    assert network_hint(off, failure, sandboxed=False) == ""
    assert network_hint(off, "error: no such file", sandboxed=True) == ""
