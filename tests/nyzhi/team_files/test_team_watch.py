"""The FIFO watcher: a poke wakes it, pokes pile up into one wake, and the fallback timer."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
import trio
import trio.testing

from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.inbox import Inbox, Message
from nyzhi.team_files.watch import InboxWatcher


def message(k: int) -> Message:
    return Message(str(k), "lead", "alice", f"m{k}", "T")


async def test_a_poke_wakes_the_waiter(tmp_path):
    inbox = Inbox(tmp_path, "alice")
    async with InboxWatcher(tmp_path, "alice", fallback=600) as watcher:
        assert stat.S_ISFIFO(os.stat(inbox.fifo_path).st_mode)
        assert stat.S_IMODE(os.stat(inbox.fifo_path).st_mode) == 0o600
        woke = trio.Event()

        async def reader() -> None:
            assert await watcher.wait() is True
            woke.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
            assert not woke.is_set()
            with trio.fail_after(30):
                await trio.to_thread.run_sync(inbox.append, [message(1)])
                await woke.wait()
        assert [m.text for m in inbox.read_unread()] == ["m1"]


async def test_many_pokes_are_drained_by_one_wait(tmp_path, autojump_clock):
    inbox = Inbox(tmp_path, "alice")
    async with InboxWatcher(tmp_path, "alice", fallback=5) as watcher:
        for k in range(50):
            inbox.append([message(k)])
        assert await watcher.wait() is True
        assert await watcher.wait() is False  # nothing left: the fallback timer fires
        assert trio.current_time() >= 5


async def test_a_poke_from_another_process_wakes_the_waiter(tmp_path):
    code = ("import sys; from nyzhi.team_files.inbox import Inbox, Message; "
            "Inbox(sys.argv[1], 'alice').append([Message('1', 'bob', 'alice', 'hi', 'T')])")
    async with InboxWatcher(tmp_path, "alice", fallback=600) as watcher:
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.run_process, [sys.executable, "-c", code, str(tmp_path)])
                assert await watcher.wait() is True
    assert [m.text for m in Inbox(tmp_path, "alice").messages()] == ["hi"]


async def test_a_replaced_fifo_is_reopened_after_the_fallback(tmp_path, autojump_clock):
    inbox = Inbox(tmp_path, "alice")
    async with InboxWatcher(tmp_path, "alice", fallback=2) as watcher:
        os.unlink(inbox.fifo_path)
        inbox.append([message(1)])  # no FIFO: this poke is lost, the message is not
        assert await watcher.wait() is False
        assert stat.S_ISFIFO(os.stat(inbox.fifo_path).st_mode)  # made again
        inbox.append([message(2)])
        assert await watcher.wait() is True
    assert len(inbox.read_unread()) == 2


async def test_a_regular_file_in_the_fifos_place_is_a_clear_error(tmp_path):
    (tmp_path / "alice.fifo").write_text("")
    with pytest.raises(TeamError, match="is not a FIFO; delete it"):
        async with InboxWatcher(tmp_path, "alice"):
            pass


def test_watch_is_the_only_module_importing_trio():
    code = ("import sys, nyzhi.team_files as t; assert t.TeamStore and t.deliver and t.TaskBoard; "
            "print('trio' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
