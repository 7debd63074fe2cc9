"""read, tail_file, list_dir, directory_tree, file_info on real files."""

from pathlib import Path

import pytest
from _toolctx import make_ctx

from nyzhi.tools.builtin.files_read import (
    DirectoryTreeTool,
    FileInfoTool,
    ListDirTool,
    ReadTool,
    TailFileTool,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    return root


async def test_read_numbers_lines_in_original_format(ws: Path) -> None:
    res = await ReadTool().run({"file_path": "a.txt"}, make_ctx(ws))
    assert not res.is_error
    assert res.output.splitlines()[0] == "     1|line 1"
    assert res.output.splitlines()[-1] == "    10|line 10"
    assert res.metadata["total_lines"] == 10


async def test_read_offset_and_limit_with_continuation_hint(ws: Path) -> None:
    res = await ReadTool().run(
        {"file_path": str(ws / "a.txt"), "offset": 3, "limit": 2}, make_ctx(ws)
    )
    assert res.output == "     3|line 3\n     4|line 4\n... (6 more lines; continue with offset=5)"


async def test_read_offset_past_end_is_an_error(ws: Path) -> None:
    res = await ReadTool().run({"file_path": "a.txt", "offset": 11}, make_ctx(ws))
    assert res.is_error
    assert res.output == "offset 11 is past the end of a.txt (10 lines); use an offset from 1 to 10."


async def test_read_truncates_long_lines(ws: Path) -> None:
    (ws / "long.txt").write_text("x" * 2500 + "\n")
    res = await ReadTool().run({"file_path": "long.txt"}, make_ctx(ws))
    assert res.output == "     1|" + "x" * 2000 + "… [line truncated, 2500 chars]"


async def test_read_refuses_binary_and_directories_and_missing(ws: Path) -> None:
    (ws / "bin.dat").write_bytes(b"abc\0def")
    ctx = make_ctx(ws)
    res = await ReadTool().run({"file_path": "bin.dat"}, ctx)
    assert res.is_error and "binary" in res.output and "file_info" in res.output
    res = await ReadTool().run({"file_path": "."}, ctx)
    assert res.is_error and "is a directory" in res.output
    res = await ReadTool().run({"file_path": "nope.txt"}, ctx)
    assert res.is_error and res.output == "nope.txt: file not found; check the path with glob or list_dir"
    res = await ReadTool().run({}, ctx)
    assert res.is_error and res.output == "'file_path' must be a non-empty path string"


async def test_read_bad_limit_is_a_clear_error(ws: Path) -> None:
    res = await ReadTool().run({"file_path": "a.txt", "limit": "ten"}, make_ctx(ws))
    assert res.is_error and res.output == "'limit' must be an integer ≥ 1, got 'ten'"


async def test_tail_file_last_lines_numbered(ws: Path) -> None:
    res = await TailFileTool().run({"path": "a.txt", "lines": 2}, make_ctx(ws))
    assert res.output == "     9|line 9\n    10|line 10"
    assert res.metadata["total_lines"] == 10
    res = await TailFileTool().run({"path": "a.txt"}, make_ctx(ws))
    assert len(res.output.splitlines()) == 10


async def test_list_dir_marks_dirs_and_files_and_hides_dotfiles(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / ".hidden").write_text("h")
    (ws / "b.bin").write_bytes(b"x" * 2048)
    res = await ListDirTool().run({"path": "."}, make_ctx(ws))
    assert res.output.splitlines() == [
        "[DIR]  sub/",
        "[FILE] a.txt (71 B)",
        "[FILE] b.bin (2.0 KB)",
    ]


async def test_directory_tree_depth_and_excludes(ws: Path) -> None:
    for d in ("src/pkg/deep/deeper", "node_modules/x", ".git/objects", "__pycache__", ".venv/lib"):
        (ws / d).mkdir(parents=True)
    (ws / "src" / "pkg" / "mod.py").write_text("")
    (ws / "src" / "pkg" / "deep" / "deeper" / "f.py").write_text("")
    res = await DirectoryTreeTool().run({"path": ".", "depth": 3}, make_ctx(ws))
    assert res.output.splitlines() == [
        "./",
        "├── src/",
        "│   └── pkg/",
        "│       ├── deep/",
        "│       └── mod.py",
        "└── a.txt",
    ]


async def test_file_info_reports_type_size_and_mode(ws: Path) -> None:
    (ws / "a.txt").chmod(0o640)
    (ws / "link").symlink_to("a.txt")
    res = await FileInfoTool().run({"path": "a.txt"}, make_ctx(ws))
    lines = res.output.splitlines()
    assert lines[:4] == [
        "path: a.txt",
        "type: file",
        "size: 71 bytes (71 B)",
        "permissions: -rw-r----- (640)",
    ]
    assert lines[4].startswith("modified: ")
    res = await FileInfoTool().run({"path": "link"}, make_ctx(ws))
    assert "type: symlink -> a.txt" in res.output and "target type: file" in res.output
