import json
import os
import stat

import pytest

from nyzhi.auth import AuthStore, AuthStoreError
from nyzhi.config import paths


def test_add_accounts_mode_0600_dir_0700(env):
    store = AuthStore()
    acc, created = store.add_account("openai", "sk-one")
    assert created and acc.label == "default" and acc.active
    acc2, created2 = store.add_account("openai", "sk-two", label="work")
    assert created2 and acc2.label == "work" and not acc2.active
    acc3, _ = store.add_account("openai", "sk-three")
    assert acc3.label == "account-3"
    path = paths.auth_path()
    assert store.path == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    data = json.loads(path.read_text())
    assert data["version"] == 1
    assert [a["key"] for a in data["providers"]["openai"]] == ["sk-one", "sk-two", "sk-three"]
    replaced, created = store.add_account("openai", "sk-two-b", label="work")
    assert not created
    assert [a.key for a in store.accounts("openai")] == ["sk-one", "sk-two-b", "sk-three"]
    assert "sk-" not in repr(store.accounts("openai"))


def test_write_is_atomic(env, monkeypatch):
    store = AuthStore()
    store.add_account("openai", "sk-old")
    before = store.path.read_bytes()

    def boom(*_args, **_kwargs):
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(os, "replace", boom)
        with pytest.raises(AuthStoreError, match="could not write the credentials file .*disk full"):
            store.add_account("openai", "sk-new")
    assert store.path.read_bytes() == before
    leftovers = [p.name for p in store.path.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_remove(env):
    store = AuthStore()
    assert store.remove("openai") == 0  # no file: nothing to do, nothing created
    assert not store.path.exists()
    store.add_account("openai", "a")
    store.add_account("openai", "b", label="b")
    store.add_account("groq", "g")
    assert store.remove("openai", label="default") == 1
    (left,) = store.accounts("openai")
    assert left.label == "b" and left.active  # an account stays active
    assert store.remove(None) == 2
    assert store.load() == {}


def test_reads_nyzhi3_layout(env):
    path = paths.auth_path()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "anthropic": [{"label": "pro", "token": {"access_token": "tok", "refresh_token": "r",
                                                 "expires_at": 1}, "active": True}],
        "openai": {"access_token": "legacy", "provider": "openai"},
    }))
    accounts = AuthStore().load()
    assert accounts["anthropic"][0].key == "tok" and accounts["anthropic"][0].kind == "oauth"
    assert accounts["openai"][0].key == "legacy"


def test_corrupt_file_error_does_not_leak_contents(env):
    path = paths.auth_path()
    path.parent.mkdir(parents=True)
    path.write_text('{"openai": [sk-secret-value')
    with pytest.raises(AuthStoreError) as info:
        AuthStore().load()
    assert str(path) in str(info.value) and "sk-secret" not in str(info.value)
