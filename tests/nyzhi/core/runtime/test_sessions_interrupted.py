"""Loading a session pairs every tool call with a result; resuming records the repair.

A process killed between recording a tool call and its result leaves an unmatched call; these
tests write such logs with the real writer (what a killed ``nyz`` leaves behind) and check the
loaded thread, the marks ``open`` appends, and that the repair survives a kill while marking.
"""

from __future__ import annotations

from nyzhi.core import events as ev
from nyzhi.core.runtime.sessions import SessionStore
from nyzhi.core.runtime.sessions.pairing import INTERRUPTED_TEXT, pair_tool_results
from nyzhi.core.runtime.sessions.store import interrupted_mark
from nyzhi.provider.types import Message, ToolCall

A = ToolCall("a", "read", '{"file_path": "x"}')
B = ToolCall("b", "bash", '{"command": "make"}')
C = ToolCall("c", "grep", '{"pattern": "y"}')
USER = Message("user", "do it")


def result(call: ToolCall, text: str = "ok") -> Message:
    return Message("tool", text, tool_call_id=call.id, name=call.name)


def interrupted(call: ToolCall) -> Message:
    return Message("tool", INTERRUPTED_TEXT, tool_call_id=call.id, name=call.name, is_error=True)


def assert_paired(messages: list[Message]) -> None:
    """Each assistant's calls are answered right after it, once each, in call order."""
    i = 0
    while i < len(messages):
        m = messages[i]
        i += 1
        assert m.role != "tool", f"result {m.tool_call_id} answers no call"
        if m.role == "assistant" and m.tool_calls:
            ids = [r.tool_call_id for r in messages[i : i + len(m.tool_calls)]]
            assert ids == [c.id for c in m.tool_calls]
            i += len(m.tool_calls)


def crashed_session(store: SessionStore, thread: list[Message]) -> str:
    """A session whose writer died after ``thread`` (no close: the fd is simply dropped)."""
    w = store.create(cwd="/p", sync="never")
    w.append_event(ev.SessionStart(w.id, "/p"))
    for m in thread:
        w.append_message(m)
    return w.id


# ---- the pairing rule -------------------------------------------------------------------------


def test_several_calls_without_results_are_answered_in_order():
    thread = [USER, Message("assistant", "", tool_calls=(A, B, C))]
    repaired, missing = pair_tool_results(thread)
    assert repaired == [*thread, interrupted(A), interrupted(B), interrupted(C)]
    assert missing == [A, B, C]


def test_partial_results_keep_what_was_recorded():
    thread = [USER, Message("assistant", "", tool_calls=(A, B, C)), result(A, "done a")]
    repaired, missing = pair_tool_results(thread)
    assert repaired == [*thread, interrupted(B), interrupted(C)]
    assert missing == [B, C]


def test_results_out_of_order_duplicated_or_orphaned_are_normalised():
    stray = Message("tool", "?", tool_call_id="zz", name="read")
    thread = [
        stray, USER, Message("assistant", "", tool_calls=(A, B)),
        result(B, "b"), result(A, "a"), result(A, "again"), stray,
        Message("assistant", "next", tool_calls=(C,)),
    ]
    repaired, missing = pair_tool_results(thread)
    assert repaired == [
        USER, thread[2], result(A, "a"), result(B, "b"), thread[7], interrupted(C),
    ]
    assert missing == [C]
    assert_paired(repaired)


def test_a_paired_thread_is_unchanged():
    thread = [USER, Message("assistant", "", tool_calls=(A, B)), result(A), result(B),
              Message("assistant", "done")]
    assert pair_tool_results(thread) == (thread, [])


# ---- load, open, replay -----------------------------------------------------------------------


def test_load_repairs_and_open_records_the_marks_once(tmp_path):
    store = SessionStore(tmp_path)
    ask = Message("assistant", "running both", tool_calls=(A, B))
    sid = crashed_session(store, [USER, ask, result(A, "done a")])

    loaded = store.load(sid)  # a read (replay, export) writes nothing
    assert loaded.messages == [USER, ask, result(A, "done a"), interrupted(B)]
    assert loaded.history == [USER, ask, result(A, "done a")]  # what was recorded
    assert loaded.interrupted == [B]
    size = store.log_path(sid).stat().st_size

    writer = store.open(sid)  # a resume records the result it lacked
    assert store.log_path(sid).stat().st_size > size
    writer.append_message(Message("user", "go on"))
    writer.close()

    again = store.load(sid)
    assert again.interrupted == []
    assert again.messages == [USER, ask, result(A, "done a"), interrupted(B), Message("user", "go on")]
    assert again.history == again.messages  # the mark is recorded: history has it too
    marks = [e for e in again.events if e.type == "tool_done"]
    assert marks == [interrupted_mark(B)]
    assert again.meta.message_count == 5
    assert store.meta(sid).message_count == 5  # the meta cache agrees with the log
    store.open(sid).close()  # nothing left to mark
    assert [e.type for e in store.load(sid).events].count("tool_done") == 1


def test_a_kill_while_marking_is_finished_by_the_next_resume(tmp_path):
    store = SessionStore(tmp_path)
    ask = Message("assistant", "", tool_calls=(A, B, C))
    sid = crashed_session(store, [USER, ask])
    # the first resume died after marking A, in the middle of writing B's mark
    log = store.log_path(sid)
    with open(log, "ab") as f:
        f.write(
            b'{"kind":"event","event":{"type":"tool_done","agent":"/agents/main","call_id":"a",'
            b'"name":"read","output":"interrupted","is_error":true,"metadata":{"interrupted":true}}}\n'
            b'{"kind":"event","event":{"type":"tool_done","agent":"/agents/m'
        )
    assert store.load(sid).interrupted == [B, C]
    store.open(sid).close()
    session = store.load(sid)
    assert session.skipped_lines == 0  # the torn line was trimmed before appending
    assert [m.tool_call_id for m in session.messages if m.role == "tool"] == ["a", "b", "c"]
    assert session.interrupted == []
    assert_paired(session.messages)


def test_interrupted_after_a_compaction_snapshot(tmp_path):
    store = SessionStore(tmp_path)
    sid = crashed_session(store, [USER, Message("assistant", "hi")])
    w = store.open(sid)
    head = Message("user", "[Conversation summary]\nearlier")
    w.replace_thread([head], state={"first_prompt": "do it"})
    ask = Message("assistant", "", tool_calls=(B,))
    w.append_message(Message("user", "more"))
    w.append_message(ask)  # killed here: no close, no result
    session = store.load(sid)
    assert session.messages == [head, Message("user", "more"), ask, interrupted(B)]
    assert session.state == {"first_prompt": "do it"}
    store.open(sid).close()
    assert store.load(sid).messages == session.messages


def test_ephemeral_resume_writes_nothing_but_still_gets_a_valid_thread(tmp_path):
    store = SessionStore(tmp_path)
    sid = crashed_session(store, [USER, Message("assistant", "", tool_calls=(A,))])
    before = store.log_path(sid).read_bytes()
    assert store.load(sid).messages[-1] == interrupted(A)
    assert store.log_path(sid).read_bytes() == before
