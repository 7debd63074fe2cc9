"""grep, glob and fuzzy_find with FIFOs, sockets and devices planted in the tree: nothing
hangs, with ripgrep and with the Python walker. ripgrep opens ignore files with a blocking
``open``, so a FIFO ``.gitignore`` (at the root, in a subdirectory, as ``.git/info/exclude``)
made ``glob`` wait for ever; a FIFO given as grep's path did too. Each call here is bounded by
``fail_after``: a hang is the bug."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest
import trio
from _toolctx import git, make_ctx

from nyzhi.tools.builtin.search import FuzzyFindTool, GlobTool, GrepTool

HAVE_RG = shutil.which("rg") is not None
LIMIT = 30  # seconds: far beyond any answer here; reached only by a hang


@pytest.fixture(params=["rg", "python"])
def engine(request, monkeypatch) -> str:
    if request.param == "rg":
        if not HAVE_RG:
            pytest.skip("ripgrep (Debian package 'ripgrep') is not installed")
        monkeypatch.delenv("NYZHI_SEARCH_ENGINE", raising=False)
    else:
        monkeypatch.setenv("NYZHI_SEARCH_ENGINE", "python")
    return request.param


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def needle():\n    pass\n")
    (root / "skipped.log").write_text("needle in a log\n")
    git(root, "init", "-q")
    return root


PLANTS = {
    "root-gitignore": ".gitignore",
    "sub-gitignore": "src/.gitignore",
    "ignore": "src/.ignore",
    "rgignore": ".rgignore",
    "info-exclude": ".git/info/exclude",
}


def plant(root: Path, rel: str, kind: str = "fifo") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    return path


@pytest.mark.parametrize("where", list(PLANTS))
async def test_a_special_ignore_file_hangs_nothing(tree: Path, engine: str, where: str) -> None:
    plant(tree, PLANTS[where])
    ctx = make_ctx(tree)
    with trio.fail_after(LIMIT):
        globbed = await GlobTool().run({"pattern": "**/*.py"}, ctx)
        grepped = await GrepTool().run({"pattern": "needle"}, ctx)
        fuzzy = await FuzzyFindTool().run({"query": "app"}, ctx)
    assert "src/app.py" in globbed.output and "src/app.py:1:def needle():" in grepped.output
    assert "src/app.py" in fuzzy.output
    if engine == "rg":  # the walker is used instead, and the answer says why in one line
        [note] = [ln for ln in grepped.output.splitlines() if "not a regular file" in ln]
        # the walker names what it skipped; .rgignore is ripgrep's alone
        assert (PLANTS[where] if where != "rgignore" else "an ignore file") in note
        assert "not a regular file" in globbed.output


async def test_a_socket_as_gitignore_and_fifo_files(tree: Path, engine: str) -> None:
    plant(tree, "src/.gitignore", kind="socket")
    plant(tree, "src/pipe.py")
    plant(tree, "pipe.txt")
    ctx = make_ctx(tree)
    with trio.fail_after(LIMIT):
        globbed = await GlobTool().run({"pattern": "**/*"}, ctx)
        grepped = await GrepTool().run({"pattern": "needle"}, ctx)
    assert "src/app.py" in globbed.output.splitlines()
    assert "pipe" not in globbed.output  # special files are not listed
    assert "src/app.py:1:def needle():" in grepped.output


@pytest.mark.parametrize("target", ["pipe.txt", "/dev/zero"])
async def test_grep_refuses_a_special_file_as_its_path(tree: Path, engine: str,
                                                       target: str) -> None:
    if target == "pipe.txt":
        plant(tree, target)
    ctx = make_ctx(tree, sandbox=False)
    with trio.fail_after(LIMIT):
        res = await GrepTool().run({"pattern": "x", "path": target}, ctx)
    assert res.is_error and "is not a regular file or a directory" in res.output
    assert len(res.output.splitlines()) == 1


async def test_control_a_regular_gitignore_still_applies(tree: Path, engine: str) -> None:
    (tree / ".gitignore").write_text("*.log\n")
    ctx = make_ctx(tree)
    with trio.fail_after(LIMIT):
        grepped = await GrepTool().run({"pattern": "needle"}, ctx)
        globbed = await GlobTool().run({"pattern": "**/*.py"}, ctx)
    assert "skipped.log" not in grepped.output and globbed.output == "src/app.py"
    assert "not a regular file" not in grepped.output + globbed.output


@pytest.mark.parametrize("kind", ["fifo", "socket"])
async def test_read_refuses_a_special_file_in_one_line(tree: Path, kind: str) -> None:
    from nyzhi.tools.builtin.files_read import ReadTool

    plant(tree, "pipe.txt", kind)
    with trio.fail_after(LIMIT):
        res = await ReadTool().run({"file_path": "pipe.txt"}, make_ctx(tree))
    assert res.is_error and "not a regular file" in res.output
    assert len(res.output.splitlines()) == 1
    ok = await ReadTool().run({"file_path": "src/app.py"}, make_ctx(tree))  # the control
    assert "def needle" in ok.output


async def test_tail_file_and_the_nofollow_reader_refuse_a_fifo(tree: Path) -> None:
    from nyzhi.config.textfile import NotRegularFile
    from nyzhi.tools.builtin.files_read import TailFileTool
    from nyzhi.tools.paths import read_bytes_nofollow

    plant(tree, "pipe.log")
    with trio.fail_after(LIMIT):
        res = await TailFileTool().run({"path": "pipe.log"}, make_ctx(tree))
        with pytest.raises(NotRegularFile):
            await trio.to_thread.run_sync(read_bytes_nofollow, tree / "pipe.log")
    assert res.is_error and "not a regular file" in res.output
    assert read_bytes_nofollow(tree / "src" / "app.py").startswith(b"def needle")  # control
