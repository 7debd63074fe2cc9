"""Start a child process from a thread that lives exactly as long as the child.

Why this exists: Linux ties a child's parent-death signal (``PR_SET_PDEATHSIG``, which
``bwrap --die-with-parent`` sets) to the *thread* that forked it, not to the process.
``trio.lowlevel.open_process`` forks from one of trio's worker threads, and trio retires a
worker thread after 10 s idle; when it does, the kernel sends the death signal and every
sandboxed command longer than ten seconds was SIGKILLed with no message (issue 42).

The choice, among the three ways out:

* a lifeline pipe (as ``nyzhi.provider.llama_server`` does) needs a watcher inside the child,
  which a shell command run by bwrap does not have without an extra process per call;
* ``--unshare-pid`` with a process-group kill covers timeouts and cancellation, but nothing
  kills the group when nyz itself dies by SIGKILL;
* so we keep ``--die-with-parent`` and make the forking thread outlive the child: the thread
  that calls ``Popen`` stays in ``waitpid`` until the child has exited, then reports the exit
  to trio. The kernel's rule then means what ``--die-with-parent`` was meant to mean: bwrap
  dies when nyz dies (SIGKILL included, since all threads die with the process), and at no
  other time. With ``--unshare-pid`` bwrap is the namespace's init, so its death takes every
  process of the command with it.

The cost is one thread per running child, parked in ``waitpid`` (no CPU). ``BoundProcess`` has
the part of ``trio.Process``'s interface that our callers use. Processes that need no death
signal (git, rg, hooks, MCP servers, teammates) may keep using trio's own ``open_process``.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

import trio


class BoundProcess:
    """A child started by ``open_bound_process``: ``pid``, ``returncode``, the trio ends of its
    pipes, ``wait``, ``send_signal``, ``terminate`` and ``kill`` (as ``trio.Process``)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        exited: trio.Event,
        stdin: trio.lowlevel.FdStream | None,
        stdout: trio.lowlevel.FdStream | None,
        stderr: trio.lowlevel.FdStream | None,
    ) -> None:
        self._popen = popen
        self._exited = exited
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the holding thread has reaped the child, else None."""
        return self._popen.returncode if self._exited.is_set() else None

    async def wait(self) -> int:
        await self._exited.wait()
        code = self._popen.returncode
        assert code is not None
        return code

    def send_signal(self, sig: int) -> None:
        """Signal the child unless it is known to be reaped (its pid may be reused then)."""
        if not self._exited.is_set():
            try:
                os.kill(self._popen.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _pipe_for_child(stream: Any, *, child_reads: bool) -> tuple[Any, trio.lowlevel.FdStream | None]:
    """(what Popen gets, our trio end) for one of stdin/stdout/stderr."""
    if stream != subprocess.PIPE:
        return stream, None
    read_fd, write_fd = os.pipe()
    if child_reads:
        return read_fd, trio.lowlevel.FdStream(write_fd)
    return write_fd, trio.lowlevel.FdStream(read_fd)


async def open_bound_process(
    argv: Sequence[str],
    *,
    stdin: Any = subprocess.DEVNULL,
    stdout: Any = None,
    stderr: Any = None,
    **options: Any,
) -> BoundProcess:
    """Start ``argv`` (options as ``subprocess.Popen``) from a thread held until it exits.

    ``stdin``/``stdout``/``stderr`` take ``subprocess.PIPE`` (a trio stream on our side),
    ``subprocess.STDOUT`` for stderr, ``DEVNULL``, a file descriptor or None. Raises what
    ``Popen`` raises (``FileNotFoundError`` for a missing program). The start itself is shielded
    from cancellation so a started child is never lost; the caller owns it from the return on.
    """
    child_in, our_in = _pipe_for_child(stdin, child_reads=True)
    child_out, our_out = _pipe_for_child(stdout, child_reads=False)
    if stderr == subprocess.STDOUT and our_out is not None:
        child_err, our_err = child_out, None
    else:
        child_err, our_err = _pipe_for_child(stderr, child_reads=False)
    ours = [s for s in (our_in, our_out, our_err) if s is not None]
    token = trio.lowlevel.current_trio_token()
    started = trio.Event()
    exited = trio.Event()
    box: dict[str, Any] = {}

    def report(event: trio.Event) -> None:
        try:
            token.run_sync_soon(event.set)
        except trio.RunFinishedError:
            pass  # trio has ended: nobody is waiting any more

    def hold() -> None:
        try:
            box["popen"] = subprocess.Popen(
                list(argv), stdin=child_in, stdout=child_out, stderr=child_err, **options
            )
        except BaseException as exc:  # delivered to the trio side, raised there
            box["error"] = exc
            report(started)
            return
        popen: subprocess.Popen[bytes] = box["popen"]
        report(started)
        # This thread is the child's parent in the kernel's eyes: it must not return (and be
        # retired by trio's thread cache) before the child has exited.
        popen.wait()
        report(exited)

    try:
        trio.lowlevel.start_thread_soon(hold, lambda _outcome: None)
        with trio.CancelScope(shield=True):
            await started.wait()
    finally:
        _close_child_ends(stdin, child_in, stdout, child_out, stderr, child_err)
    if "error" in box:
        for stream in ours:
            await stream.aclose()
        raise box["error"]
    return BoundProcess(box["popen"], exited, our_in, our_out, our_err)


def _close_child_ends(*pairs: Any) -> None:
    """Close the pipe ends we made for the child (it has its own copies now)."""
    it = iter(pairs)
    closed: set[int] = set()
    for asked, given in zip(it, it, strict=True):
        made = asked == subprocess.PIPE or (asked == subprocess.STDOUT and isinstance(given, int))
        if made and isinstance(given, int) and given not in closed:
            closed.add(given)
            os.close(given)
