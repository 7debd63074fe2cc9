"""The one atomic write leaves no temp file in the user's directory (issue 55: in 4 of 200
crash trials a `.big.txt.NNN-XXXX.tmp` was left beside the file, still there after
--continue). While the data is written the file has no name (O_TMPFILE); a process killed
then leaves nothing. Real files, a real killed process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import trio

from nyzhi.config import fsutil
from nyzhi.testing.cli import read_until
from nyzhi.testing.waits import until

pytestmark = pytest.mark.skipif(not fsutil._tmpfile_works, reason="no O_TMPFILE here")


def test_nothing_is_named_in_the_directory_while_the_data_is_written(tmp_path, monkeypatch):
    target = tmp_path / "big.txt"
    target.write_text("old\n")
    seen: list[list[str]] = []
    real_fsync = os.fsync

    def watching_fsync(fd: int) -> None:  # called once the data is written, before naming
        seen.append(sorted(os.listdir(tmp_path)))
        real_fsync(fd)

    monkeypatch.setattr(fsutil.os, "fsync", watching_fsync)
    fsutil.atomic_write(target, b"new\n" * 1000)
    assert seen and seen[0] == ["big.txt"]  # no temp name while writing
    assert target.read_bytes() == b"new\n" * 1000
    assert sorted(os.listdir(tmp_path)) == ["big.txt"]


_WRITER = """
import sys
from pathlib import Path
from nyzhi.config.fsutil import atomic_write
data = b"x" * (64 * 1024 * 1024)
print("writing", flush=True)
while True:
    atomic_write(Path(sys.argv[1]), data)
"""


async def test_a_writer_killed_mid_write_leaves_no_temp_file(tmp_path):
    target = tmp_path / "big.txt"
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", _WRITER, str(target)], stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        out = bytearray()
        await read_until(proc.stdout, out, b"writing\n")
        # once one write is done the next is under way (a loop of 64 MB writes): kill it then
        await until(lambda: os.path.exists(target), what="the first write to finish")
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert os.listdir(tmp_path) == ["big.txt"]
    assert os.stat(target).st_size == 64 * 1024 * 1024  # the old file or the new, whole
