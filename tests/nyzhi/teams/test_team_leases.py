"""Write leases of a process team hold across processes (the team's lock files)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import trio

from nyzhi.core.runtime.teams.leases import TeamLeaseTable
from nyzhi.tools.leases import LeaseBusy

OTHER = """
import sys, trio
from nyzhi.core.runtime.teams.leases import TeamLeaseTable
from nyzhi.tools.leases import LeaseBusy

async def main():
    table = TeamLeaseTable(sys.argv[1], label="/team/crew/bob", wait=float(sys.argv[3]))
    try:
        lease = await table.acquire([sys.argv[2]], "/agents/main")
    except LeaseBusy as exc:
        print("busy:", exc, flush=True)
        return
    print("held", flush=True)
    if sys.argv[4] == "hold":
        await trio.sleep_forever()
    table.release(lease)

trio.run(main)
"""


async def other(locks, target, wait, then="release"):
    return await trio.run_process(
        [sys.executable, "-c", OTHER, str(locks), str(target), str(wait), then],
        capture_stdout=True, capture_stderr=True, check=True)


async def test_a_lease_held_in_one_process_blocks_another(tmp_path):
    locks, target = tmp_path / "leases", tmp_path / "app.py"
    target.write_text("x")
    mine = TeamLeaseTable(locks, label="", wait=1.0)
    lease = await mine.acquire([target], "/agents/main")
    blocked = await other(locks, target, 0.1)
    assert blocked.stdout.decode().startswith("busy: /agents/main is editing")
    mine.release(lease)
    assert (await other(locks, target, 0.1)).stdout == b"held\n"


async def test_a_killed_holder_frees_its_leases(tmp_path):
    locks, target = tmp_path / "leases", tmp_path / "app.py"
    target.write_text("x")
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", OTHER, str(locks), str(target), "1", "hold"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    got = b""
    while not got.endswith(b"\n"):
        got += await proc.stdout.receive_some(100)
    assert got == b"held\n"
    mine = TeamLeaseTable(locks, wait=0.05)
    with pytest.raises(LeaseBusy, match="/team/crew/bob is editing"):
        await mine.acquire([target], "/agents/main")
    os.kill(proc.pid, signal.SIGKILL)
    await proc.wait()
    lease = await mine.acquire([target], "/agents/main")  # the kernel dropped its lock
    mine.release(lease)
