"""write, edit, multi_edit, delete/move/copy/create_dir: behaviour, sandbox, undo records."""

import os
from pathlib import Path

import pytest
from _toolctx import make_ctx

from nyzhi.tools.builtin.files_write import (
    CopyFileTool,
    CreateDirTool,
    DeleteFileTool,
    EditTool,
    MoveFileTool,
    MultiEditTool,
    WriteTool,
)
from nyzhi.tools.undo import UndoConflict, undo_all, undo_last


def empty(directory: Path) -> bool:
    return os.listdir(directory) == []


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    return 1\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    return out


async def test_write_creates_parents_records_change_and_shows_diff(ws: Path) -> None:
    ctx = make_ctx(ws)
    res = await WriteTool().run({"file_path": "pkg/sub/new.py", "content": "x = 1\n"}, ctx)
    assert not res.is_error
    assert res.output.splitlines()[:3] == [
        "Created pkg/sub/new.py (1 lines)",
        "--- /dev/null",
        "+++ b/pkg/sub/new.py",
    ]
    assert (ws / "pkg/sub/new.py").read_text() == "x = 1\n"
    files = [c for c in ctx.changes.changes if c.kind == "file"]
    assert [(c.path, c.before, c.after, c.tool) for c in files] == [
        (ws / "pkg/sub/new.py", None, b"x = 1\n", "write")
    ]
    assert len({c.batch for c in ctx.changes.changes}) == 1
    # One undo removes the file and the directories the write created.
    undo_last(ctx.changes)
    assert not (ws / "pkg").exists()


async def test_write_preserves_mode_of_existing_file(ws: Path) -> None:
    (ws / "a.py").chmod(0o750)
    await WriteTool().run({"file_path": "a.py", "content": "y\n"}, make_ctx(ws))
    assert (ws / "a.py").stat().st_mode & 0o777 == 0o750


async def test_write_preview_is_a_unified_diff_without_writing(ws: Path) -> None:
    ctx = make_ctx(ws)
    text = await WriteTool().preview(
        {"file_path": "a.py", "content": "def f():\n    return 2\n"}, ctx
    )
    assert text.splitlines() == [
        "--- a/a.py",
        "+++ b/a.py",
        "@@ -1,2 +1,2 @@",
        " def f():",
        "-    return 1",
        "+    return 2",
    ]
    assert (ws / "a.py").read_text() == "def f():\n    return 1\n"
    assert ctx.changes.changes == []


async def test_sandbox_refuses_write_outside_workspace(ws: Path, outside: Path) -> None:
    ctx = make_ctx(ws)
    res = await WriteTool().run({"file_path": str(outside / "x.txt"), "content": "pwned"}, ctx)
    assert res.is_error and res.output.startswith("sandbox: write to ")
    assert not (outside / "x.txt").exists()
    res = await WriteTool().run({"file_path": "../outside/y.txt", "content": "pwned"}, ctx)
    assert res.is_error and "refused" in res.output
    assert empty(outside)


async def test_sandbox_refuses_write_through_symlinked_parent(ws: Path, outside: Path) -> None:
    (ws / "escape").symlink_to(outside)
    ctx = make_ctx(ws)
    for tool, args in [
        (WriteTool(), {"file_path": "escape/x.txt", "content": "pwned"}),
        (CopyFileTool(), {"source": "a.py", "destination": "escape/copy.py"}),
        (MoveFileTool(), {"source": "a.py", "destination": "escape/moved.py"}),
        (CreateDirTool(), {"path": "escape/newdir"}),
    ]:
        res = await tool.run(args, ctx)
        assert res.is_error and "refused" in res.output, (tool.name, res.output)
    assert empty(outside)
    assert (ws / "a.py").exists()
    assert ctx.changes.changes == []


async def test_sandbox_refuses_edit_of_symlink_pointing_outside(ws: Path, outside: Path) -> None:
    (outside / "target.txt").write_text("secret = 1\n")
    (ws / "link.txt").symlink_to(outside / "target.txt")
    res = await EditTool().run(
        {"file_path": "link.txt", "old_string": "1", "new_string": "2"}, make_ctx(ws)
    )
    assert res.is_error and "refused" in res.output
    assert (outside / "target.txt").read_text() == "secret = 1\n"


async def test_edit_exactly_once(ws: Path) -> None:
    ctx = make_ctx(ws)
    res = await EditTool().run(
        {"file_path": "a.py", "old_string": "return 1", "new_string": "return 42"}, ctx
    )
    assert res.output.splitlines()[0] == "Edited a.py (1 replacement)"
    assert "-    return 1" in res.output and "+    return 42" in res.output
    assert (ws / "a.py").read_text() == "def f():\n    return 42\n"
    assert ctx.changes.changes[0].before == b"def f():\n    return 1\n"


async def test_edit_error_texts(ws: Path) -> None:
    (ws / "b.txt").write_text("x\nx\n")
    ctx = make_ctx(ws)
    res = await EditTool().run({"file_path": "b.txt", "old_string": "y", "new_string": "z"}, ctx)
    assert res.is_error and res.output == (
        "b.txt: old_string not found. It must match the file exactly, including whitespace and "
        "indentation: read the file again and copy the text without the line-number prefix."
    )
    res = await EditTool().run({"file_path": "b.txt", "old_string": "x", "new_string": "z"}, ctx)
    assert res.is_error and res.output == (
        "b.txt: old_string matched 2 times; it must match exactly once. Add surrounding lines "
        "to make it unique, or set replace_all to true to change all 2."
    )
    res = await EditTool().run({"file_path": "nope.txt", "old_string": "x", "new_string": "z"}, ctx)
    assert res.is_error and res.output == (
        "nope.txt: file not found; check the path with glob, or use write to create it"
    )
    res = await EditTool().run({"file_path": "b.txt", "old_string": "x", "new_string": "x"}, ctx)
    assert res.is_error and "identical" in res.output
    assert (ws / "b.txt").read_text() == "x\nx\n"
    assert ctx.changes.changes == []
    res = await EditTool().run(
        {"file_path": "b.txt", "old_string": "x", "new_string": "z", "replace_all": True}, ctx
    )
    assert res.output.splitlines()[0] == "Edited b.txt (2 replacements)"
    assert (ws / "b.txt").read_text() == "z\nz\n"


async def test_edit_matches_crlf_files_and_keeps_bytes(ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\n\xff\r\n")
    await EditTool().run(
        {"file_path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"}, make_ctx(ws)
    )
    assert (ws / "w.txt").read_bytes() == b"1\r\n2\r\n\xff\r\n"


async def test_multi_edit_is_all_or_nothing(ws: Path) -> None:
    (ws / "b.py").write_text("B = 1\n")
    ctx = make_ctx(ws)
    edits = [
        {"file": "a.py", "replacements": [{"old": "return 1", "new": "return 2"}]},
        {
            "file": "b.py",
            "replacements": [{"old": "B = 1", "new": "B = 2"}, {"old": "missing", "new": "x"}],
        },
    ]
    res = await MultiEditTool().run({"edits": edits}, ctx)
    assert res.is_error
    assert res.output.startswith("edits[2] (b.py) replacement 2: old_string not found.")
    assert (ws / "a.py").read_text() == "def f():\n    return 1\n"
    assert (ws / "b.py").read_text() == "B = 1\n"
    assert ctx.changes.changes == []
    edits[1]["replacements"].pop()
    res = await MultiEditTool().run({"edits": edits}, ctx)
    assert res.output.splitlines()[0] == "Edited 2 files: a.py, b.py"
    assert (ws / "b.py").read_text() == "B = 2\n"
    assert MultiEditTool().target_paths({"edits": edits}) == ["a.py", "b.py"]
    # One undo reverts both files.
    assert len(undo_last(ctx.changes)) == 2
    assert (ws / "a.py").read_text() == "def f():\n    return 1\n"
    assert (ws / "b.py").read_text() == "B = 1\n"


async def test_multi_edit_sandbox_refusal_writes_nothing(ws: Path, outside: Path) -> None:
    (outside / "o.txt").write_text("o\n")
    edits = [
        {"file": "a.py", "replacements": [{"old": "return 1", "new": "return 2"}]},
        {"file": str(outside / "o.txt"), "replacements": [{"old": "o", "new": "p"}]},
    ]
    res = await MultiEditTool().run({"edits": edits}, make_ctx(ws))
    assert res.is_error and "refused" in res.output
    assert (ws / "a.py").read_text() == "def f():\n    return 1\n"
    assert (outside / "o.txt").read_text() == "o\n"


async def test_delete_file_and_empty_dir_then_undo(ws: Path) -> None:
    ctx = make_ctx(ws)
    (ws / "a.py").chmod(0o700)
    res = await DeleteFileTool().run({"path": "a.py"}, ctx)
    assert res.output == "Deleted file a.py" and not (ws / "a.py").exists()
    (ws / "d").mkdir()
    (ws / "d" / "f").write_text("")
    res = await DeleteFileTool().run({"path": "d"}, ctx)
    assert res.is_error and "not empty" in res.output
    (ws / "d" / "f").unlink()
    assert (await DeleteFileTool().run({"path": "d"}, ctx)).output == "Deleted directory d"
    undo_all(ctx.changes)
    assert (ws / "d").is_dir()
    assert (ws / "a.py").read_text() == "def f():\n    return 1\n"
    assert (ws / "a.py").stat().st_mode & 0o777 == 0o700


async def test_move_and_copy_refuse_existing_destination(ws: Path) -> None:
    (ws / "b.py").write_text("b")
    ctx = make_ctx(ws)
    for tool in (MoveFileTool(), CopyFileTool()):
        res = await tool.run({"source": "a.py", "destination": "b.py"}, ctx)
        assert res.is_error
        assert res.output == "destination b.py already exists; delete it first or pick another name"
    assert (ws / "b.py").read_text() == "b"


async def test_move_copy_create_parents_and_undo(ws: Path) -> None:
    ctx = make_ctx(ws)
    res = await CopyFileTool().run({"source": "a.py", "destination": "x/y/c.py"}, ctx)
    assert res.output == "Copied a.py -> x/y/c.py"
    res = await MoveFileTool().run({"source": "a.py", "destination": "m/a.py"}, ctx)
    assert res.output == "Moved a.py -> m/a.py"
    assert not (ws / "a.py").exists() and (ws / "m/a.py").read_text().startswith("def f")
    undo_last(ctx.changes)  # the move, as one batch
    assert (ws / "a.py").exists() and not (ws / "m").exists()
    undo_last(ctx.changes)  # the copy
    assert not (ws / "x").exists()
    assert undo_last(ctx.changes) == []


async def test_create_dir_mkdir_p(ws: Path) -> None:
    ctx = make_ctx(ws)
    assert (await CreateDirTool().run({"path": "p/q/r"}, ctx)).output == "Created directory p/q/r"
    assert (ws / "p/q/r").is_dir()
    assert (
        await CreateDirTool().run({"path": "p/q/r"}, ctx)
    ).output == "Directory p/q/r already exists"
    res = await CreateDirTool().run({"path": "a.py"}, ctx)
    assert res.is_error and res.output == "a.py already exists and is not a directory"
    undo_last(ctx.changes)
    assert not (ws / "p").exists()


async def test_undo_refuses_when_file_changed_afterwards(ws: Path) -> None:
    ctx = make_ctx(ws)
    await EditTool().run({"file_path": "a.py", "old_string": "1", "new_string": "2"}, ctx)
    (ws / "a.py").write_text("user edit\n")
    with pytest.raises(UndoConflict):
        undo_last(ctx.changes)
    assert len(ctx.changes.changes) == 1  # still recorded
    undo_last(ctx.changes, force=True)
    assert (ws / "a.py").read_text() == "def f():\n    return 1\n"


async def test_write_tools_declare_permission_and_targets() -> None:
    from nyzhi.tools.base import Permission

    for cls in (
        WriteTool,
        EditTool,
        MultiEditTool,
        DeleteFileTool,
        MoveFileTool,
        CopyFileTool,
        CreateDirTool,
    ):
        assert cls.writes_files and cls.permission is Permission.NEEDS_APPROVAL
    assert MoveFileTool().target_paths({"source": "a", "destination": "b"}) == ["a", "b"]
    assert WriteTool().target_paths({"file_path": "x", "content": "c"}) == ["x"]


async def test_no_sandbox_means_no_restriction(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path / "ws", sandbox=False)
    (tmp_path / "ws").mkdir()
    res = await WriteTool().run({"file_path": str(tmp_path / "free.txt"), "content": "ok"}, ctx)
    assert not res.is_error and (tmp_path / "free.txt").read_text() == "ok"
