"""The one atomic write (``replace_in_dir``) behind both entry points, and the one
process-group signal: real files, real processes."""

from __future__ import annotations

import os
import signal
import stat
import subprocess

import pytest

from nyzhi.config.fsutil import atomic_write
from nyzhi.config.procgroup import signal_group
from nyzhi.oserror import StorageError
from nyzhi.tools import paths
from nyzhi.tools.executors.process import live_group_members

WRITERS = [
    pytest.param(lambda p, data, **kw: atomic_write(p, data, **kw), id="config.fsutil"),
    pytest.param(lambda p, data, **kw: paths.write_nofollow(p, data, **kw), id="tools.paths"),
]


def mode_of(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("write", WRITERS)
def test_modes_new_kept_and_given(tmp_path, write):
    old_umask = os.umask(0o027)
    try:
        write(tmp_path / "sub" / "new.txt", b"one")  # a missing parent is created
    finally:
        os.umask(old_umask)
    assert (tmp_path / "sub" / "new.txt").read_bytes() == b"one"
    assert mode_of(tmp_path / "sub" / "new.txt") == 0o640  # what the umask gives
    kept = tmp_path / "kept.txt"
    kept.write_bytes(b"x")
    kept.chmod(0o604)
    write(kept, b"two")
    assert kept.read_bytes() == b"two" and mode_of(kept) == 0o604
    write(kept, b"secret", mode=0o600)
    assert kept.read_bytes() == b"secret" and mode_of(kept) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("write", WRITERS)
def test_a_failed_rename_keeps_the_old_state_and_no_temp_file(tmp_path, write):
    target = tmp_path / "target"
    target.mkdir()  # a directory cannot be replaced by a file: a real failure at the rename
    (target / "inside").write_text("kept")
    with pytest.raises(OSError) as err:
        write(target, b"data")
    assert (target / "inside").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]
    if isinstance(err.value, StorageError):  # config.fsutil names what it was writing
        assert str(err.value).startswith(f"could not write {target}:")


def test_signal_group_reaches_the_background_children_and_reports_a_gone_group():
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 600 & echo started; wait"],
                            stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout.readline() == b"started\n"
        assert len(live_group_members(proc.pid)) == 2  # the shell and its background sleep
        assert signal_group(proc.pid, signal.SIGKILL) is True
        # The background sleep holds the pipe too: end of file means it is dead as well.
        assert proc.stdout.read() == b""
        assert proc.wait() == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    done = subprocess.Popen(["true"], start_new_session=True)
    done.wait()
    assert signal_group(done.pid) is False  # nothing left: not an error


def test_one_atomic_write_and_no_rename_around_it():
    """One function named ``atomic_write`` in nyzhi, and ``os.replace``/``os.rename`` only in
    the one atomic write (``config.fsutil``) and in ``codecache``, which sits under every
    layer and imports nothing of nyzhi's (its cache files are rebuilt when unreadable)."""
    import ast
    from pathlib import Path

    import nyzhi

    root = Path(nyzhi.__file__).parent
    named, renames = [], []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name == "atomic_write":
                named.append(path.relative_to(root).as_posix())
            if isinstance(node, ast.Attribute) and node.attr in ("replace", "rename") \
                    and isinstance(node.value, ast.Name) and node.value.id == "os":
                renames.append(path.relative_to(root).as_posix())
    assert named == ["config/fsutil.py"]
    assert sorted(set(renames)) == ["codecache.py", "config/fsutil.py"]


def test_commit_file_renames_a_written_temp_file_and_refuses_another_directory(tmp_path):
    from nyzhi.config.fsutil import commit_file

    target = tmp_path / "graph.bin"
    target.write_bytes(b"old")
    tmp = tmp_path / "graph.bin.tmp"
    tmp.write_bytes(b"new")
    commit_file(tmp, target)
    assert target.read_bytes() == b"new" and not tmp.exists()
    (tmp_path / "sub").mkdir()
    elsewhere = tmp_path / "sub" / "x.tmp"
    elsewhere.write_bytes(b"x")
    with pytest.raises(ValueError, match="must share a directory"):
        commit_file(elsewhere, target)
    assert target.read_bytes() == b"new"
