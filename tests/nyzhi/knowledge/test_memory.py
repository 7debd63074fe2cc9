"""Memory files (user and project), their index and prompt text, and FTS5 recall over them."""

from __future__ import annotations

import os

import pytest

from nyzhi.config import paths
from nyzhi.knowledge.memory import USER_LINES, MemoryRequestError, MemoryStore, topic_slug
from nyzhi.knowledge.recall import RecallStore, query_words, recall_block


@pytest.fixture
def store(workspace, home) -> MemoryStore:
    return MemoryStore.for_workspace(workspace)


def test_files_live_in_the_data_dir_keyed_by_the_real_root(workspace, home, tmp_path):
    store = MemoryStore.for_workspace(workspace)
    assert store.user_file == home / ".local/share/nyzhi/MEMORY.md"
    assert store.project_dir.parent.parent == home / ".local/share/nyzhi/projects"
    link = tmp_path / "link"
    link.symlink_to(workspace)
    assert MemoryStore.for_workspace(link) == store  # one project, however it is spelled
    other = tmp_path / "other"
    other.mkdir()
    assert paths.project_data_dir(other) != paths.project_data_dir(workspace)


def test_project_write_append_replace_and_index(store):
    store.write("Testing", "Run pytest -q from the root.")
    store.write("testing", "Integration tests need docker.")
    store.write("build", "make build", mode="replace")
    text = store.read_topic("testing")
    assert "Run pytest -q" in text and "need docker" in text
    assert store.topics() == ["build", "testing"]
    index = store.read_index()
    assert "- build: make build" in index and "- testing: Run pytest -q" in index
    store.write("testing", "Only unit tests now.", mode="replace")
    assert "docker" not in store.read_topic("testing")
    assert oct(store.topic_path("testing").stat().st_mode & 0o777) == "0o600"
    assert not [p for p in os.listdir(store.project_dir) if p.endswith(".tmp")]


def test_user_scope_sections(store):
    store.write("style", "Prefers short answers.", scope="user")
    store.write("style", "Uses fish shell.", scope="user")
    store.write("editor", "vim", scope="user")
    user = store.read_user()
    assert user.index("## style") < user.index("## editor")
    assert "Prefers short answers.\n\nUses fish shell." in user
    assert store.read_topic("editor").strip() == "## editor\nvim"
    store.write("style", "Long answers are fine.", mode="replace", scope="user")
    assert "fish" not in store.read_user() and "## editor" in store.read_user()


@pytest.mark.parametrize("topic", ["", "  ", "///", "memory", "MEMORY"])
def test_bad_topics_are_refused_with_a_reason(store, topic):
    with pytest.raises(MemoryRequestError, match="topic"):
        store.write(topic, "x")


def test_bad_mode_scope_and_empty_content(store):
    with pytest.raises(MemoryRequestError, match="mode must be one of append, replace"):
        store.write("a", "x", mode="prepend")
    with pytest.raises(MemoryRequestError, match="scope"):
        store.write("a", "x", scope="team")
    with pytest.raises(MemoryRequestError, match="empty"):
        store.write("a", "   ")


def test_topic_slug_is_file_safe():
    assert topic_slug("Build & Release/CI") == "build-release-ci"
    assert "/" not in topic_slug("../../etc/passwd")


def test_prompt_text_caps_user_lines_and_lists_topics_not_bodies(store):
    assert store.prompt_text() == ""
    store.write("notes", "\n".join(f"line {i}" for i in range(USER_LINES + 20)), scope="user")
    store.write("secret-body", "TOPIC BODY TEXT")
    text = store.prompt_text()
    assert "## User memory" in text and "more lines" in text
    assert "line 0" in text and f"line {USER_LINES + 19}" not in text
    assert "## Project memory" in text and "secret-body" in text
    assert text.count("TOPIC BODY TEXT") == 1  # the index shows the first line only


def test_clear_scopes(store):
    store.write("a", "project note")
    store.write("b", "user note", scope="user")
    removed = store.clear("project")
    assert store.topics() == [] and not store.index_file.exists() and len(removed) == 2
    assert store.read_user()
    store.clear("user")
    assert not store.user_file.exists()


def test_query_words_drop_stop_words_and_short_words():
    assert query_words("How do I run the tests for this repo? 42") == ["run", "tests", "repo"]


def test_recall_finds_relevant_facts_and_follows_file_changes(workspace, home):
    recall = RecallStore.for_workspace(workspace)
    store = recall.memory
    store.write("testing", "Run the test suite with pytest -q -x.")
    store.write("testing", "- Database fixtures live in tests/db.\n- Never mock the clock.")
    store.write("deploy", "Releases are tagged from main by CI.")
    store.write("style", "The user prefers answers without emojis.", scope="user")
    facts = recall.recall("why does the pytest suite fail?")
    assert [f.topic for f in facts][:1] == ["testing"]
    assert "pytest -q -x" in facts[0].text
    assert all(f.topic != "deploy" for f in facts)
    # porter stemming: "fixture" matches "fixtures"; list items are separate facts
    [fact] = recall.recall("database fixture", limit=1)
    assert fact.text == "Database fixtures live in tests/db."
    # a hand edit is picked up; a deleted topic is forgotten
    store.topic_path("deploy").write_text("# deploy\n\nReleases need a signed changelog.\n")
    assert "changelog" in recall.recall("changelog for releases")[0].text
    store.topic_path("deploy").unlink()
    assert recall.recall("changelog releases") == []
    assert recall.recall("emojis")[0].scope == "user"
    # what the prompt already holds is not repeated
    assert recall.recall("emojis", exclude=store.read_user()) == []


def test_recall_block_format():
    assert recall_block([]) == ""


def test_recall_without_memory_is_empty(workspace, home):
    assert RecallStore.for_workspace(workspace).recall("anything at all here") == []


def test_a_corrupt_recall_index_is_rebuilt_from_the_files(workspace, home):
    recall = RecallStore.for_workspace(workspace)
    recall.memory.write("deploy", "Deploys go through the staging cluster first.")
    recall.db_path.parent.mkdir(parents=True, exist_ok=True)
    recall.db_path.write_bytes(b"this is not a database" * 100)
    assert "staging cluster" in recall.recall("how do deploys work")[0].text
