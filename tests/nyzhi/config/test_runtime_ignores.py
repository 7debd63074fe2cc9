"""``.nyzhi/.gitignore``, which nyz (unsandboxed) keeps listing its run-time folders: it is
read and rewritten only when it is a plain file of its own. A planted symlink or hard link
must not make nyz copy the target (``/proc/self/environ``, a key) into the workspace, where
``git_commit`` would commit it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nyzhi.config.scaffold import RUNTIME_IGNORES, ignore_runtime_files

SECRET = "PLANTED-TARGET-SECRET-5521"


def _secret(tmp_path: Path) -> Path:
    target = tmp_path / "outside" / "key"
    target.parent.mkdir()
    target.write_text(SECRET + "\n")
    return target


def test_a_plain_ignore_file_gets_the_missing_lines_once(tmp_path):
    nyzhi = tmp_path / "ws" / ".nyzhi"
    nyzhi.mkdir(parents=True)
    (nyzhi / ".gitignore").write_text("mine\n")
    for _ in range(2):
        ignore_runtime_files(nyzhi / "context" / "history")
    text = (nyzhi / ".gitignore").read_text()
    assert text.startswith("mine\n")
    assert all(text.count(line) == 1 for line in RUNTIME_IGNORES), text


@pytest.mark.parametrize("vector", ["symlink", "proc", "hardlink", "dir-symlink", "fifo"])
def test_a_planted_ignore_file_is_left_alone_and_nothing_is_copied(tmp_path, vector):
    ws = tmp_path / "ws"
    nyzhi = ws / ".nyzhi"
    target = _secret(tmp_path)
    if vector == "dir-symlink":  # .nyzhi itself points elsewhere
        elsewhere = tmp_path / "outside" / "fake-nyzhi"
        elsewhere.mkdir()
        (elsewhere / ".gitignore").symlink_to(target)
        ws.mkdir()
        nyzhi.symlink_to(elsewhere, target_is_directory=True)
    else:
        nyzhi.mkdir(parents=True)
        ignore = nyzhi / ".gitignore"
        if vector == "symlink":
            ignore.symlink_to(target)
        elif vector == "proc":
            ignore.symlink_to("/proc/self/environ")
        elif vector == "hardlink":
            os.link(target, ignore)
        else:
            os.mkfifo(ignore)  # reading it would block nyz for ever
    ignore_runtime_files(nyzhi / "todos")
    planted = os.stat(target).st_ino
    for path in ws.rglob("*"):  # no copy of the target (the planted link itself aside)
        if path.is_file() and not path.is_symlink() and os.stat(path).st_ino != planted:
            assert SECRET not in path.read_text(errors="replace"), path
            assert "PATH=" not in path.read_text(errors="replace"), path
    assert target.read_text() == SECRET + "\n"  # the target was not rewritten either
    assert os.path.islink(nyzhi / ".gitignore") or vector in ("hardlink", "fifo")
