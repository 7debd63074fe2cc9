import json
import os
import stat

import pytest

from nyzhi.core import events as ev
from nyzhi.core.runtime.sessions import (
    AmbiguousSession,
    SessionNotFound,
    SessionStore,
    export_json,
    export_markdown,
)
from nyzhi.provider.types import Message, ToolCall

CALL = ToolCall("call_1", "read", '{"path": "a.txt"}')
THREAD = [
    Message("user", "Please read a.txt and summarise it"),
    Message("assistant", "Reading.", tool_calls=(CALL,), thinking="plan", thinking_signature="sig"),
    Message("tool", "hello ```world```", tool_call_id="call_1", name="read"),
    Message("assistant", "It says hello world."),
]


def write_session(store, thread=THREAD, **kw):
    w = store.create(cwd="/proj", workspace_root="/proj", provider="openai", model="gpt-x", **kw)
    w.append_event(ev.SessionStart(w.id, "/proj", "openai", "gpt-x"))
    w.append_event(ev.TurnStart("t1", thread[0].content))
    w.append_message(thread[0])
    w.append_event(ev.TextDelta("Read"))
    w.append_message(thread[1])
    w.append_event(ev.ToolStart("call_1", "read", CALL.arguments))
    w.append_event(ev.ToolOutputDelta("call_1", "hello"))
    w.append_event(ev.ToolDone("call_1", "read", "hello", duration_ms=3.0))
    w.append_event(ev.Usage(100, 20, cost_usd=0.5))
    w.append_message(thread[2])
    w.append_message(thread[3])
    w.append_event(ev.Usage(150, 10, cost_usd=0.25))
    w.append_event(ev.TurnComplete("t1", "It says hello world.", 2))
    w.close()
    return w.id


def test_resume_rebuilds_thread_and_replay_has_events(tmp_path):
    store = SessionStore(tmp_path)
    sid = write_session(store)
    s = store.load(sid)
    assert s.messages == THREAD
    assert s.history == THREAD
    assert s.skipped_lines == 0
    # deltas are not persisted; consolidated events are
    assert [e.type for e in s.events] == [
        "session_start", "turn_start", "tool_start", "tool_done", "usage", "usage", "turn_complete"]
    m = s.meta
    assert m.title == "Please read a.txt and summarise it"
    assert (m.message_count, m.provider, m.model, m.cwd) == (4, "openai", "gpt-x", "/proj")
    assert m.usage["input_tokens"] == 250 and m.usage["output_tokens"] == 30
    assert m.usage["cost_usd"] == pytest.approx(0.75)


def test_meta_file_matches_log_and_is_private(tmp_path):
    store = SessionStore(tmp_path)
    sid = write_session(store)
    meta = json.loads(store.meta_path(sid).read_text())
    assert meta["log_size"] == store.log_path(sid).stat().st_size
    assert meta["message_count"] == 4 and meta["title"].startswith("Please read")
    assert store.meta(sid) == store.load(sid).meta
    for p in (store.log_path(sid), store.meta_path(sid)):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert stat.S_IMODE(tmp_path.stat().st_mode) in (0o700, 0o755, 0o775)  # tmp_path pre-exists


def test_persist_deltas_option(tmp_path):
    store = SessionStore(tmp_path)
    with store.create(persist_deltas=True) as w:
        w.append_message(Message("user", "go"))  # a turn: an empty session is not kept
        w.append_event(ev.TextDelta("a"))
        sid = w.id
    assert store.load(sid).events == [ev.TextDelta("a")]


def test_replace_thread_after_compaction(tmp_path):
    store = SessionStore(tmp_path)
    sid = write_session(store)
    w = store.open(sid)
    summary = Message("user", "[Conversation summary] read a.txt")
    w.replace_thread([summary, THREAD[3]])
    w.append_event(ev.Compaction(5000, 400, "read a.txt", None))
    w.append_message(Message("user", "next"))
    w.close()
    s = store.load(sid)
    assert s.messages == [summary, THREAD[3], Message("user", "next")]
    assert s.history == THREAD + [Message("user", "next")]
    assert s.meta.title.startswith("Please read")  # not retitled on resume


def test_partial_last_line_skipped_and_trimmed_on_reopen(tmp_path):
    store = SessionStore(tmp_path)
    sid = write_session(store)
    with open(store.log_path(sid), "ab") as f:
        f.write(b'{"kind":"message","message":{"role":"user","cont')
    s = store.load(sid)
    assert s.skipped_lines == 1 and s.messages == THREAD
    w = store.open(sid)
    w.append_message(Message("user", "after crash"))
    w.close()
    s = store.load(sid)
    assert s.skipped_lines == 0
    assert s.messages == THREAD + [Message("user", "after crash")]


def test_corrupt_middle_line_skipped(tmp_path):
    store = SessionStore(tmp_path)
    sid = write_session(store)
    path = store.log_path(sid)
    lines = path.read_bytes().split(b"\n")
    lines.insert(3, b"\x00garbage")
    path.write_bytes(b"\n".join(lines))
    s = store.load(sid)
    assert s.skipped_lines == 1 and s.messages == THREAD


@pytest.mark.parametrize("damage", ["missing", "corrupt", "stale"])
def test_meta_rebuilt_from_log(tmp_path, damage):
    store = SessionStore(tmp_path)
    sid = write_session(store)
    mp = store.meta_path(sid)
    if damage == "missing":
        mp.unlink()
    elif damage == "corrupt":
        mp.write_text("{not json")
    else:  # the log grew after the meta was written (crash before the meta rewrite)
        with open(store.log_path(sid), "ab") as f:
            rec = {"kind": "message", "message": {"role": "user", "content": "x"}, "ts": 1e10}
            f.write((json.dumps(rec) + "\n").encode())
    meta = store.meta(sid)
    assert meta.message_count == (5 if damage == "stale" else 4)
    assert meta.title.startswith("Please read")
    assert [m.id for m in store.list()] == [sid]


def test_list_resolve_latest_rename_delete(tmp_path):
    store = SessionStore(tmp_path)
    a = write_session(store, session_id="aaaa1111-x", thread=[Message("user", "fix the parser bug")] + THREAD[1:])
    b = write_session(store, session_id="aaaa2222-y", thread=[Message("user", "write docs")] + THREAD[1:])
    c = write_session(store, session_id="bbbb3333-z", thread=[Message("user", "parser docs too")] + THREAD[1:])
    assert [m.id for m in store.list()] == [c, b, a]  # newest first
    assert [m.id for m in store.list("PARSER")] == [c, a]
    assert [m.id for m in store.list("aaaa")] == [b, a]
    assert store.resolve("bbbb").id == c
    assert store.resolve("write").id == b
    assert store.resolve(a).id == a
    with pytest.raises(AmbiguousSession) as exc:
        store.resolve("aaaa")
    assert "aaaa1111" in str(exc.value) and "aaaa2222" in str(exc.value)
    with pytest.raises(SessionNotFound, match="no session matches 'zzz'"):
        store.resolve("zzz")
    assert store.latest().id == c
    assert store.latest("/elsewhere") is None
    assert store.latest("/proj").id == c
    store.rename(a, "  renamed   title ")
    assert store.resolve("renamed").id == a
    assert store.load(a).meta.title == "renamed title"
    assert store.list()[0].id == a  # renaming updates
    store.delete(b)
    assert {m.id for m in store.list()} == {a, c}
    with pytest.raises(SessionNotFound):
        store.delete(b)
    with pytest.raises(SessionNotFound):
        store.load("../etc/passwd")


def test_list_empty_and_headerless(tmp_path):
    store = SessionStore(tmp_path / "none")
    assert store.list() == [] and store.latest() is None
    store = SessionStore(tmp_path)
    (tmp_path / "dead.jsonl").write_bytes(b'{"kind":"hea')
    assert store.list() == []


def test_long_title_truncated(tmp_path):
    store = SessionStore(tmp_path)
    with store.create() as w:
        w.append_message(Message("user", "word " * 40))
        sid = w.id
    title = store.load(sid).meta.title
    assert len(title) == 80 and title.endswith("...")


def test_default_dir_follows_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    store = SessionStore()
    assert store.root == tmp_path / "nyzhi" / "sessions"
    with store.create() as w:
        w.append_message(Message("user", "hi"))
    assert len(store.list()) == 1


def test_a_session_that_never_took_a_turn_is_neither_kept_nor_listed(tmp_path):
    """Issue 55: a failed start (a bad -i, a refused prompt) left an empty "(untitled)"
    session in `nyz sessions`. Closed without a message, it is removed; one left by a crash
    before its first message is not listed."""
    store = SessionStore(tmp_path)
    with store.create(title="never ran") as w:
        sid = w.id
    assert not store.log_path(sid).exists() and not store.meta_path(sid).exists()
    crashed = store.create()  # killed before its first message: the log stays on disk
    assert store.log_path(crashed.id).exists() and store.list() == []
    kept = store.open(write_session(store))  # reopened (resumed) sessions are never removed
    kept.close()
    assert [m.id for m in store.list()] == [kept.id]


def test_writer_closed_rejects_appends(tmp_path):
    w = SessionStore(tmp_path).create()
    w.close()
    w.close()
    with pytest.raises(Exception, match="closed"):
        w.append_message(Message("user", "x"))


def test_sync_modes_validated(tmp_path):
    store = SessionStore(tmp_path)
    for mode in ("always", "never"):
        with store.create(sync=mode) as w:
            w.append_message(Message("user", mode))
    assert {m.title for m in store.list()} == {"always", "never"}
    with pytest.raises(ValueError, match="sync"):
        store.create(sync="sometimes")


def test_export_markdown_and_json(tmp_path):
    store = SessionStore(tmp_path)
    s = store.load(write_session(store))
    md = export_markdown(s)
    assert md.startswith("# Please read a.txt and summarise it\n")
    assert "## User\n\nPlease read a.txt" in md
    assert "### Tool call: `read` (call_1)" in md and '"path": "a.txt"' in md
    assert "### Tool result: `read` (call_1)" in md
    assert "````\nhello ```world```\n````" in md  # fence longer than content's backticks
    assert "<summary>Thinking</summary>" in md and "gpt-x" in md
    data = export_json(s)
    json.dumps(data)
    assert data["meta"]["id"] == s.id
    assert data["history"][1]["tool_calls"][0]["name"] == "read"
    assert [e["type"] for e in data["events"]][-1] == "turn_complete"


def test_files_are_only_appended(tmp_path):
    """The log only grows: earlier bytes are never rewritten by later appends."""
    store = SessionStore(tmp_path)
    w = store.create()
    w.append_message(Message("user", "one"))
    before = store.log_path(w.id).read_bytes()
    w.append_message(Message("assistant", "two"))
    w.close()
    assert store.log_path(w.id).read_bytes().startswith(before)
    assert os.path.getsize(store.log_path(w.id)) > len(before)


def test_message_json_keeps_image_refs_and_reads_old_messages():
    """One session message format (``records.message_to_json``): an image is a reference by
    hash, read back through the store's loader; a message written before images existed (no
    ``images`` key) still reads, with none."""
    from nyzhi.core.runtime.sessions.records import message_from_json, message_to_json
    from nyzhi.provider.types import ImagePart, Message

    image = ImagePart("image/png", b"\x89PNG\r\n\x1a\n-bytes")
    data = message_to_json(Message("user", "see this", images=(image,)))
    assert data["images"] == [{"sha256": image.sha256, "media_type": "image/png"}]
    assert b"bytes" not in repr(data).encode()  # by reference, never inline
    store = {image.sha256: image}
    back = message_from_json(data, lambda sha, _media: store.get(sha))
    assert back.images == (image,) and back.content == "see this"
    assert message_from_json(data, lambda _sha, _media: None).images == ()  # file gone
    old = {"role": "user", "content": "before images"}
    assert message_from_json(old).images == () and message_from_json(old).content == "before images"
