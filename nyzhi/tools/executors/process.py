"""Run one child process in its own session and guarantee that nothing outlives the call.

Shared by the local and SSH executors. The child starts with ``start_new_session=True``, so it and
everything it spawns (unless they call setsid themselves) share one process group whose id is the
child's pid. Timeout, cancellation and normal exit all end with that group terminated: SIGTERM,
a short grace, then SIGKILL. Background jobs (``sleep 1000 &``) therefore do not survive a bash
call; a tool call is not a way to start daemons.

The child is started by ``nyzhi.spawn.open_bound_process``, whose forking thread stays alive
until the child exits: bwrap's ``--die-with-parent`` death signal is tied to that thread, so a
child forked from one of trio's short-lived worker threads was killed after ten seconds.
"""

from __future__ import annotations

import codecs
import math
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import trio

from nyzhi.config.procgroup import signal_group as _signal_group
from nyzhi.spawn import BoundProcess, open_bound_process
from nyzhi.tools.env_policy import child_env
from nyzhi.tools.executors.base import CappedOutput, ExecResult, OutputCallback

TERM_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
DRAIN_GRACE = 1.0  # seconds to wait for the pipe to close once the group is dead


def live_group_members(pgid: int) -> list[int]:
    """Pids in process group ``pgid`` that are not zombies (read from /proc)."""
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # comm may contain spaces and parentheses: fields after the last ')' are fixed.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


async def wait_group_empty(pgid: int) -> None:
    """Until no live process is left in group ``pgid``: each one is waited for through a
    pidfd (readable when it exits), and the group looked at again for any forked meanwhile.
    Unbounded: the caller bounds it."""
    while members := live_group_members(pgid):
        for pid in members:
            try:
                fd = os.pidfd_open(pid)
            except OSError:  # gone already
                continue
            try:
                await trio.lowlevel.wait_readable(fd)
            finally:
                os.close(fd)


async def terminate_group(pgid: int, proc: trio.Process | BoundProcess, grace: float = TERM_GRACE) -> None:
    """SIGTERM the whole group, wait up to ``grace`` for it to empty, then SIGKILL it.

    Safe to call when the group is already gone. Waits for the direct child, so it is reaped.
    """
    if _signal_group(pgid, signal.SIGTERM):
        with trio.move_on_after(grace):
            await proc.wait()
            await wait_group_empty(pgid)
        _signal_group(pgid, signal.SIGKILL)
    if proc.returncode is None:
        proc.kill()
    await proc.wait()


class Detach:
    """A way to move a running command to the background instead of ending it (the
    console's Ctrl-B): ``request()`` sets it off; ``adopt(proc, stdout, text_so_far,
    sandboxed)``,
    given by whoever offered it, takes the process over and returns the id it runs under
    then (``nyzhi.tools.builtin.shells``)."""

    def __init__(self, adopt: Callable[[BoundProcess, Any, str, bool], Awaitable[str]]) -> None:
        self.adopt = adopt
        self.requested = trio.Event()

    def request(self) -> None:
        self.requested.set()


async def _exited_or_detached(proc: BoundProcess, detach: Detach | None) -> bool:
    """Until the process exits (False) or a detach is requested while it runs (True)."""
    if detach is None:
        await proc.wait()
        return False
    async with trio.open_nursery() as race:

        async def exited() -> None:
            await proc.wait()
            race.cancel_scope.cancel()

        async def asked() -> None:
            await detach.requested.wait()
            race.cancel_scope.cancel()

        race.start_soon(exited)
        race.start_soon(asked)
    return detach.requested.is_set() and proc.returncode is None


async def _emit(buf: CappedOutput, on_output: OutputCallback | None, text: str) -> None:
    """Keep ``text`` in the capped output and stream it to the caller, in that order."""
    buf.add(text)
    if on_output is not None:
        await on_output(text)


async def _open_child(argv: Sequence[str], *, cwd: Path | str | None,
                      env: Mapping[str, str] | None, sandboxed: bool,
                      keep_stdin_open: bool) -> BoundProcess:
    """Start ``argv`` as the leader of a new session with stdout+stderr merged into one pipe."""
    full_env = child_env() if env is None else dict(env)
    return await open_bound_process(
        list(argv),
        stdin=subprocess.PIPE if keep_stdin_open else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=full_env,
        start_new_session=True,
        # bwrap's PID namespace takes a sandboxed command's whole tree when nyz dies; an
        # unsandboxed one (full-access, ssh) runs behind the guard, which does (nyzhi.spawn)
        tree=not sandboxed,
    )


async def _pump(proc: BoundProcess, buf: CappedOutput, on_output: OutputCallback | None,
                drained: trio.Event) -> None:
    """Decode the child's pipe into ``buf`` until it closes; ``drained`` tells the waiter the
    output is complete (set on cancellation too, so nobody waits on a pump that is gone)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    assert proc.stdout is not None
    try:
        while data := await proc.stdout.receive_some(65536):
            text = decoder.decode(data)
            if text:
                await _emit(buf, on_output, text)
        rest = decoder.decode(b"", final=True)
        if rest:
            await _emit(buf, on_output, rest)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        drained.set()


async def _watch(proc: BoundProcess, buf: CappedOutput, on_output: OutputCallback | None,
                 limit: float | None, detach: Detach | None) -> bool:
    """Stream the output until the child exits, times out or is detached; True if it timed out.

    On exit or timeout the group is swept here (background jobs would hold the pipe open
    else) and the pipe drained for a short grace; on a detach the pump only lets go of the
    pipe, its unread bytes kept for whoever adopts the process."""
    drained = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pump, proc, buf, on_output, drained)
        detached = False  # stays so when the limit ends the wait
        with trio.move_on_after(math.inf if limit is None else limit) as scope:
            detached = await _exited_or_detached(proc, detach)
        timed_out = scope.cancelled_caught
        if detached and detach is not None and not timed_out:
            nursery.cancel_scope.cancel()
        else:
            await terminate_group(proc.pid, proc)
            with trio.move_on_after(DRAIN_GRACE):
                await drained.wait()
            nursery.cancel_scope.cancel()
    return timed_out


async def _release(proc: BoundProcess) -> None:
    """End what is left of the child's group and close our ends of its pipes (shielded by the
    caller: it runs on cancellation too)."""
    if proc.returncode is None or live_group_members(proc.pid):
        await terminate_group(proc.pid, proc)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            await stream.aclose()


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path | str | None,
    env: Mapping[str, str] | None,
    timeout: float | None,  # noqa: ASYNC109 (the command's limit, part of the protocol)
    on_output: OutputCallback | None,
    output_cap: int,
    note: str = "",
    sandboxed: bool = False,
    keep_stdin_open: bool = False,
    detach: Detach | None = None,
) -> ExecResult:
    """Run ``argv`` with stdout+stderr merged and streamed; see the module docstring for lifetime.

    ``keep_stdin_open`` gives the child a pipe we never write to (the SSH executor's remote
    watchdog notices the connection closing through it); otherwise stdin is /dev/null.
    ``note`` is emitted first through ``on_output`` and kept at the top of the output.
    ``env`` is the child's complete environment (the caller built it with
    ``nyzhi.tools.env_policy.child_env``); None applies the default policy, never a raw copy of
    ours.
    """
    buf = CappedOutput(output_cap)
    if note:
        await _emit(buf, on_output, note + "\n")
    proc = await _open_child(argv, cwd=cwd, env=env, sandboxed=sandboxed,
                             keep_stdin_open=keep_stdin_open)
    timed_out = False
    moved_to = ""
    try:
        timed_out = await _watch(proc, buf, on_output, timeout, detach)
        if detach is not None and detach.requested.is_set() and proc.returncode is None \
                and not timed_out:
            with trio.CancelScope(shield=True):
                moved_to = await detach.adopt(proc, proc.stdout, buf.text(), sandboxed)
    finally:
        with trio.CancelScope(shield=True):
            if not moved_to:
                await _release(proc)
    if moved_to:
        return ExecResult(exit_code=0, output=buf.text(), truncated=buf.truncated, note=note,
                          sandboxed=sandboxed, moved_to=moved_to)
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    if timed_out:
        with trio.CancelScope(shield=True):
            await _emit(buf, on_output, f"\n[timed out after {timeout:g} s; process group killed]\n")
    return ExecResult(
        exit_code=code,
        output=buf.text(),
        timed_out=timed_out,
        truncated=buf.truncated,
        cancelled=(code < 0 and not timed_out),
        note=note,
        sandboxed=sandboxed,
    )
