"""File tools on a full or read-only disk (a real tmpfs): the tool returns an error naming
the file and the reason to the model, and the original file is untouched (atomic writes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nyzhi.oserror import StorageError
from nyzhi.testing import machine_faults as mf
from nyzhi.tools.base import SandboxLevel, ToolContext
from nyzhi.tools.builtin.files_write import MultiEditTool, WriteTool
from nyzhi.tools.sandbox import SandboxPolicy
from nyzhi.tools.undo import undo_last

pytestmark = pytest.mark.skipif(mf.skip_reason() is not None, reason=mf.skip_reason() or "")

ORIGINAL = b"first line\nthe original content\n"
BIG = "x" * 64 * 1024  # more than the disk has left


def ctx_for(root: Path) -> ToolContext:
    policy = SandboxPolicy(
        level=SandboxLevel.WORKSPACE_WRITE, workspace_root=root, allow_temp=False
    )
    return ToolContext(workspace_root=root, cwd=root, sandbox=policy)


@pytest.fixture
def disk(tmp_path):
    with mf.small_tmpfs(tmp_path / "ws") as root:
        (root / "a.txt").write_bytes(ORIGINAL)
        (root / "b.txt").write_bytes(ORIGINAL)
        yield root


async def test_write_on_a_full_disk_is_an_error_and_leaves_the_file(disk):
    mf.fill(disk)
    ctx = ctx_for(disk)
    result = await WriteTool().run({"file_path": "a.txt", "content": BIG}, ctx)
    assert result.is_error
    assert f"could not write {disk / 'a.txt'}: no space left on device" in result.output
    assert "nothing was changed" in result.output
    assert (disk / "a.txt").read_bytes() == ORIGINAL
    assert sorted(os.listdir(disk)) == [".filler", "a.txt", "b.txt"]  # no temp file left
    assert ctx.changes.changes == []  # nothing to undo: nothing happened


async def test_multi_file_change_on_a_full_disk_puts_back_what_it_wrote(disk):
    ctx = ctx_for(disk)
    mf.fill(disk, leave=8192)  # room for one small file, not for both
    edits = {"edits": [
        {"file": "a.txt", "replacements": [{"old": "original", "new": "edited"}]},
        {"file": "b.txt", "replacements": [{"old": "original", "new": BIG}]},
    ]}
    result = await MultiEditTool().run(edits, ctx)
    assert result.is_error, result.output
    assert "no space left on device" in result.output and str(disk / "b.txt") in result.output
    assert "the files written before it were put back" in result.output
    assert (disk / "a.txt").read_bytes() == ORIGINAL
    assert (disk / "b.txt").read_bytes() == ORIGINAL


async def test_write_on_a_read_only_disk_is_an_error(disk):
    mf.remount(disk, read_only=True)
    result = await WriteTool().run({"file_path": "a.txt", "content": "new"}, ctx_for(disk))
    assert result.is_error and "read-only file system" in result.output
    assert str(disk / "a.txt") in result.output
    assert (disk / "a.txt").read_bytes() == ORIGINAL


async def test_undo_on_a_read_only_disk_keeps_the_record(disk):
    ctx = ctx_for(disk)
    result = await WriteTool().run({"file_path": "a.txt", "content": "new\n"}, ctx)
    assert not result.is_error, result.output
    mf.remount(disk, read_only=True)
    with pytest.raises(StorageError, match="could not put back .*a.txt: read-only file system"):
        undo_last(ctx.changes)
    assert len(ctx.changes.changes) == 1  # still recorded: undo again once writable
    mf.remount(disk, read_only=False)
    assert undo_last(ctx.changes) == [f"reverted {disk / 'a.txt'}"]
    assert (disk / "a.txt").read_bytes() == ORIGINAL
