"""A live session's socket: how ``nyz attach`` reaches a session another front end started.

Every front end that runs a session (``nyz run``, the console, ``nyz serve``) calls
``serve_live`` once; it serves the session's hub (``nyzhi.core.protocol.live``) on a unix socket
``<dir>/<session-id>.sock`` as JSON lines of the wire format (``nyzhi.core.protocol.wire``), the
same messages the web page speaks over WebSockets: the client's ``hello`` first, then
``welcome``, ``state``, every kept event after ``since``, and live events; ops back.

Owner-only, by three checks: the directory (``live_dir``) is ours and 0700 (made without a race,
never followed through a symlink), the socket is 0600 (bound under a temporary name, chmod-ed,
then renamed into place), and a peer of another uid (``SO_PEERCRED``) is refused. Every line is
bounded (``LINE_LIMIT``): a longer one is refused with one error line, and only that peer is
closed. A viewer that disconnects, or reads too slowly, is dropped; the session never waits for
one. The socket is removed when the session ends; one left by a session that died is not live
(a connect fails) and is removed by the next look (``live_sessions``).

Serving must never cost the session: a failure to bind is one notice line (``notice``), and the
session goes on unattached.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import stat
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from nyzhi.config.fsutil import rename_durably
from nyzhi.core.protocol.backlog import EventBacklog

log = logging.getLogger(__name__)

LINE_LIMIT = 1024 * 1024  # bytes of one JSON line a client may send
SEND_QUEUE = 4096  # messages queued for one viewer before it counts as too slow
HELLO_TIMEOUT = 30.0
SUFFIX = ".sock"


class LiveError(OSError):
    """The live directory or socket cannot be used safely; ``str()`` is one line."""


def _private_dir(path: Path) -> Path:
    """``path`` as a directory that is ours and 0700, made if missing; never a symlink."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise LiveError(f"{path} is not a directory (a symlink is not followed)")
    if st.st_uid != os.getuid():
        raise LiveError(f"{path} belongs to another user")
    if st.st_mode & 0o077:
        raise LiveError(f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o})")
    return path


def live_dir() -> Path:
    """The directory of this user's live sockets (``config.paths.live_sockets_dir``), each of
    its directories made private if missing and checked if not."""
    from nyzhi.config.paths import live_sockets_dir

    live = live_sockets_dir()
    for part in (live.parent.parent, live.parent, live):
        _private_dir(part)
    return live


def socket_path(session_id: str) -> Path:
    if not session_id or "/" in session_id or session_id.startswith("."):
        raise LiveError(f"session id {session_id!r} cannot name a socket")
    return live_dir() / f"{session_id}{SUFFIX}"


def _accepts(path: Path) -> bool:
    """Whether a session listens on ``path`` (a socket nobody listens on is a dead one's)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def live_sessions() -> dict[str, Path]:
    """The live sessions of this user, ``id -> socket``, newest first; a dead session's socket
    is removed on the way."""
    try:
        root = live_dir()
    except OSError:
        return {}
    found: list[tuple[float, str, Path]] = []
    for entry in root.iterdir():
        if not entry.name.endswith(SUFFIX) or entry.name.startswith("."):
            continue
        try:
            st = entry.lstat()
        except OSError:
            continue
        if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
            continue
        if _accepts(entry):
            found.append((st.st_mtime, entry.name[: -len(SUFFIX)], entry))
        else:
            with contextlib.suppress(OSError):
                entry.unlink()
    return {sid: path for _m, sid, path in sorted(found, reverse=True)}


def probe(path: Path, timeout: float = 2.0) -> dict[str, Any] | None:
    from nyzhi.core.protocol import wire as p

    """The ``state`` of the session on ``path`` (its cwd, status, pending), asked with a
    ``hello`` that wants no backlog; None when it does not answer as a live session."""
    import json

    hello = p.encode(p.Hello(p.PROTOCOL, None, 2**62)) + "\n"
    buffer = b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
            sock.sendall(hello.encode())
            while buffer.count(b"\n") < 2 and len(buffer) < LINE_LIMIT:
                chunk = sock.recv(65536)
                if not chunk:
                    return None
                buffer += chunk
        except OSError:
            return None
    for line in buffer.split(b"\n")[:2]:
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if isinstance(message, dict) and message.get("type") == "state":
            return message
    return None


def find_live(query: str | None, cwd: Path) -> tuple[str, Path]:
    """The live session ``query`` names (an id or a unique id prefix), or with no query the
    newest one started in this workspace (its directory, or one above or below ``cwd``).
    ``LiveError`` with one line when there is none, or more than one."""
    live = live_sessions()
    if query:
        found = [(sid, path) for sid, path in live.items() if sid.startswith(query)]
        if not found:
            raise LiveError(f"no live session {query!r} (nyz sessions marks the live ones)")
        if len(found) > 1:
            raise LiveError(f"session {query!r} is ambiguous: "
                            + ", ".join(sid[:12] for sid, _ in found))
        return found[0]
    here = cwd.resolve()
    for sid, path in live.items():  # newest first
        state = probe(path)
        if state is None:
            continue
        there = Path(str(state.get("cwd") or "/nonexistent")).resolve()
        if there == here or here.is_relative_to(there) or there.is_relative_to(here):
            return sid, path
    raise LiveError("no live session in this workspace (nyz attach SESSION attaches to "
                    "another; nyz sessions marks the live ones)")


def peer_credentials(sock: Any) -> tuple[int, int] | None:
    """The pid and uid of the process at the other end of a unix socket (None: not known)."""
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    pid, uid, _gid = struct.unpack("3i", creds)
    return pid, uid


def started_by_us(pid: int, limit: int = 256) -> bool:
    """Whether ``pid`` is this process or one it started (its parent chain reaches us): a
    tool's command, a hook or a background process of this very session, which must never
    answer the session's own approvals. A chain that cannot be read counts as ours (refused)."""
    me = os.getpid()
    for _ in range(limit):
        if pid == me:
            return True
        if pid <= 1:
            return False
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            return True
        pid = int(fields[1])  # after the name: state, then the parent's pid
    return True


class LineTooLong(ValueError):
    pass


class Lines:
    """JSON lines from a stream, each at most ``limit`` bytes (``LineTooLong`` past it)."""

    def __init__(self, stream: trio.abc.ReceiveStream, limit: int = LINE_LIMIT) -> None:
        self.stream = stream
        self.limit = limit
        self.buffer = bytearray()

    async def next(self) -> bytes | None:
        """The next line without its newline; None at the end of the stream."""
        while True:
            at = self.buffer.find(b"\n")
            if at >= 0:
                if at > self.limit:
                    raise LineTooLong(f"a line longer than {self.limit} bytes")
                line = bytes(self.buffer[:at])
                del self.buffer[: at + 1]
                return line
            if len(self.buffer) > self.limit:
                raise LineTooLong(f"a line longer than {self.limit} bytes")
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                return None
            self.buffer += chunk


async def send_line(stream: trio.abc.SendStream, texts: list[str]) -> None:
    await stream.send_all("".join(t + "\n" for t in texts).encode("utf-8"))


async def serve_live(rt: Any, *, hub: Any = None, attend: bool = False,
                     notice: Callable[[str], None] | None = None,
                     answered: Callable[[str], None] | None = None,
                     task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve ``rt``'s session on its live socket until cancelled (then the socket is gone).

    ``hub``: the front end's own ``LiveSession`` (``nyz serve``) or ``DeferredHub`` (the
    console), fed by the front end; None makes a ``DeferredHub`` that pumps the runtime's
    events. ``attend``: a headless session asks a person for approval while a
    viewer is attached (``Session.ask_while``), and denies what waits when the last one goes.
    ``answered``: told each request a viewer answered first (``LiveSession.answered``), so a
    front end asking it too stops. A failure to bind is said through ``notice`` once; the
    session goes on."""
    try:
        path = socket_path(str(rt.session_id))
        if path.exists() and _accepts(path):
            raise LiveError(f"{path} is served by another process")
        listener_sock, ino = _bind(path)
    except OSError as exc:
        if notice is not None:
            notice(f"live socket: not served ({exc}); nyz attach cannot reach this session")
        task_status.started(None)
        return
    try:
        async with trio.open_nursery() as nursery:
            source: Any = hub if hub is not None else DeferredHub(rt, nursery,
                                                                  answered=answered)
            if hub is not None and answered is not None:
                hub.answered = answered
            if hub is None:
                await nursery.start(_pump, rt, source)
            if attend:
                from nyzhi.core.protocol.session import Session

                Session(rt).ask_while(lambda: bool(source.viewers))
            listener = trio.SocketListener(listener_sock)
            task_status.started(path)
            await trio.serve_listeners(
                lambda stream: _connection(_hub_of(source), stream, attend),  # pyright: ignore[reportArgumentType]  (a SocketListener gives SocketStreams)
                [listener],
                handler_nursery=nursery)
    except Exception as exc:  # serving failed: said once; the session goes on unattached
        log.debug("live socket failed", exc_info=exc)
        if notice is not None:
            notice(f"live socket: stopped ({exc}); nyz attach cannot reach this session")
    finally:
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == ino:  # ours, not a later session's
                path.unlink()
        listener_sock.close()


def _bind(path: Path) -> tuple[Any, int]:
    """A listening socket at ``path`` (and its inode), 0600 from the start: bound under a
    temporary name in the 0700 directory, chmod-ed, then renamed over ``path`` (a dead
    session's socket, if one was left)."""
    temp = path.with_name(f".{os.getpid()}-{path.name}")
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(temp))
        os.chmod(temp, 0o600)
        rename_durably(temp, path)
        sock.listen(16)
        ino = os.stat(path).st_ino
    except OSError:
        sock.close()
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    return trio.socket.from_stdlib_socket(sock), ino


class DeferredHub:
    """The hub of a session nobody has attached to yet: its events kept in a bounded backlog
    (``EventBacklog``), and the ``LiveSession`` (the wire, the converter) made only when the
    first viewer connects, fed that backlog first. So a ``nyz run`` or a console nobody
    attaches to pays for neither; one attached later still sees what came before.

    A front end that pumps its own events (the console) gives each to ``record`` and passes
    this as ``serve_live(hub=...)``. ``keep_backlog``: the backlog is also another consumer's
    (the console's ``/web``), so it is kept past the hub's start until ``release_backlog``
    hands it over: one copy of the history, not one per consumer. ``on_hub`` is told the hub
    once it exists (the console hears from it who answered what)."""

    def __init__(self, rt: Any, nursery: trio.Nursery, *, keep_backlog: bool = False,
                 on_hub: Callable[[Any], None] | None = None,
                 answered: Callable[[str], None] | None = None) -> None:
        self.rt, self.nursery, self.answered = rt, nursery, answered
        self.backlog: EventBacklog | None = EventBacklog()
        self.keep_backlog = keep_backlog
        self.on_hub = on_hub
        self.live: Any = None

    @property
    def viewers(self) -> Any:
        return self.live.viewers if self.live is not None else ()

    def hub(self) -> Any:
        if self.live is None:
            from nyzhi.core.protocol.live import LiveSession

            live = LiveSession(self.rt, self.nursery)
            if self.answered is not None:
                live.answered = self.answered
            for event in self.backlog.kept() if self.backlog is not None else ():
                live.record(event)
            if not self.keep_backlog:
                self.backlog = None
            self.live = live
            if self.on_hub is not None:
                self.on_hub(live)
        return self.live

    def release_backlog(self) -> list[Any]:
        """The kept events, for the other consumer, which keeps its own from now on."""
        events = self.backlog.kept() if self.backlog is not None else []
        self.keep_backlog = False
        if self.live is not None:
            self.backlog = None
        return events

    def record(self, event: Any) -> None:
        if self.live is not None:
            self.live.record(event)
        if self.backlog is not None and (self.live is None or self.keep_backlog):
            self.backlog.add(event)

    async def pump(self, events: Any) -> None:
        async for event in events:
            self.record(event)


def _hub_of(source: Any) -> Any:
    return source.hub() if isinstance(source, DeferredHub) else source


async def _pump(rt: Any, hub: Any, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    async with rt.subscribe() as events:
        task_status.started(events)
        await hub.pump(events)


async def _connection(hub: Any, stream: trio.SocketStream, attend: bool) -> None:
    from nyzhi import __version__
    from nyzhi.core.protocol import wire as p
    from nyzhi.core.protocol.live import LiveHost, Viewer

    try:
        creds = peer_credentials(stream.socket)
        refusal = ("refused: the live socket serves only its owner"
                   if creds is None or creds[1] != os.getuid() else
                   "refused: a process this session started cannot attach to it"
                   if started_by_us(creds[0]) else None)
        if refusal is not None:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await send_line(stream, [p.encode(p.ErrorMessage(refusal))])
            return
        lines = Lines(stream)
        try:
            with trio.fail_after(HELLO_TIMEOUT):
                first = await lines.next()
            if first is None:
                return
            hello = p.decode(first)
            if not isinstance(hello, p.Hello):
                raise p.ProtocolError("the first message must be hello")
            if hello.protocol != p.PROTOCOL:
                raise p.ProtocolError(f"protocol {hello.protocol} is not served; this session "
                                      f"speaks protocol {p.PROTOCOL}")
        except (p.ProtocolError, LineTooLong, trio.TooSlowError) as exc:
            await send_line(stream, [p.encode(p.ErrorMessage(str(exc) or "no hello in time"))])
            return
        viewer = Viewer(SEND_QUEUE, LiveHost)  # a socket's viewer, whoever serves the hub
        welcome = p.Welcome(p.PROTOCOL, p.SERVER, __version__, hub.session_id,
                            (hub.session_id,), tuple(hub.commands()))
        try:
            with hub.attach(viewer, hello.since) as (state, backlog), viewer.cancel_scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_send_all, stream, viewer,
                                       [p.encode(welcome), p.encode(state), *backlog])
                    await _read_all(hub, viewer, lines, stream)
                    nursery.cancel_scope.cancel()
        finally:
            if attend and not hub.viewers:
                _deny_waiting(hub)
    except Exception as exc:  # the viewer went away, or failed: that viewer only, never the session
        log.debug("live viewer ended", exc_info=exc)
    finally:
        with contextlib.suppress(Exception):
            await stream.aclose()


async def _read_all(hub: Any, viewer: Any, lines: Lines, stream: trio.SocketStream) -> None:
    from nyzhi.core.protocol import wire as p
    while True:
        try:
            line = await lines.next()
        except LineTooLong as exc:
            await send_line(stream, [p.encode(p.ErrorMessage(f"refused {exc}; closing"))])
            return
        if line is None:
            return
        if not line.strip():
            continue
        try:
            message = p.decode(line)
        except p.ProtocolError as exc:
            hub.tell(viewer, p.ErrorMessage(str(exc)))
            continue
        await hub.handle(viewer, message)


async def _send_all(stream: trio.SocketStream, viewer: Any, first: list[str]) -> None:
    """One viewer's sender: what is queued goes out in one write."""
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        for start in range(0, len(first), 256):
            await send_line(stream, first[start:start + 256])
        async for text in viewer.receive:
            batch = [text]
            while len(batch) < 256:
                try:
                    batch.append(viewer.receive.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            await send_line(stream, batch)
    viewer.cancel_scope.cancel()  # the peer is gone or too slow: end its connection


def _deny_waiting(hub: Any) -> None:
    """The last viewer of a headless session left: what it was asked is answered no, so the
    run goes on as it would have unattended."""
    from nyzhi.core import events as ev

    for request_id, ask in list(hub.pending.items()):
        if ask.get("type") == ev.ApprovalRequest.type:
            with contextlib.suppress(KeyError, ValueError):
                hub.rt.approvals.answer_approval(request_id, "deny")
            hub.pending.pop(request_id, None)


__all__ = ["LINE_LIMIT", "DeferredHub", "LiveError", "find_live", "live_dir", "live_sessions", "probe", "serve_live",
           "socket_path"]

