"""Background shells: commands that outlive the tool call that started them.

``bash`` with ``run_in_background`` starts a command and returns at once with an id
(``bg_1``, ...); ``bash_output``, ``write_stdin``, ``kill_shell`` and ``list_shells``
(``nyzhi.tools.builtin.shells``) act on it later. This module holds what those tools share and
what runs the process; the supervision lives in the core (``nyzhi.core.loop.background``), which
runs each process as an actor under the tool executor of the agent that started it, so the
process ends with that agent's subtree, with the session and with nyz.

Why the pieces are shaped so:

* **One table per agent tree** (``ShellTable``, shared through ``ToolContext.shells`` like the
  leases): the limit (``[agent.background] max_processes``) counts the whole tree, and ids are
  unique in it. Each agent acts only on its own processes: another agent's id is "unknown".
* **A bounded ring per process** (``Ring``, ``buffer_bytes``): a server printing forever
  costs at most that much memory; what fell off the ring is still in the log file.
* **The whole output on disk, redacted** (the tool-results directory, as long outputs are):
  redaction and the write run in a worker thread per chunk, so a chatty process neither stalls
  the trio loop nor outruns the disk (the pipe fills and the child waits, as with any pipe).
* **The same process start as ``bash``**: the executor's sandbox wrap, environment policy and
  ``nyzhi.spawn.open_bound_process`` (bwrap ``--die-with-parent`` tied to a thread that lives
  as long as the child), so kill -9 of nyz still kills the sandbox and everything in it.
* **Notices** (exit, a port opened) are queued per owning agent and handed to its next model
  step by the core (``ShellTable.take_notices``).
"""

from __future__ import annotations

import codecs
import itertools
import os
import re
import signal
import subprocess
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from nyzhi.textcut import cut

DEFAULT_BUFFER_BYTES = 1 << 20
DEFAULT_MAX_PROCESSES = 8
DEFAULT_YIELD_MS = 1000
MAX_YIELD_MS = 30_000
READ_CHUNK = 64 * 1024  # one redaction (holding the GIL) per read stays well under a ms
LAST_LINES = 5
PORT_POLL_S = 0.25
KILL_GRACE = 2.0
DELTA_EVERY_S = 0.1
DELTA_CHARS = 4096

# Terminal control sequences: CSI (colours, cursor moves, bracketed paste), OSC (titles,
# hyperlinks), two-byte escapes and charset selections. What a REPL under a pty prints.
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"        # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL / ST
    r"|\x1b[PX^_][^\x1b]*\x1b\\"      # DCS, SOS, PM, APC
    r"|\x1b[()*+][0-9A-Za-z]"         # charset selection
    r"|\x1b[=>78DEHMNOZc]"            # keypad modes, save/restore, index
    r"|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]"  # other C0 controls but \t \n \r ESC
)


def strip_control(text: str) -> str:
    """``text`` without terminal control sequences; ``\\r\\n`` becomes ``\\n`` and a line
    redrawn with a bare ``\\r`` keeps its last version."""
    text = _CONTROL.sub("", text).replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))
    return text.replace("\x1b", "")


class ShellError(Exception):
    """A background-shell request refused (limit, unknown id, no runtime): the message is for
    the model, one line naming what to do."""


class Ring:
    """The last ``cap`` characters of a stream, with absolute offsets so each reader can ask
    for what came since its last read (and learn how much fell off in between)."""

    def __init__(self, cap: int) -> None:
        self.cap = max(cap, 1024)
        self._chunks: deque[str] = deque()
        self._size = 0
        self.end = 0  # characters ever written

    @property
    def start(self) -> int:
        return self.end - self._size

    def add(self, text: str) -> None:
        if not text:
            return
        self.end += len(text)
        if len(text) > self.cap:
            text = text[-self.cap:]
        self._chunks.append(text)
        self._size += len(text)
        while self._size > self.cap:
            first = self._chunks[0]
            over = self._size - self.cap
            if len(first) <= over:
                self._chunks.popleft()
                self._size -= len(first)
            else:
                self._chunks[0] = first[over:]
                self._size -= over

    def since(self, offset: int) -> tuple[str, int]:
        """(the text from ``offset`` on that is still held, characters lost before it)."""
        lost = max(0, self.start - offset)
        offset = max(offset, self.start)
        skip = offset - self.start
        text = "".join(self._chunks)
        return text[skip:], lost

    def tail_lines(self, n: int) -> list[str]:
        last = [self._chunks[i] for i in range(max(0, len(self._chunks) - 8), len(self._chunks))]
        text = "".join(last)[-16384:]
        return [line for line in text.splitlines() if line.strip()][-n:]


class BackgroundShell:
    """One background process: its state, output ring, log file and queued notices."""

    def __init__(self, shell_id: str, command: str, owner: str, *, tty: bool,
                 buffer_bytes: int, log_path: Path | None) -> None:
        self.id = shell_id
        self.command = command
        self.owner = owner
        self.tty = tty
        self.ring = Ring(buffer_bytes)
        self.log_path = log_path
        self.read_offset = 0
        self.started_at = time.monotonic()
        self.state = "starting"  # running, exited, killed, failed
        self.exit_code: int | None = None
        self.pid: int | None = None
        self.sandboxed = False
        self.note = ""
        self.error: BaseException | None = None
        self.ports: list[str] = []
        self.started = trio.Event()
        self.exited = trio.Event()
        self.killed_by_us = False
        self._changed = trio.Event()
        self.write: Callable[[bytes], Awaitable[None]] | None = None
        self.kill_now: Callable[[], Awaitable[None]] | None = None

    # -- output -----------------------------------------------------------------------------

    def add_output(self, text: str) -> None:
        self.ring.add(text)
        self._changed.set()
        self._changed = trio.Event()

    async def wait_output(self, after: int) -> None:
        """Until output past ``after`` arrives or the process exits."""
        while self.ring.end <= after and not self.exited.is_set():
            await self._changed.wait()

    def take(self, pattern: re.Pattern[str] | None = None) -> str:
        """The output since the last read (marking it read), kept to matching lines when a
        ``pattern`` is given."""
        text, lost = self.ring.since(self.read_offset)
        self.read_offset = self.ring.end
        if pattern is not None:
            text = "".join(line for line in text.splitlines(keepends=True) if pattern.search(line))
        if lost:
            where = f" (all of it is in {self.log_path})" if self.log_path else ""
            text = f"[... {lost} characters dropped from the buffer{where} ...]\n{text}"
        return text

    @property
    def last_line(self) -> str:
        lines = self.ring.tail_lines(1)
        return lines[0][:200] if lines else ""

    @property
    def uptime(self) -> float:
        return time.monotonic() - self.started_at

    def status(self) -> str:
        """``running``, ``exited (code N)`` or ``killed``, with the pid."""
        if self.state == "running":
            return f"running (pid {self.pid})"
        if self.state == "killed":
            return f"killed (exit code {self.exit_code})"
        if self.state == "failed":
            return f"failed to start: {self.error}"
        return f"exited with code {self.exit_code}"

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "command": self.command, "state": self.state,
                "exit_code": self.exit_code, "agent": self.owner, "pid": self.pid}


Spawner = Callable[[BackgroundShell], Any]
Listener = Callable[..., Awaitable[None]]  # (kind, shell, **detail)


class ShellTable:
    """Every background process of one agent tree (see the module docstring)."""

    def __init__(self, *, max_processes: int = DEFAULT_MAX_PROCESSES,
                 buffer_bytes: int = DEFAULT_BUFFER_BYTES) -> None:
        self.max_processes = max_processes
        self.buffer_bytes = buffer_bytes
        self.shells: dict[str, BackgroundShell] = {}
        self._ids = itertools.count(1)
        # agent path -> how to start a process as an actor under that agent's tool executor
        self.hosts: dict[str, Spawner] = {}
        self.listener: Listener | None = None  # process_start / process_exit (the core's events)
        # Whether output deltas are announced ("output", for front ends that follow a
        # process's output): at most every DELTA_EVERY_S, the last DELTA_CHARS each time.
        self.follows_output = False
        # agent path -> its running foreground bash's Detach (Ctrl-B moves it here)
        self.foreground: dict[str, Any] = {}
        self._notices: dict[str, list[tuple[str, str]]] = {}  # agent -> (shell id, text)

    def running(self) -> list[BackgroundShell]:
        return [s for s in self.shells.values() if s.state in ("starting", "running")]

    def owned_by(self, agent: str) -> list[BackgroundShell]:
        return [s for s in self.shells.values() if s.owner == agent]

    def get(self, shell_id: Any, agent: str) -> BackgroundShell:
        shell = self.shells.get(str(shell_id)) if isinstance(shell_id, str) else None
        if shell is None or shell.owner != agent:
            mine = ", ".join(s.id for s in self.owned_by(agent)) or "none"
            raise ShellError(f"unknown background shell {shell_id!r} (this agent's: {mine}); "
                             "list them with list_shells")
        return shell

    def move_to_background(self, agent: str) -> str:
        """Ask ``agent``'s running foreground ``bash`` to go on in the background (Ctrl-B);
        what happens, in words for the person."""
        detach = self.foreground.get(agent)
        if detach is None or detach.requested.is_set():
            return "no running command to move to the background"
        if len(self.running()) >= self.max_processes:
            return (f"not moved: {self.max_processes} background processes are running "
                    f"([agent.background] max_processes)")
        detach.request()
        return "moved the running command to the background"

    def new(self, command: str, agent: str, *, tty: bool, log_dir: Path | None,
            limit: bool = True) -> BackgroundShell:
        """A shell record for ``command``, or ``ShellError`` past the limit or without a host
        (``limit`` False: a running command moved here, checked when it was asked)."""
        if limit and len(self.running()) >= self.max_processes:
            raise ShellError(
                f"refused: {self.max_processes} background processes are already running in "
                f"this agent tree, the limit ([agent.background] max_processes = "
                f"{self.max_processes}); stop one with kill_shell first")
        if agent not in self.hosts:
            raise ShellError("background processes need the agent runtime (none is running "
                             "this agent's tools); run the command in the foreground")
        shell_id = f"bg_{next(self._ids)}"
        log = None if log_dir is None else log_dir / f"{time.strftime('%Y%m%dT%H%M%S')}-" \
            f"{os.getpid()}-{shell_id}.log"
        shell = BackgroundShell(shell_id, command, agent, tty=tty,
                                buffer_bytes=self.buffer_bytes, log_path=log)
        self.shells[shell_id] = shell
        return shell

    def notify(self, shell: BackgroundShell, text: str) -> None:
        self._notices.setdefault(shell.owner, []).append((shell.id, text))

    def take_notices(self, agent: str, shell_id: str | None = None) -> list[str]:
        """What happened to ``agent``'s processes (only ``shell_id``'s, if given) since it
        was last told, forgotten once taken: a tool result that showed it, or the agent's
        next model step, tells it once."""
        queued = self._notices.get(agent, [])
        taken = [text for sid, text in queued if shell_id is None or sid == shell_id]
        kept = [(sid, text) for sid, text in queued if shell_id is not None and sid != shell_id]
        if kept:
            self._notices[agent] = kept
        else:
            self._notices.pop(agent, None)
        return taken

    async def announce(self, kind: str, shell: BackgroundShell, **detail: Any) -> None:
        if self.listener is not None:
            await self.listener(kind, shell, **detail)


# -- running one process ------------------------------------------------------------------------


async def run_shell(shell: BackgroundShell, table: ShellTable, start: Callable[..., Awaitable[Any]],
                    redactor: Any) -> None:
    """Start ``shell`` (``start(stdin, stdout)`` returns a ``BoundProcess`` and its wrap
    note), pump its output, watch its ports, and end it with its whole process group when it
    exits or this task is cancelled (the actor stopping). Never raises for the process's own
    failures: they end up in ``shell.state`` and ``shell.error``."""
    master: int | None = None
    try:
        if shell.tty:
            master, slave = os.openpty()
            try:
                proc, note, sandboxed = await start(stdin=slave, stdout=slave, stderr=slave)
            finally:
                os.close(slave)
        else:
            proc, note, sandboxed = await start(stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                stderr=subprocess.STDOUT)
    except BaseException as exc:
        if master is not None:
            os.close(master)
        shell.state, shell.error = "failed", exc
        shell.started.set()
        shell.exited.set()
        if not isinstance(exc, Exception):
            raise
        return
    out: Any = trio.lowlevel.FdStream(master) if master is not None else proc.stdout
    inp: Any = out if master is not None else proc.stdin
    try:
        await supervise(shell, table, proc, out, inp, redactor, note=note, sandboxed=sandboxed)
    finally:  # the stand-ins for missing protected paths, held while it ran
        standins = getattr(proc, "standins", None)
        if standins is not None:
            standins.__exit__(None, None, None)


async def supervise(shell: BackgroundShell, table: ShellTable, proc: Any, out: Any, inp: Any,
                    redactor: Any, *, note: str = "", sandboxed: bool = False,
                    already: str = "") -> None:
    """Run a started process as ``shell`` to its end (see ``run_shell``): pump ``out``,
    write to ``inp`` (None: it takes no input), watch its ports, kill its group when this
    task is cancelled. ``already``: what it printed before (a foreground command moved to the
    background), redacted, kept in the log and counted as read."""
    shell.pid, shell.note, shell.sandboxed = proc.pid, note, sandboxed
    shell.state = "running"
    if inp is not None:

        async def write(data: bytes) -> None:
            await inp.send_all(data)

        shell.write = write
    log = _open_log(shell.log_path)
    if already:
        shell.add_output(already)
        shell.read_offset = shell.ring.end
    try:  # from here on, whatever happens, the group is killed at the end
        if already and log is not None:
            await trio.to_thread.run_sync(lambda: (log.write(already), log.flush()))
        await _run_group(shell, table, proc, out, log, redactor)
    finally:
        with trio.CancelScope(shield=True):
            await _ended(shell, table, proc, (inp, out), log)


async def _run_group(shell: BackgroundShell, table: ShellTable, proc: Any, out: Any, log: Any,
                     redactor: Any) -> None:
    """The shell's life: announced, its output pumped and its ports watched until its
    leader exits; then the rest of its group is swept (its children hold the pipe open
    otherwise) and the pipe drained for a moment."""
    from nyzhi.tools.executors.process import terminate_group

    pgid = proc.pid
    async with trio.open_nursery() as nursery:

        async def kill_now() -> None:
            shell.killed_by_us = True
            await terminate_group(pgid, proc, grace=KILL_GRACE)

        shell.kill_now = kill_now
        shell.started.set()
        await table.announce("start", shell)
        pumped = trio.Event()
        nursery.start_soon(_pump, shell, out, log, redactor, pumped)
        nursery.start_soon(_watch_ports, shell, table, proc.pid)
        if table.follows_output:
            nursery.start_soon(_deltas, shell, table)
        await proc.wait()
        await terminate_group(pgid, proc, grace=0.2)
        with trio.move_on_after(1.0):
            await pumped.wait()
        nursery.cancel_scope.cancel()


async def _ended(shell: BackgroundShell, table: ShellTable, proc: Any,
                 streams: tuple[Any, Any], log: Any) -> None:
    """However the shell ended (shielded by the caller): its group killed if anything of it
    is left, its streams and log closed, its exit recorded, and the agent told when it
    exited by itself (with its last lines)."""
    from nyzhi.tools.executors.process import live_group_members, terminate_group

    pgid = proc.pid
    if proc.returncode is None or live_group_members(pgid):
        shell.killed_by_us = True
        with trio.move_on_after(KILL_GRACE + 2):
            await terminate_group(pgid, proc, grace=KILL_GRACE)
    for stream in {id(s): s for s in streams if s is not None}.values():
        try:
            await stream.aclose()
        except OSError:
            pass
    if log is not None:
        log.close()
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    shell.exit_code = code
    shell.state = "killed" if shell.killed_by_us else "exited"
    shell.write = shell.kill_now = None
    shell.exited.set()
    shell.add_output("")
    if not shell.killed_by_us:
        tail = "\n".join(shell.ring.tail_lines(LAST_LINES))
        table.notify(shell, f"[background {shell.id} (`{cut(shell.command, 80)}`) exited "
                     f"with code {code}" + (f"; last lines:\n{tail}]" if tail else "]"))
    await table.announce("exit", shell)


def _open_log(path: Path | None) -> Any:
    if path is None:
        return None
    try:
        os.makedirs(path.parent, mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None
    return os.fdopen(fd, "w", encoding="utf-8", errors="replace")


async def _pump(shell: BackgroundShell, stream: Any, log: Any, redactor: Any,
                done: trio.Event) -> None:
    """Chunks from the process: decoded, redacted (the held tail of a possible secret kept
    for the next chunk), written to the log and added to the ring. Redaction and the write
    run in a worker thread, so the trio loop only moves bytes."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    held = ""

    def process(data: bytes, final: bool) -> str:
        nonlocal held
        text = held + decoder.decode(data, final=final)
        if shell.tty:
            text = strip_control(text)
        if redactor is not None and not final:
            text, held = redactor.split_release(text)
        elif redactor is not None:
            text, held = redactor.redact(text), ""
        else:
            held = ""
        if log is not None and text:
            log.write(text)
            log.flush()
        return text

    try:
        while True:
            try:
                data = await stream.receive_some(READ_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                data = b""  # a pty's master reads EIO once the last slave is closed
            if not data:
                break
            shell.add_output(await trio.to_thread.run_sync(process, data, False))
        with trio.CancelScope(shield=True):
            shell.add_output(await trio.to_thread.run_sync(process, b"", True))
    finally:
        done.set()


def listening_ports(pid: int) -> list[str]:
    """``host:port`` of every TCP socket in LISTEN state held by ``pid`` or its descendants
    (their fds' socket inodes matched against ``/proc/<pid>/net/tcp`` and ``tcp6``, which show
    the process's own network namespace). Wildcard addresses are shown as 127.0.0.1."""
    pids = _descendants(pid)
    inodes: set[str] = set()
    for p in pids:
        try:
            for fd in os.listdir(f"/proc/{p}/fd"):
                try:
                    target = os.readlink(f"/proc/{p}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    if not inodes:
        return []
    found: list[str] = []
    for name, v6 in (("tcp", False), ("tcp6", True)):
        try:
            with open(f"/proc/{pid}/net/{name}") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) < 10 or cols[3] != "0A" or cols[9] not in inodes:
                continue
            addr, port = cols[1].rsplit(":", 1)
            shown = f"{_address(addr, v6)}:{int(port, 16)}"
            if shown not in found:
                found.append(shown)
    return found


def _address(hexaddr: str, v6: bool) -> str:
    raw = bytes.fromhex(hexaddr)
    if not v6:
        ip = ".".join(str(b) for b in raw[::-1])
        return "127.0.0.1" if ip == "0.0.0.0" else ip
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    import ipaddress

    addr = ipaddress.IPv6Address(words)
    if addr.is_unspecified or (addr.ipv4_mapped and str(addr.ipv4_mapped) == "0.0.0.0"):
        return "127.0.0.1"
    if addr.ipv4_mapped:
        return str(addr.ipv4_mapped)
    return f"[{addr}]"


def _descendants(root: int) -> list[int]:
    """``root`` and every process below it, from the kernel's per-thread ``children`` lists
    (no walk over all of /proc: a reading tool does this before it answers)."""
    out, todo, seen = [], [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        out.append(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
            except (OSError, ValueError):
                continue
    return out


async def _deltas(shell: BackgroundShell, table: ShellTable) -> None:
    """What the process printed, announced as ``output`` a few times a second at most, each
    time only its last ``DELTA_CHARS`` (a view for front ends, never the whole stream: that
    is in the ring and the log), so a chatty process costs the bus a bounded rate."""
    sent = shell.ring.end
    while True:
        await shell.wait_output(sent)
        if shell.exited.is_set() and shell.ring.end <= sent:
            return
        await trio.sleep(DELTA_EVERY_S)  # what arrives meanwhile goes with this one
        text, _ = shell.ring.since(max(sent, shell.ring.end - DELTA_CHARS))
        skipped = max(0, shell.ring.end - DELTA_CHARS - sent)
        sent = shell.ring.end
        if text:
            await table.announce("output", shell, text=text, skipped=skipped)


async def refresh_ports(shell: BackgroundShell, table: ShellTable) -> None:
    """Look at ``shell``'s sockets now; each new listening port is told once (a notice for
    the model). The watcher does it every few moments; the reading tools do it before they
    answer, so what they say is current."""
    if shell.pid is None or shell.state != "running":
        return
    ports = await trio.to_thread.run_sync(listening_ports, shell.pid, abandon_on_cancel=True)
    for port in ports:
        if port not in shell.ports and shell.state == "running":
            shell.ports.append(port)
            table.notify(shell, f"[background {shell.id} (`{cut(shell.command, 80)}`) is "
                         f"listening on {port}]")


async def _watch_ports(shell: BackgroundShell, table: ShellTable, pid: int) -> None:
    """``refresh_ports`` every ``PORT_POLL_S`` at first, less often as the process ages."""
    delay = PORT_POLL_S
    while True:
        await refresh_ports(shell, table)
        await trio.sleep(delay)
        delay = min(delay * 1.5, 2.0)
