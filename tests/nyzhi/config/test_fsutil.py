"""The one atomic write (``replace_in_dir``) behind both entry points, and the one
process-group signal: real files, real processes."""

from __future__ import annotations

import os
import signal
import stat
import subprocess

import pytest

from nyzhi.config.fsutil import StorageError, atomic_write
from nyzhi.config.procgroup import signal_group
from nyzhi.tools import paths
from nyzhi.tools.executors.process import live_group_members

WRITERS = [
    pytest.param(lambda p, data, **kw: atomic_write(p, data, **kw), id="config.fsutil"),
    pytest.param(lambda p, data, **kw: paths.atomic_write(p, data, **kw), id="tools.paths"),
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
