"""The context briefing a subagent gets from its parent."""

from __future__ import annotations

from pathlib import Path

from nyzhi.core.runtime.briefing import HEADING, briefing_from_context, build_briefing
from nyzhi.provider import types as pt
from nyzhi.tools.base import ChangeLog, FileChange, ToolContext

ROOT = Path("/work/proj")


def change(name: str, before: bytes | None, after: bytes | None, kind: str = "file"):
    return FileChange(path=ROOT / name, before=before, after=after, tool="edit", kind=kind)


def test_sections_in_order_with_net_changes_newest_first():
    changes = [
        change("src/new.py", None, b"a"),
        change("src/app.py", b"x", b"y"),
        change("src/new.py", b"a", b"b"),  # created, then edited: still "created"
        change("old.txt", b"gone", None),
        change("build", None, b"", kind="dir"),
    ]
    todos = [
        {"id": "1", "content": "write the parser", "status": "completed"},
        {"id": "2", "content": "wire   the\nparser", "status": "in_progress"},
        {"id": "3", "content": "document it", "status": "pending"},
        {"id": "4", "content": "dropped", "status": "cancelled"},
    ]
    messages = [
        pt.Message("user", "Add a parser for the config format."),
        pt.Message("assistant", "", tool_calls=(pt.ToolCall("t1", "read", "{}"),
                                                 pt.ToolCall("t2", "grep", "{}"))),
        pt.Message("tool", "file contents", tool_call_id="t1", name="read"),
        pt.Message("assistant", "The parser is in src/new.py."),
    ]
    text = build_briefing(ROOT, changes=changes, todos=todos, messages=messages)
    assert text.splitlines() == [
        HEADING,
        "Project root: /work/proj",
        "",
        "## Recent File Changes",
        "- created build/",
        "- deleted old.txt",
        "- created src/new.py",
        "- modified src/app.py",
        "",
        "## Active Todos",
        "- [~] 2: wire the parser",
        "- [ ] 3: document it",
        "",
        "## Recent Conversation",
        "- user: Add a parser for the config format.",
        "- assistant: (called read, grep)",
        "- assistant: The parser is in src/new.py.",
    ]


def test_at_most_twenty_changes_and_five_messages_of_two_hundred_chars():
    changes = [change(f"f{i:02}.py", b"a", b"b") for i in range(27)]
    messages = [pt.Message("user" if i % 2 else "assistant", f"m{i} " + "x" * 500)
                for i in range(9)]
    lines = build_briefing(ROOT, changes=changes, messages=messages).splitlines()
    listed = [line for line in lines if line.startswith("- modified")]
    assert len(listed) == 20 and listed[0] == "- modified f26.py" and listed[-1].endswith("f07.py")
    assert "- … and 7 more" in lines
    talk = lines[lines.index("## Recent Conversation") + 1:]
    assert [t.split(" ")[1].split(":")[0] for t in talk] == ["assistant", "user", "assistant",
                                                             "user", "assistant"]
    assert talk[0].startswith("- assistant: m4 ") and talk[-1].startswith("- assistant: m8 ")
    assert all(len(t.split(": ", 1)[1]) == 200 and t.endswith("…") for t in talk)


def test_capped_at_sixty_lines():
    todos = [{"id": str(i), "content": f"task {i}", "status": "pending"} for i in range(100)]
    lines = build_briefing(ROOT, todos=todos).splitlines()
    assert len(lines) == 60
    assert lines[0] == HEADING and lines[-1] == "… (briefing truncated)"
    assert len(build_briefing(ROOT, todos=todos, max_lines=10).splitlines()) == 10


def test_nothing_to_tell_is_just_the_root_and_paths_outside_stay_absolute():
    assert build_briefing(ROOT) == f"{HEADING}\nProject root: /work/proj"
    outside = FileChange(path=Path("/etc/hosts"), before=b"", after=b"x", tool="write")
    assert "- modified /etc/hosts" in build_briefing(ROOT, changes=[outside])


def test_from_a_tool_context(tmp_path):
    log = ChangeLog()
    log.record(FileChange(path=tmp_path / "a.py", before=None, after=b"x", tool="write"))
    ctx = ToolContext(workspace_root=tmp_path, cwd=tmp_path, changes=log,
                      state={"todos": [{"id": "1", "content": "check", "status": "pending"}]})
    text = briefing_from_context(ctx, [pt.Message("user", "hi")])
    assert "- created a.py" in text and "- [ ] 1: check" in text and "- user: hi" in text
