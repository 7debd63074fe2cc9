"""Several real processes on one team: claims race under the lock, and kill -9 mid-write.

Children are ``python -c`` processes running the store's own code (PYTHONPATH is inherited).
They are synchronised by pipes, never by sleeping: each says "ready" and waits for "go"; the
killed writer is killed once it has reported k finished iterations.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from pathlib import Path

import trio

from nyzhi.team_files.board import TaskBoard, TaskStatus
from nyzhi.team_files.inbox import Inbox

CLAIMER = """
import sys
from nyzhi.team_files.board import TaskBoard
from nyzhi.team_files.errors import TaskClaimError
board = TaskBoard(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
try:
    board.update(sys.argv[2], status="in_progress", by=sys.argv[3])
    print("won", flush=True)
except TaskClaimError as exc:
    print("lost", exc, flush=True)
"""

WRITER = """
import itertools, sys
from nyzhi.team_files.board import TaskBoard
from nyzhi.team_files.inbox import Inbox, Message
inbox, board = Inbox(sys.argv[1], "alice"), TaskBoard(sys.argv[2])
for k in itertools.count():
    inbox.append([Message(str(k), "lead", "alice", f"m{k}", "T")])
    task = board.create(f"t{k}", blocked_by=[str(k)] if k else [])
    if k:
        board.update(str(k), status="in_progress", by="writer")
        board.update(str(k), status="completed", by="writer")
    print(k, flush=True)
"""


class Lines:
    """Lines from a child's stdout, as they come."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream, self.buffer = stream, b""

    async def next(self) -> str:
        while b"\n" not in self.buffer:
            chunk = await self.stream.receive_some(4096)
            if not chunk:
                raise EOFError(self.buffer.decode())
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()


async def start(code: str, *args: str) -> tuple[trio.Process, Lines]:
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", code, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    return proc, Lines(proc.stdout)


async def test_processes_racing_to_claim_one_task_exactly_one_wins(tmp_path: Path):
    board = TaskBoard(tmp_path / "tasks" / "t")
    racers = [f"m{i}" for i in range(6)]
    for _ in range(3):
        task = board.create("contested")
        procs = [await start(CLAIMER, str(board.dir), task.id, name) for name in racers]
        try:
            with trio.fail_after(60):
                for _proc, lines in procs:
                    assert await lines.next() == "ready"
                for proc, _lines in procs:  # all at once: they race for the lock
                    await proc.stdin.send_all(b"go\n")
                results = [await lines.next() for _proc, lines in procs]
                for proc, _lines in procs:
                    assert await proc.wait() == 0
        finally:
            for proc, _lines in procs:
                proc.kill()
        winners = [name for name, r in zip(racers, results, strict=True) if r == "won"]
        assert len(winners) == 1, results
        owner = board.get(task.id).owner
        assert owner == winners[0]
        assert all(r == f"lost task {task.id} is owned by {owner}"
                   for r in results if r != "won")


async def test_kill_9_mid_write_leaves_readable_files_holding_a_prefix(tmp_path: Path):
    rng = random.Random(16)
    for round_ in range(5):
        inbox_dir, board_dir = tmp_path / f"r{round_}" / "inboxes", tmp_path / f"r{round_}" / "t"
        target = rng.randint(3, 30)
        proc, lines = await start(WRITER, str(inbox_dir), str(board_dir))
        try:
            with trio.fail_after(60):
                while int(await lines.next()) < target:
                    pass
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        assert proc.returncode == -signal.SIGKILL

        texts = [m.text for m in Inbox(inbox_dir, "alice").messages()]
        assert len(texts) > target and texts == [f"m{i}" for i in range(len(texts))]
        board = TaskBoard(board_dir)
        tasks = board.list()  # every file parses
        n = len(tasks)
        assert n > target and [t.subject for t in tasks] == [f"t{i}" for i in range(n)]
        assert [t.id for t in tasks] == [str(i) for i in range(1, n + 1)]
        # every task but the last two is done; the rest is some state the loop passes through
        assert all(t.status == TaskStatus.COMPLETED for t in tasks[:-2])
        # and the board still works: a new id after all, the last task can be finished
        # (a kill between the high-water mark and the task file skips one id, by design)
        assert board.create("after").id in (str(n + 1), str(n + 2))
        for t in tasks[-2:]:
            if t.status != TaskStatus.COMPLETED:
                board.update(t.id, status="completed", by="writer")
        assert all(t.status == TaskStatus.COMPLETED for t in board.list()[:-1])
