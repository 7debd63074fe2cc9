"""One loopback-only network namespace per session, shared by its sandboxed commands.

Why: with ``--unshare-net`` each bwrap gets a private network namespace, so a server started
in the background and a ``curl`` in a later step could never meet on 127.0.0.1. They must
share one namespace, and that namespace must still have no way out.

How (bubblewrap 0.8 has no option to join an existing network namespace):

* a **holder** process is started at the first confined command: ``unshare --net`` (with
  ``--user --map-root-user`` when nyz is not root, so the namespace is ours to enter) runs a
  tiny Python that brings ``lo`` up (``SIOCSIFFLAGS``), prints ``ready`` and ``exec``\\ s
  ``cat`` on a pipe from nyz. A new network namespace has only ``lo``: no route out exists.
* every later confined command is ``nsenter --net=/proc/<holder>/ns/net [--user
  --preserve-credentials] -- bwrap ...`` without ``--unshare-net``; nsenter enters and
  ``exec``\\ s bwrap in the same process, so the pid, the process group and bwrap's
  ``--die-with-parent`` stay exactly as before.
* the holder ends when nyz closes the pipe (the runtime's end) or dies (SIGKILL closes it
  too): ``cat`` reads end-of-file and exits, and the namespace goes with its last process.
* a **probe** (``nsenter ... true``) runs once after the start; if anything fails (no
  ``unshare``/``nsenter``, user namespaces disabled), commands fall back to a private
  namespace each, as before, and ``failure`` says why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

import trio

# Bring lo up in the new namespace, say so, then become ``cat`` holding the namespace until
# nyz's end of the pipe closes.
_HOLDER = (
    "import fcntl,os,socket,struct,sys\n"
    "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
    "f=struct.unpack('16sH',fcntl.ioctl(s,0x8913,struct.pack('16sH',b'lo',0)))[1]\n"
    "fcntl.ioctl(s,0x8914,struct.pack('16sH',b'lo',f|1))\n"
    "sys.stdout.write('ready\\n');sys.stdout.flush();os.dup2(os.open(os.devnull,os.O_WRONLY),1)\n"
    "os.execvp('cat',['cat'])\n"
)
START_TIMEOUT = 10.0


class LoopbackNetwork:
    """The session's namespace, started on first use (``prefix``), ended by ``aclose``."""

    def __init__(self) -> None:
        self._prefix: tuple[str, ...] | None = None
        self.failure: str | None = None
        self._proc: Any = None
        self._lock: trio.Lock | None = None

    async def prefix(self) -> tuple[str, ...]:
        """The argv prefix that runs a command inside the namespace; () when there is none."""
        if self._prefix is not None or self.failure is not None:
            return self._prefix or ()
        if self._lock is None:
            self._lock = trio.Lock()
        async with self._lock:
            if self._prefix is None and self.failure is None:
                with trio.CancelScope(shield=True):  # a holder half started is never lost
                    try:
                        self._prefix = await self._start()
                    except (OSError, RuntimeError, trio.TooSlowError) as exc:
                        self.failure = str(exc) or type(exc).__name__
                        await self.aclose()
        return self._prefix or ()

    async def _start(self) -> tuple[str, ...]:
        from nyzhi.spawn import open_bound_process

        unshare, nsenter = shutil.which("unshare"), shutil.which("nsenter")
        if unshare is None or nsenter is None:
            raise RuntimeError("unshare or nsenter (util-linux) is not installed")
        as_root = os.geteuid() == 0
        argv = [unshare, "--net"] if as_root else [unshare, "--user", "--map-root-user", "--net"]
        argv += [sys.executable, "-I", "-S", "-c", _HOLDER]
        self._proc = proc = await open_bound_process(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True)
        with trio.fail_after(START_TIMEOUT):
            got = b""
            while b"ready\n" not in got:
                data = await proc.stdout.receive_some(64)
                if not data:
                    raise RuntimeError("the namespace holder exited before it was ready")
                got += data
        ns = f"/proc/{proc.pid}/ns/net"
        prefix = (nsenter, f"--net={ns}")
        if not as_root:
            prefix += (f"--user=/proc/{proc.pid}/ns/user", "--preserve-credentials")
        prefix += ("--",)
        with trio.fail_after(START_TIMEOUT):
            probe = await trio.run_process([*prefix, "true"], check=False,
                                           stdout=subprocess.DEVNULL, capture_stderr=True)
        if probe.returncode != 0:
            raise RuntimeError(f"entering the namespace failed: "
                               f"{probe.stderr.decode(errors='replace').strip()[:200]}")
        return prefix

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    async def aclose(self) -> None:
        """End the holder (closing its pipe; killed if it does not go at once)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        self._prefix = None
        self.failure = self.failure or "closed"
        with trio.CancelScope(shield=True):
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    await stream.aclose()
            with trio.move_on_after(2.0):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
