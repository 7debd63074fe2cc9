"""Driving a real full-screen program in tmux for tests: send keys, read the screen.

Each ``TmuxPane`` has its own tmux server (a socket under the test's temp dir), so tests never
share one and never touch the user's. A terminal reports nothing when it draws, so
``wait_for`` polls ``capture-pane`` (bounded, every 50 ms): the one acceptable poll.
"""

from __future__ import annotations

import itertools
import re
import shlex
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import trio

POLL_S = 0.05
INPUT_READY = "/help for commands"  # the console's first note once its runtime is attached
_SOCKETS = itertools.count()
_EXIT = re.compile(r"^\[exit (\d+)\]$", re.M)


class TmuxPane:
    def __init__(self, socket: Path, *, width: int = 80, height: int = 24) -> None:
        self.socket = socket
        self.width = width
        self.height = height

    @staticmethod
    def available() -> bool:
        return shutil.which("tmux") is not None

    def _cmd(self, *args: str) -> list[str]:
        return ["tmux", "-S", str(self.socket), *args]

    async def tmux(self, *args: str) -> str:
        proc = await trio.run_process(self._cmd(*args), capture_stdout=True, capture_stderr=True,
                                      check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {proc.stderr.decode().strip()}")
        return proc.stdout.decode()

    async def start(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> None:
        """Start ``argv`` in a fresh server's only pane. A shell around it prints
        ``[exit N]`` when it ends (tmux 3.3 sometimes marks a pane dead on the pty's EOF
        without its status) and the pane stays, so the status can be read off the screen."""
        env = {**env, "TERM": "xterm-256color"}
        wrapped = ["sh", "-c", '"$@"; echo "[exit $?]"', "sh", *argv]
        await trio.run_process(
            self._cmd("-f", "/dev/null", "new-session", "-d", "-x", str(self.width),
                      "-y", str(self.height), "-c", str(cwd), shlex.join(wrapped)),
            env=env, check=True,
        )
        await self.tmux("set-option", "-g", "remain-on-exit", "on")

    async def keys(self, *keys: str, literal: bool = False) -> None:
        await self.tmux("send-keys", *(("-l",) if literal else ()), *keys)

    async def type(self, text: str) -> None:
        await self.keys(text, literal=True)

    async def screen(self) -> str:
        return await self.tmux("capture-pane", "-p")

    async def screen_escaped(self) -> str:
        """The screen with its SGR colours and attributes as escape sequences (``-e``);
        ``-N`` keeps trailing spaces, for a renderer that paints whole rows."""
        return await self.tmux("capture-pane", "-p", "-e", "-N")

    async def history(self) -> str:
        """The screen with the lines scrolled off above it (what a program printed at exit)."""
        return await self.tmux("capture-pane", "-p", "-S", "-200")

    async def wait_for(self, check: str | Callable[[str], bool], limit_s: float = 20) -> str:
        """The screen once ``check`` (a substring, or a predicate) holds; fails after
        ``limit_s`` seconds with the last screen in the message."""
        pred = (lambda s: check in s) if isinstance(check, str) else check
        screen = ""
        with trio.move_on_after(limit_s):
            while True:
                screen = await self.screen()
                if pred(screen):
                    return screen
                await trio.sleep(POLL_S)
        raise AssertionError(f"screen never showed {check!r}; last screen:\n{screen}")

    async def exit_status(self) -> int | None:
        """The program's exit status once it has exited, else None."""
        found = _EXIT.search(await self.history())
        return int(found.group(1)) if found else None

    async def wait_exit(self, limit_s: float = 20) -> int:
        with trio.move_on_after(limit_s):
            while True:
                status = await self.exit_status()
                if status is not None:
                    return status
                await trio.sleep(POLL_S)
        raise AssertionError(f"the program did not exit; screen:\n{await self.history()}")

    def kill(self) -> None:
        subprocess.run(self._cmd("kill-server"), capture_output=True, check=False)


@asynccontextmanager
async def open_console(workspace: Path, home: Path, *args: str,
                       env: dict[str, str] | None = None, width: int = 80,
                       height: int = 24) -> AsyncIterator[TmuxPane]:
    """``nyz ARGS`` (the console, on a terminal) in a ``width`` x ``height`` pane (80x24 unless
    told) of a fresh tmux server, as the isolated user ``home``; the server is killed when the
    block ends."""
    from nyzhi.testing.cli import NYZ, nyz_env

    pane = TmuxPane(workspace.parent / f"tmux-{next(_SOCKETS)}.sock", width=width,
                    height=height)
    await pane.start([*NYZ, *args], cwd=workspace, env={**nyz_env(home), **(env or {})})
    try:
        yield pane
    finally:
        pane.kill()


async def say(pane: TmuxPane, text: str) -> None:
    """Type ``text`` and press Enter."""
    await pane.type(text)
    await pane.keys("Enter")
