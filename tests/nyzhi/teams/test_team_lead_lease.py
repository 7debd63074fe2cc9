"""One running lead per team: ``nyz team start`` leases the team for the lead's life.

Two starts of one team at once: one becomes the lead (its model request arrives), the other
refuses at once, naming the lead's pid. A lead killed with ``kill -9`` leaves no stale lease:
the next start runs.
"""

from __future__ import annotations

import os
import signal
import subprocess

import trio

from nyzhi.team_files.lead_lease import LEASE_FILE
from nyzhi.team_files.store import TeamStore
from nyzhi.testing.cli import NYZ, nyz_env, run_nyz
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply


def _holding_script(asked: trio.Event) -> PerAgent:
    """The first lead request waits forever (until its process is killed); later ones answer."""
    calls: list[object] = []

    async def step(request):
        calls.append(request)
        if len(calls) == 1:
            asked.set()
            await trio.sleep_forever()
        return reply("the new lead ran")

    return PerAgent({"LEAD-TASK": [step] * 4})


async def test_two_concurrent_starts_one_refuses_naming_the_lead_then_kill_9_frees_it(
        workspace, home, configure):
    asked = trio.Event()
    env = nyz_env(home)
    start = [*NYZ, "team", "start", "crew", "--members", "alice:worker", "--task", "LEAD-TASK",
             "--headless"]
    async with open_fake_llm(script=_holding_script(asked)) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(120):
            procs = [await trio.lowlevel.open_process(
                start, cwd=workspace, env=env, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE) for _ in range(2)]
            first_out = trio.Event()
            exited: list[tuple[trio.Process, int, bytes]] = []

            async def watch(proc: trio.Process) -> None:
                err = bytearray()
                while chunk := await proc.stderr.receive_some(65536):
                    err += chunk
                exited.append((proc, await proc.wait(), bytes(err)))
                first_out.set()

            async with trio.open_nursery() as nursery:
                for proc in procs:
                    nursery.start_soon(watch, proc)
                await first_out.wait()
                loser, code, err = exited[0]
                [lead] = [p for p in procs if p is not loser]
                await asked.wait()  # the other one is the lead: its model request came
                assert lead.returncode is None
                text = err.decode()
                assert code == 1, text
                assert f"already has a running lead (pid {lead.pid})" in text
                assert len(text.strip().splitlines()) == 1 and "Traceback" not in text
                lease = TeamStore(env).team_dir("crew") / LEASE_FILE
                assert lease.read_text().strip() == str(lead.pid)

                os.kill(lead.pid, signal.SIGKILL)  # no clean-up runs: the kernel drops the lock
                nursery.cancel_scope.deadline = trio.current_time() + 30
            assert lead.returncode == -signal.SIGKILL

            again = await run_nyz(workspace, home, "team", "start", "crew", "--task",
                                  "LEAD-TASK again", "--headless")
        assert again.returncode == 0, again.stderr.decode()[-2000:]
        assert b"the new lead ran" in again.stdout


async def test_a_start_while_a_lead_runs_refuses_at_once_and_changes_nothing(
        workspace, home, configure):
    """The refusal comes before the team is touched: a second start's --members do not land."""
    asked = trio.Event()
    env = nyz_env(home)
    async with open_fake_llm(script=_holding_script(asked)) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(120):
            lead = await trio.lowlevel.open_process(
                [*NYZ, "team", "start", "crew", "--members", "alice:worker", "--task",
                 "LEAD-TASK", "--headless"],
                cwd=workspace, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                await asked.wait()
                second = await run_nyz(workspace, home, "team", "start", "crew", "--members",
                                       "bob:worker", "--task", "LEAD-TASK", "--headless")
                assert second.returncode == 1
                assert f"pid {lead.pid}".encode() in second.stderr
                assert TeamStore(env).load("crew").names() == ["lead", "alice"]
            finally:
                lead.kill()
                await lead.wait()


async def test_lead_pid_asks_without_leasing_or_dropping_a_lease(tmp_path):
    """``lead_pid`` (what ``nyz serve --team`` uses): None with no lead, the holder's pid
    otherwise; asking never takes the lease, and asking in the holder keeps its lock."""
    import sys

    from nyzhi.team_files.lead_lease import lead_pid, take_lead_lease

    team_dir = tmp_path / "crew"
    assert lead_pid(team_dir) is None  # no lease file yet
    probe = [sys.executable, "-c", "import sys; from pathlib import Path; "
             "from nyzhi.team_files.lead_lease import take_lead_lease, TeamLeased\n"
             "try: take_lead_lease('crew', Path(sys.argv[1]))\n"
             "except TeamLeased as e: print('leased', e.pid); sys.exit(3)\n"
             "print('took it')", str(team_dir)]
    took = await trio.run_process(probe, capture_stdout=True, check=False)
    assert took.returncode == 0 and took.stdout.strip() == b"took it"  # it ended: lease freed
    assert lead_pid(team_dir) is None  # a lease file nobody holds
    assert lead_pid(team_dir) is None  # and asking took nothing: still free
    take_lead_lease("crew", team_dir)
    try:
        for _ in range(2):
            assert lead_pid(team_dir) == os.getpid()
        refused = await trio.run_process(probe, capture_stdout=True, check=False)
        assert refused.returncode == 3 and refused.stdout.strip() == f"leased {os.getpid()}".encode()
    finally:
        from nyzhi.team_files import lead_lease

        os.close(lead_lease._held.pop(lead_lease.lease_path(team_dir)))
