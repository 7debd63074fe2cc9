"""Compaction keeps the runtime's state record verbatim, next to (never inside) the summary.

End to end in-process: the real runtime, real tools writing real files, real HTTP to the fake
LLM, whose summary is empty on purpose. The record must reach the next request, be saved with
the compacted thread, and survive a resume and a further compaction.
"""

from __future__ import annotations

from nyzhi import convert
from nyzhi.core.loop.state_record import (
    HEADER,
    Failure,
    StateRecord,
    _merge,
    last_failure,
    read_state,
)
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.core.runtime.sessions import SessionStore
from nyzhi.provider.types import Message, ToolCall
from nyzhi.testing.fake_llm import FakeRequest, open_fake_llm, reply, tool_call

SUMMARISER = "You write precise working summaries"
TODOS = [
    {"id": "1", "content": "write hello.py", "status": "completed"},
    {"id": "2", "content": "make the tests pass", "status": "in_progress"},
]


def is_summary_request(request: FakeRequest) -> bool:
    return any(role == "system" and SUMMARISER in text for role, text in request.transcript())


def sent_text(request: FakeRequest) -> str:
    return "\n".join(text for _role, text in request.transcript())


async def run_turn(rt, prompt: str) -> None:
    handle = await rt.submit(prompt)
    outcome = await handle.wait()
    assert outcome is not None and not outcome.is_error, outcome


async def test_compaction_keeps_todos_files_prompt_and_failure_across_resume(
    workspace, home, configure
):
    (workspace / "notes.txt").write_text("old line\n")
    (workspace / "old.txt").write_text("obsolete\n")
    turns = {
        "build the greeting feature": [
            reply(tool_calls=[tool_call("todowrite", {"todos": TODOS}),
                              tool_call("read", {"file_path": "notes.txt"})]),
            reply(tool_calls=[
                tool_call("write", {"file_path": "hello.py", "content": "print('hi')\n"}),
                tool_call("edit", {"file_path": "notes.txt", "old_string": "old line",
                                   "new_string": "new line"}),
                tool_call("delete_file", {"path": "old.txt"}),
            ]),
            reply(tool_calls=[tool_call("bash", {"command": "echo boom-output; exit 3"})]),
            reply("first turn done"),
        ],
        "what next?": [reply("second turn done")],
        "after the resume": [
            reply(tool_calls=[tool_call("write", {"file_path": "later.py", "content": "x = 1\n"})]),
            reply("third turn done"),
        ],
        "and now?": [reply("fourth turn done")],
    }

    def script(request: FakeRequest):
        if is_summary_request(request):
            return reply("")  # the model's summary is empty: only the record remains
        return turns[request.last_user_text()].pop(0)

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        options = RuntimeOptions(cwd=workspace, trust="full")
        async with open_runtime(options) as rt:
            await run_turn(rt, "build the greeting feature")
            await rt.compact()
            await run_turn(rt, "what next?")
            session_id = rt.session_id
        after_compaction = server.requests[-1]

        resumed = RuntimeOptions(cwd=workspace, trust="full", session=session_id)
        async with open_runtime(resumed) as rt:
            await run_turn(rt, "after the resume")
            after_resume = next(r for r in server.requests if r.last_user_text() == "after the resume")
            await rt.compact()
            await run_turn(rt, "and now?")
        after_second = server.requests[-1]

    assert (workspace / "hello.py").exists() and not (workspace / "old.txt").exists()
    summaries = [r for r in server.requests if is_summary_request(r)]
    assert len(summaries) == 2

    for request in (after_compaction, after_resume, after_second):
        text = sent_text(request)
        assert HEADER in text
        # the full history was summarised away: these come from the record alone
        assert "First request of the session:\n  build the greeting feature" in text
        assert "[x] 1: write hello.py" in text and "[~] 2: make the tests pass" in text
        assert "created hello.py" in text
        assert "edited notes.txt" in text
        assert "deleted old.txt" in text
        assert "Last failing command: echo boom-output; exit 3" in text
        assert "boom-output" in text
    # a file written after the resume joins the files the resumed record carried
    assert "created later.py" in sent_text(after_second)
    assert "later.py" not in sent_text(after_compaction)
    # compaction left only the head and the recent tail: the first prompt is not in the thread
    assert "build the greeting feature" not in [t for _r, t in after_compaction.transcript()]

    # the record was saved with the compacted thread
    store = SessionStore(home / ".local" / "share" / "nyzhi" / "sessions")
    session = store.load(session_id)
    record = read_state(session.state)
    assert record.first_prompt == "build the greeting feature"
    assert ("later.py", "created") in record.files and ("hello.py", "created") in record.files
    assert [t["id"] for t in record.todos] == ["1", "2"]


# ---- the parts --------------------------------------------------------------------------------


def test_record_round_trips_and_tolerates_damage():
    record = StateRecord("fix it", TODOS, [("a.py", "created"), ("b.py", "deleted")],
                         Failure("pytest -x", "1 failed"))
    assert read_state(convert.unstructure(record)) == record
    assert read_state(None) == StateRecord()
    damaged = read_state({"first_prompt": 3, "todos": ["x", {"id": "1"}],
                          "files": [{"path": "a", "action": "exploded"}, {"x": 1}],
                          "last_failure": {"output": "no command"}})
    assert damaged == StateRecord("", [{"id": "1"}], [("a", "changed")], None)


def test_empty_record_says_so():
    text = StateRecord().render()
    assert text.startswith(HEADER)
    assert "No todos." in text and "Files changed in this session: none" in text
    assert "Last failing command: none" in text


def test_file_actions_combine_to_the_net_change():
    merged = _merge(
        [("a", "created"), ("b", "edited"), ("c", "created"), ("d", "deleted"), ("e", "changed")],
        [("a", "edited"), ("b", "deleted"), ("c", "deleted"), ("d", "created"), ("e", "edited")],
    )
    assert merged == [("a", "created"), ("b", "deleted"), ("d", "edited"), ("e", "edited")]
    assert _merge([("x", "created")], [("x", "changed")]) == [("x", "created")]


def test_last_failure_is_the_latest_failed_command():
    ok = ToolCall("1", "bash", '{"command": "ls"}')
    bad = ToolCall("2", "bash", '{"command": "make"}')
    other = ToolCall("3", "read", '{"file_path": "x"}')
    thread = [
        Message("assistant", "", tool_calls=(bad, ok, other)),
        Message("tool", "\n".join(f"line {i}" for i in range(40)), tool_call_id="2", is_error=True),
        Message("tool", "fine", tool_call_id="1"),
        Message("tool", "no such file", tool_call_id="3", is_error=True),  # not a command
    ]
    failure = last_failure(thread)
    assert failure is not None and failure.command == "make"
    assert failure.output.splitlines()[-1] == "line 39" and "line 0\n" not in failure.output
    assert last_failure(thread[:1]) is None
