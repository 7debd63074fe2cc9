"""Credential lookup order: config api_key > environment > auth.json."""

import time

import attrs

from nyzhi.auth import AuthStore, resolve_key_source
from nyzhi.config.schema import ProviderEntry


def test_order_config_env_authjson(env, monkeypatch):
    store = AuthStore()
    store.add_account("openai", "stored-1")
    store.add_account("openai", "stored-2", label="two")
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    cfg = ProviderEntry(api_key="from-config")
    pool = resolve_key_source("openai", cfg)
    assert [(a.source, a.key) for a in pool.accounts] == [
        ("config", "from-config"), ("env", "from-env"),
        ("auth.json", "stored-1"), ("auth.json", "stored-2")]
    assert pool.current_key() == "from-config"
    assert resolve_key_source("openai", ProviderEntry()).current_key() == "from-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    assert resolve_key_source("openai", None).current_key() == "stored-1"
    assert resolve_key_source("anthropic").current_key() is None


def test_env_var_names(env):
    gemini = resolve_key_source("gemini", env={"GOOGLE_API_KEY": "g"}, store=AuthStore())
    assert gemini.current_key() == "g"
    both = resolve_key_source("gemini", env={"GOOGLE_API_KEY": "g", "GEMINI_API_KEY": "m"})
    assert both.current_key() == "m"
    custom = resolve_key_source("my-corp", env={"MY_CORP_API_KEY": "c"})
    assert custom.current_key() == "c"
    override = resolve_key_source("openai", ProviderEntry(env_var="WORK_KEY"),
                                  env={"OPENAI_API_KEY": "x", "WORK_KEY": "w"})
    assert [a.key for a in override.accounts] == ["w"]


def test_duplicates_collapse_and_active_account_first(env):
    store = AuthStore()
    store.add_account("groq", "same")
    store.add_account("groq", "other", label="b")
    pool = resolve_key_source("groq", env={"GROQ_API_KEY": "same"})
    assert [(a.source, a.key) for a in pool.accounts] == [("env", "same"), ("auth.json", "other")]

    def make_b_active(accounts):
        accounts["groq"] = [attrs.evolve(a, active=a.label == "b") for a in accounts["groq"]]

    store.update(make_b_active)
    assert [a.key for a in resolve_key_source("groq", env={}).accounts] == ["other", "same"]


def test_expired_oauth_is_skipped(env):
    store = AuthStore()
    store.add_account("corp", "old-token", kind="oauth", expires_at=time.time() - 3600)
    store.add_account("corp", "good", label="b")
    assert [a.key for a in resolve_key_source("corp", env={}).accounts] == ["good"]


def test_rate_limit_is_persisted_and_reloaded(env):
    store = AuthStore()
    store.add_account("openai", "k1")
    store.add_account("openai", "k2", label="b")
    pool = resolve_key_source("openai", env={})
    assert pool.report_rate_limited("k1", 120.0) is True
    (first, _) = store.accounts("openai")
    assert first.rate_limited_until > time.time() + 100
    again = resolve_key_source("openai", env={})  # e.g. another nyz process
    assert again.current_key() == "k2"
