"""Start every child process of nyz so that it dies when nyz dies, SIGKILL included.

The one way (issue 55): each child is forked by a thread that stays alive until the child has
exited, and the child asks the kernel, between fork and exec, for SIGKILL when its parent dies
(``PR_SET_PDEATHSIG``). rg from glob, git, hooks, MCP stdio servers, language servers, the
llama server, process teammates, the browser and sandboxed commands all start here
(``open_bound_process``, or ``run`` for the few blocking callers); nothing else in nyz forks,
except a detached teammate (``nyz team start --detach``), which is meant to outlive its lead.

Why the thread: Linux ties the parent-death signal to the *thread* that forked the child, not
to the process. ``trio.lowlevel.open_process`` forks from one of trio's worker threads, and
trio retires a worker after 10 s idle; the kernel then sends the death signal, and every child
living longer than that was killed with no message (issue 42). So the thread that calls
``Popen`` stays in ``waitpid`` until the child has exited, then reports the exit to trio: the
signal comes when nyz dies (all its threads die with it) and at no other time.

Why this, and not the other ways out:

* a subreaper (``PR_SET_CHILD_SUBREAPER``) only changes who adopts orphans: when nyz dies
  they are adopted by init and keep running, so it kills nothing;
* a cgroup per nyz needs a delegated cgroup tree (systemd user slices, root in a container),
  which a plain terminal session often does not have; nothing would be killed there;
* a lifeline pipe needs a watcher inside every child (rg and git have none);
* the death signal needs only the kernel, costs one parked thread per running child (no CPU),
  and works for any program. The request is made in the child by a tiny ``preexec_fn`` (one
  ``prctl`` call through a libc function resolved beforehand, then a check that the parent is
  still the one that forked it, which closes the window where nyz died before the request).

The signal reaches the child itself, not what the child has started. So a child that is a
tree (a hook's shell and what it runs, an MCP server started by ``npx``, a language server and
its tsserver, an unsandboxed command) is started with ``tree=True``: behind a guard shell,
the leader of its own process group, whose death signal is SIGUSR2, on which it SIGKILLs its
whole group (``kill -KILL 0``). Sandboxed commands run under ``bwrap --unshare-pid`` (PID 1 of their own
namespace: its death takes the whole tree). The rest are single programs (rg, git, the llama
server, teammates, which are nyz processes whose own children die the same way). Not
covered: a process that leaves its group (setsid) escapes, as it escapes every group kill.

``BoundProcess`` has the part of ``trio.Process``'s interface that our callers use.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
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

    def poll(self) -> int | None:
        """The exit status if the child has exited and been reaped, else None."""
        return self.returncode

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


_PR_SET_PDEATHSIG = 1
_prctl: Any = None


# The guard of a tree child: runs "$@" with our stdin (a background job would get /dev/null),
# waits, exits with its status (a death by signal N is re-raised on itself, so callers see -N);
# on SIGUSR2 (its death signal: nyz died) it SIGKILLs its whole process group. Not SIGTERM:
# a caller's SIGTERM to the group keeps its meaning (the command's grace before SIGKILL).
_GUARD_DEATH = signal.SIGUSR2
_GUARD = (
    "trap 'kill -KILL 0' USR2; exec 3<&0; \"$@\" <&3 3<&- & wait $!; s=$?; "
    "trap - USR2; [ $s -gt 128 ] && kill -$((s - 128)) $$; exit $s"
)


def guarded(argv: Sequence[str]) -> list[str]:
    """``argv`` behind the tree guard (see the module docstring)."""
    return ["/bin/sh", "-c", _GUARD, "nyz-guard", *argv]


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """The ``preexec_fn`` that makes a child die with nyz (None where Linux's prctl is absent).

    Runs in the child between fork and exec, so it touches nothing but a libc function looked up
    here, in the parent: no import, no lock another thread could have held at the fork.
    """
    global _prctl
    if not sys.platform.startswith("linux"):
        return None
    if _prctl is None:
        import ctypes

        _prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl = _prctl
    parent = os.getpid()

    def request() -> None:
        prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # nyz died before the request took: follow it now
            os._exit(128 + sig)

    return request


def run(argv: Sequence[str], **options: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` for the few blocking callers (``run_git``, team worktrees, doctor):
    the calling thread waits for the child, so the death signal is tied to a live thread."""
    return subprocess.run(list(argv), preexec_fn=die_with_parent(), **options)  # noqa: PLW1509


def _must_exist(program: str, options: dict[str, Any]) -> None:
    """Raise what ``Popen`` would for a missing program, which the guard shell would otherwise
    start and report only as exit 127."""
    import errno
    import shutil

    env = options.get("env")
    path = env.get("PATH") if env is not None else os.environ.get("PATH")
    where = options.get("cwd")
    if "/" in program:
        found = os.access(os.path.join(os.fspath(where or "."), program), os.X_OK)
    else:
        found = shutil.which(program, path=path) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


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
    tree: bool = False,
    **options: Any,
) -> BoundProcess:
    """Start ``argv`` (options as ``subprocess.Popen``) from a thread held until it exits.

    ``stdin``/``stdout``/``stderr`` take ``subprocess.PIPE`` (a trio stream on our side),
    ``subprocess.STDOUT`` for stderr, ``DEVNULL``, a file descriptor or None. Raises what
    ``Popen`` raises (``FileNotFoundError`` for a missing program). The start itself is shielded
    from cancellation so a started child is never lost; the caller owns it from the return on.
    ``tree=True``: ``argv`` starts other processes that must die with nyz too; it runs behind
    the guard, in its own session (its group id is ``pid``, the guard's).
    """
    if tree:
        _must_exist(argv[0], options)
        argv = guarded(argv)
        options["start_new_session"] = True
    child_in, our_in = _pipe_for_child(stdin, child_reads=True)
    child_out, our_out = _pipe_for_child(stdout, child_reads=False)
    if stderr == subprocess.STDOUT and our_out is not None:
        child_err, our_err = child_out, None
    else:
        child_err, our_err = _pipe_for_child(stderr, child_reads=False)
    ours = [s for s in (our_in, our_out, our_err) if s is not None]
    holder = _Holder(argv, (child_in, child_out, child_err),
                     die_with_parent(_GUARD_DEATH if tree else signal.SIGKILL), options)
    try:
        trio.lowlevel.start_thread_soon(holder.hold, lambda _outcome: None)
        with trio.CancelScope(shield=True):
            await holder.started.wait()
    finally:
        _close_child_ends(stdin, child_in, stdout, child_out, stderr, child_err)
    if holder.error is not None:
        for stream in ours:
            await stream.aclose()
        raise holder.error
    assert holder.popen is not None
    return BoundProcess(holder.popen, holder.exited, our_in, our_out, our_err)


class _Holder:
    """The thread that starts the child and stays its parent until it exits (the death
    signal is tied to it), and what it reports back to trio: started (or the error), then
    exited."""

    def __init__(self, argv: Sequence[str], child: tuple[Any, Any, Any], request: Any,
                 options: dict[str, Any]) -> None:
        self.argv, self.child, self.request, self.options = list(argv), child, request, options
        self.token = trio.lowlevel.current_trio_token()
        self.started = trio.Event()
        self.exited = trio.Event()
        self.popen: subprocess.Popen[Any] | None = None  # bytes: no text mode is asked for
        self.error: BaseException | None = None

    def report(self, event: trio.Event) -> None:
        try:
            self.token.run_sync_soon(event.set)
        except trio.RunFinishedError:
            pass  # trio has ended: nobody is waiting any more

    def hold(self) -> None:
        child_in, child_out, child_err = self.child
        try:
            popen = subprocess.Popen(  # noqa: PLW1509 (see die_with_parent)
                self.argv, stdin=child_in, stdout=child_out, stderr=child_err,
                preexec_fn=self.request, **self.options,
            )
        except BaseException as exc:  # delivered to the trio side, raised there
            self.error = exc
            self.report(self.started)
            return
        self.popen = popen
        self.report(self.started)
        # This thread is the child's parent in the kernel's eyes: it must not return (and be
        # retired by trio's thread cache) before the child has exited.
        popen.wait()
        self.report(self.exited)


def _close_child_ends(*pairs: Any) -> None:
    """Close the pipe ends we made for the child (it has its own copies now)."""
    it = iter(pairs)
    closed: set[int] = set()
    for asked, given in zip(it, it, strict=True):
        made = asked == subprocess.PIPE or (asked == subprocess.STDOUT and isinstance(given, int))
        if made and isinstance(given, int) and given not in closed:
            closed.add(given)
            os.close(given)
