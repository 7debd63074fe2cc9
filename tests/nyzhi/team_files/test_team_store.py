"""Team configs on disk: names, the round trip, tolerant reads, clear errors, member status."""

from __future__ import annotations

import json
import os
import stat

import pytest

from nyzhi.team_files.errors import TeamError, TeamNotFound
from nyzhi.team_files.inbox import deliver
from nyzhi.team_files.locking import read_json, write_json
from nyzhi.team_files.names import LEAD, check_name
from nyzhi.team_files.store import PALETTE, Member, TeamConfig, TeamStore, tasks_root, teams_root


@pytest.fixture
def store(home):
    return TeamStore()


@pytest.mark.parametrize("value", ["", "-x", ".hidden", "a/b", "..", "a b", "x" * 65, "é"])
def test_bad_names_are_refused_with_what_is_allowed(value):
    with pytest.raises(TeamError, match=r"invalid team name .*letters, digits"):
        check_name("team", value)


@pytest.mark.parametrize("value", ["all", "user", "ALL"])
def test_all_and_user_are_not_member_names_but_user_may_send(value):
    with pytest.raises(TeamError, match="reserved"):
        check_name("member", value)
    assert check_name("team", value) == value
    assert check_name("sender", "user") == "user"
    with pytest.raises(TeamError, match="invalid sender name 'all'"):
        check_name("sender", "all")


def test_roots_follow_xdg_data_home(home, monkeypatch, tmp_path):
    assert teams_root() == home / ".local" / "share" / "nyzhi" / "teams"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert tasks_root() == tmp_path / "data" / "nyzhi" / "tasks"
    assert TeamStore({"HOME": str(home), "XDG_DATA_HOME": "/elsewhere"}).root == \
        teams_root({"XDG_DATA_HOME": "/elsewhere"})


def test_create_adds_the_lead_first_and_colours_and_round_trips(store):
    config = store.create(TeamConfig("alpha", members=[
        Member("alice", role="worker", model="m1"), Member("bob", worktree="/w/bob")],
        teammate_mode="process", cwd="/ws", default_model="dm", max_steps=7, detach=True,
        worktrees=True, trust="full"))
    assert config.names() == [LEAD, "alice", "bob"]
    assert config.member(LEAD).agent_type == "leader"
    assert config.member("alice").agent_type == "teammate"
    assert [m.color for m in config.members] == list(PALETTE[:3])
    assert store.exists("alpha") and store.list() == ["alpha"]
    assert store.load("alpha") == config
    raw = json.loads((store.team_dir("alpha") / "config.json").read_text())
    assert raw["members"][0]["agentType"] == "leader"  # the original's key
    assert stat.S_IMODE(os.stat(store.team_dir("alpha") / "config.json").st_mode) == 0o600


def test_a_listed_lead_is_moved_first_and_made_leader(store):
    config = store.create(TeamConfig("t", members=[Member("alice"), Member(LEAD, role="boss")]))
    assert config.names() == [LEAD, "alice"]
    assert config.members[0].role == "boss" and config.members[0].agent_type == "leader"


def test_create_twice_and_bad_configs_are_errors(store):
    store.create(TeamConfig("t"))
    with pytest.raises(TeamError, match="team 't' already exists"):
        store.create(TeamConfig("t"))
    with pytest.raises(TeamError, match="listed twice"):
        store.create(TeamConfig("u", members=[Member("a"), Member("a")]))
    with pytest.raises(TeamError, match="teammate mode"):
        store.create(TeamConfig("u", teammate_mode="threads"))
    with pytest.raises(TeamError, match="invalid member name"):
        store.create(TeamConfig("u", members=[Member("all")]))
    assert store.list() == ["t"]  # no half-made team


def test_load_of_a_missing_team_says_how_to_list(store):
    with pytest.raises(TeamNotFound, match=r"no team 'ghost' \(nyz team list shows the teams\)"):
        store.load("ghost")
    assert not store.exists("ghost")


def test_tolerant_read_of_older_and_newer_files(store):
    path = store.team_dir("old") / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "name": "old", "created_at": "2025-01-01T00:00:00Z", "future_key": [1, 2],
        "members": [{"name": "lead", "agentId": None, "agentType": "leader",
                     "worktree_path": "/w"}, {"name": "x", "agent_type": "teammate"}],
    }))
    config = store.load("old")
    assert config.names() == ["lead", "x"] and config.member("lead").worktree == "/w"
    assert config.teammate_mode == "in-process" and config.max_steps == 0 and config.cwd == ""


@pytest.mark.parametrize(("data", "match"), [
    ({"name": "t", "members": []}, ": 'created_at' is missing$"),
    ({"name": "t", "created_at": "x", "members": [{"role": "r"}]},
     r": 'members\[0\].name' is missing$"),
    ({"name": "t", "created_at": "x", "members": "alice"},
     ": 'members' must be an array, found 'alice'$"),
    ({"name": "t", "created_at": "x", "members": [], "max_steps": "9"},
     ": 'max_steps' must be an integer, found '9'$"),
    ([1, 2], r": must be an object, found \[1, 2\]$"),
])
def test_a_broken_config_names_file_and_key(store, data, match):
    path = store.team_dir("t") / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    with pytest.raises(TeamError, match=match) as info:
        store.load("t")
    assert str(path) in str(info.value)


def test_corrupt_json_names_the_file(store, tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(TeamError, match=f"{bad} is not valid JSON"):
        read_json(bad, None)
    assert read_json(tmp_path / "missing.json", "dflt") == "dflt"
    write_json(tmp_path / "deep" / "y.json", {"a": 1})
    assert read_json(tmp_path / "deep" / "y.json", None) == {"a": 1}


def test_update_and_add_member_never_duplicate(store):
    store.create(TeamConfig("t", members=[Member("alice", role="worker")]))
    store.add_member("t", Member("bob"))
    config = store.add_member("t", Member("alice", role="reviewer"))
    assert config.names() == [LEAD, "alice", "bob"]
    assert config.member("alice").role == "reviewer"
    assert config.member("alice").color == PALETTE[1]  # kept on replace
    assert config.member("bob").color == PALETTE[2]
    config = store.update("t", lambda c: setattr(c, "default_role", "worker"))
    assert store.load("t").default_role == "worker" == config.default_role
    with pytest.raises(TeamError, match="cannot be renamed"):
        store.update("t", lambda c: setattr(c, "name", "u"))
    with pytest.raises(TeamNotFound):
        store.add_member("ghost", Member("x"))


def test_delete_removes_team_and_board(store):
    store.create(TeamConfig("t", members=[Member("alice")]))
    store.board("t").create("a task")
    deliver(store, "t", "lead", "alice", "hi")
    assert (store.tasks / "t" / "1.json").exists()
    assert store.inbox("t", "alice").path.exists()
    store.delete("t")
    assert store.list() == [] and not store.team_dir("t").exists()
    assert not (store.tasks / "t").exists()
    with pytest.raises(TeamNotFound):
        store.delete("t")


def test_a_new_team_does_not_inherit_a_stale_board(store):
    store.board("t").create("left over by an interrupted delete")
    store.create(TeamConfig("t"))
    assert store.board("t").list() == []


def test_list_ignores_directories_without_a_config(store):
    store.create(TeamConfig("b"))
    store.create(TeamConfig("a"))
    (store.root / "half-made").mkdir()
    (store.root / ".hidden").mkdir()
    assert store.list() == ["a", "b"]


def test_member_status_merges_and_stamps(store):
    store.create(TeamConfig("t", members=[Member("alice"), Member("bob")]))
    first = store.set_status("t", "alice", status="running", pid=123, restarts=0)
    second = store.set_status("t", "alice", status="idle")
    assert second["pid"] == 123 and second["status"] == "idle"
    assert second["updated_at"] >= first["updated_at"]
    store.set_status("t", "bob", status="stopped")
    statuses = store.statuses("t")
    assert sorted(statuses) == ["alice", "bob"] and statuses["alice"]["restarts"] == 0
    assert TeamStore().statuses("ghost") == {}
