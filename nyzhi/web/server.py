"""The ``nyz serve`` server: plain HTTP for the page and its files, a WebSocket for the console.

Each TCP connection's request head is read and checked here before anything else happens:

* on a loopback bind, ``Host`` and ``Origin`` must name this server
  (``nyzhi.loopback.loopback_refusal``, the check ``nyz mcp serve`` uses), so a page
  whose DNS name was rebound to 127.0.0.1 cannot drive the agent through the user's browser;
  on a remote bind (``--allow-remote``) an ``Origin``, when sent, must be the ``Host`` itself;
* the token (``?token=`` or ``Authorization: Bearer``) is required for everything except the
  page shell, which holds no data: it reads the token from the URL's fragment (never sent to
  a server, never in a log or a Referer) and asks for the rest with it. A wrong or missing
  token is counted and logged, never its value;
* a WebSocket upgrade of ``/ws`` is then handed, bytes already read included, to
  ``trio-websocket``, with a message-size limit; connections are limited in number.

Answers close the connection after one response (the page needs a handful of files), so no
keep-alive parsing is needed. No exception text with a traceback reaches a client.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import importlib.resources
import logging
import secrets
import socket
import sys
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import attrs
import h11
import trio

from nyzhi import __version__, records
from nyzhi.core.protocol import describe_error
from nyzhi.core.protocol.live_socket import serve_live
from nyzhi.loopback import is_loopback, loopback_refusal, security_headers
from nyzhi.web import protocol as p
from nyzhi.web.session import Viewer, WebSession

log = logging.getLogger(__name__)

DEFAULT_PORT = 6494
MAX_HEAD = 16 * 1024
HEAD_TIMEOUT = 10.0
HELLO_TIMEOUT = 30.0
CLOSE_TIMEOUT = 2.0
SEND_BUFFER = 128 * 1024
SEND_BATCH = 64  # queued messages one viewer's sender writes at once
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}


class ServeError(Exception):
    """Bad ``nyz serve`` options; the message says what to change."""


@records.define
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str = attrs.field(factory=lambda: secrets.token_urlsafe(24))
    generated: bool = True
    allow_remote: bool = False
    max_message: int = 1024 * 1024  # bytes of one client message
    max_connections: int = 32  # WebSocket connections at once (there is one token per run)
    send_queue: int = 4096  # messages queued for one viewer before it is dropped
    max_sessions: int = 8
    team: str | None = None  # --team: a running team to show and message (nyzhi.web.team)

    def check(self) -> None:
        if not self.token.strip():
            raise ServeError("--token must not be empty")
        if not 0 <= self.port <= 65535:
            raise ServeError(f"--port {self.port}: the port must be between 0 and 65535")
        if not is_loopback(self.host) and not self.allow_remote:
            raise ServeError(f"--host {self.host}: not a loopback address; pass --allow-remote "
                             "to serve other machines (the token is then all that protects "
                             "your files; prefer an SSH tunnel)")
        for name in ("max_message", "max_connections", "send_queue"):
            if getattr(self, name) < 1:
                raise ServeError(f"--{name.replace('_', '-')} must be at least 1")


def static_files() -> dict[str, bytes]:
    """The page's files, shipped in this package (``static/``), by name."""
    root = importlib.resources.files("nyzhi.web") / "static"
    return {entry.name: entry.read_bytes() for entry in root.iterdir() if entry.is_file()}


class _Replay(trio.abc.Stream):
    """A stream whose first bytes are the request head already read, for trio-websocket.

    It can also be corked: while a viewer's sender writes a batch of queued messages, their
    frames collect here and go out in one ``send_all`` (one system call, one wake-up of the
    peer) instead of one per message."""

    def __init__(self, stream: trio.abc.Stream, head: bytes) -> None:
        self.stream = stream
        self.head = head
        self.corked: bytearray | None = None

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self.head:
            size = len(self.head) if max_bytes is None else max_bytes
            out, self.head = self.head[:size], self.head[size:]
            return out
        return await self.stream.receive_some(max_bytes)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self.corked is not None:
            self.corked += data
            return
        await self.stream.send_all(data)

    @contextlib.asynccontextmanager
    async def cork(self) -> AsyncIterator[None]:
        """Hold writes in the block and send them at its end, at once."""
        self.corked = bytearray()
        try:
            yield
        finally:
            data, self.corked = self.corked, None
        if data:
            await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        if isinstance(self.stream, trio.abc.HalfCloseableStream):
            await self.stream.send_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()


class Hub:
    """The sessions this server runs, each with its runtime, alive until the server stops."""

    def __init__(self, nursery: trio.Nursery, runtime_options: Any, options: ServeOptions):
        self.nursery = nursery
        self.runtime_options = runtime_options
        self.options = options
        self.sessions: dict[str, WebSession] = {}
        self.first: WebSession | None = None

    async def open(self, *, first: bool = False) -> WebSession:
        if len(self.sessions) >= self.options.max_sessions:
            raise p.ProtocolError(f"this server runs {len(self.sessions)} sessions already "
                                  "(the most it keeps); attach to one by id")
        options = self.runtime_options if first else attrs.evolve(
            self.runtime_options, continue_latest=False, session=None)
        session: WebSession = await self.nursery.start(self._run, options)
        if first:
            self.first = session
        return session

    async def _run(self, options: Any, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        from nyzhi.core.runtime.runtime import open_runtime

        async with open_runtime(options) as rt:
            for notice in rt.notices:
                _say(notice)
            async with rt.subscribe() as events, trio.open_nursery() as nursery:
                session = WebSession(rt, nursery)
                self.sessions[rt.session_id] = session
                nursery.start_soon(session.pump, events)
                # the same hub on the live socket, for ``nyz attach``; gone with the runtime
                await nursery.start(functools.partial(serve_live, rt, hub=session,
                                                      notice=_say))
                if self.options.team is not None:
                    from nyzhi.core.protocol.team_view import RunningTeam
                    from nyzhi.web.team import TeamView

                    session.team = TeamView(RunningTeam(self.options.team))
                    await nursery.start(session.team.follow, session.record, session.redactor)
                task_status.started(session)
                await trio.sleep_forever()

    async def find(self, wanted: str | None) -> WebSession:
        if wanted == "new":
            return await self.open()
        if wanted is None:
            assert self.first is not None
            return self.first
        found = [s for sid, s in self.sessions.items() if sid.startswith(wanted)]
        if len(found) != 1:
            raise p.ProtocolError(f"no session {wanted!r} on this server" if not found
                                  else f"session {wanted!r} is ambiguous")
        return found[0]


class Server:
    def __init__(self, options: ServeOptions, hub: Hub) -> None:
        self.options = options
        self.hub = hub
        self.files = static_files()
        self.port = options.port
        self.connections = 0
        self.refused_tokens = 0

    # ---- HTTP ------------------------------------------------------------------------

    async def handle(self, stream: trio.SocketStream) -> None:
        # A bounded kernel buffer too: what a stalled viewer holds up is this plus its queue.
        with contextlib.suppress(OSError):
            stream.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        try:
            async with trio.open_nursery() as nursery:
                await self._handle(stream, nursery)
                nursery.cancel_scope.cancel()
        except Exception as exc:  # a broken connection is this connection's problem only
            log.debug("connection failed", exc_info=exc)
        finally:
            await trio.aclose_forcefully(stream)

    async def _handle(self, stream: trio.SocketStream, nursery: trio.Nursery) -> None:
        head = await self._read_head(stream)
        if head is None:
            return
        conn = h11.Connection(h11.SERVER)
        conn.receive_data(head)
        try:
            request = conn.next_event()
        except h11.RemoteProtocolError:
            await self._respond(stream, 400, "a malformed HTTP request")
            return
        if not isinstance(request, h11.Request):
            await self._respond(stream, 400, "a malformed HTTP request")
            return
        refused = self._refusal(request.headers)
        if refused is not None:
            await self._respond(stream, *refused)
            return
        target = urllib.parse.urlsplit(request.target.decode("latin-1"))
        path = target.path
        if request.method != b"GET":
            await self._respond(stream, 405, "only GET is served")
            return
        if path in ("/", "/index.html"):
            await self._shell(stream)
            return
        if not self._token_ok(request.headers, target.query, stream):
            await self._respond(stream, 401, "missing or wrong token")
            return
        if path == "/ws":
            if _header(request.headers, b"upgrade").lower() != b"websocket":
                await self._respond(stream, 426, "this path is a WebSocket")
                return
            if self.connections >= self.options.max_connections:
                await self._respond(stream, 429, "too many connections")
                return
            await self._websocket(_Replay(stream, head), nursery)
            return
        name = path.removeprefix("/static/")
        if path.startswith("/static/") and name in self.files:
            kind = TYPES.get("." + name.rpartition(".")[2], "application/octet-stream")
            await self._send(stream, 200, self.files[name], kind)
            return
        await self._respond(stream, 404, "not found")

    async def _read_head(self, stream: trio.SocketStream) -> bytes | None:
        buf = b""
        with trio.move_on_after(HEAD_TIMEOUT):
            while b"\r\n\r\n" not in buf:
                if len(buf) > MAX_HEAD:
                    await self._respond(stream, 431, "the request head is too large")
                    return None
                chunk = await stream.receive_some(4096)
                if not chunk:
                    return None
                buf += chunk
            return buf
        return None

    def _refusal(self, headers: Any) -> tuple[int, str] | None:
        if is_loopback(self.options.host):
            return loopback_refusal(self.options.host, self.port, headers)
        host = _header(headers, b"host").decode("latin-1").lower()
        origin = _header(headers, b"origin").decode("latin-1").lower()
        if origin and origin != f"http://{host}":
            return 403, "requests from this Origin are not allowed"
        return None

    def _token_ok(self, headers: Any, query: str, stream: trio.SocketStream) -> bool:
        given = urllib.parse.parse_qs(query).get("token", [""])[0]
        auth = _header(headers, b"authorization").decode("latin-1")
        if not given and auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        if given and hmac.compare_digest(given.encode(), self.options.token.encode()):
            return True
        self.refused_tokens += 1
        peer = _peer(stream)
        self.report(f"refused a request from {peer}: {'wrong' if given else 'no'} token "
                    f"({self.refused_tokens} refused so far)")
        return False

    def report(self, line: str) -> None:
        """Say ``line`` to whoever runs the server: stderr here (the console's ``/web``
        shows it on its screen instead)."""
        _say(line)

    async def _shell(self, stream: trio.SocketStream) -> None:
        nonce = secrets.token_urlsafe(16)
        body = self.files["index.html"].replace(b"{{NONCE}}", nonce.encode())
        csp = (f"default-src 'none'; script-src 'nonce-{nonce}' 'strict-dynamic'; "
               "style-src 'self'; connect-src 'self'; img-src 'self' data:; "
               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        await self._send(stream, 200, body, TYPES[".html"], csp=csp)

    async def _respond(self, stream: trio.abc.Stream, status: int, message: str) -> None:
        await self._send(stream, status, (message + "\n").encode(), "text/plain; charset=utf-8")

    async def _send(self, stream: trio.abc.Stream, status: int, body: bytes, kind: str,
                    csp: str | None = None) -> None:
        reason = _REASONS.get(status, "Error")
        # the one header set of every loopback responder (nyzhi.loopback); the shell's CSP
        # names its script nonce, every other answer allows nothing
        shared = security_headers(csp=csp) if csp else security_headers()
        headers = [("Content-Type", kind), ("Content-Length", str(len(body))), *shared,
                   ("Connection", "close")]
        head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
        with trio.move_on_after(HEAD_TIMEOUT):
            await stream.send_all(head.encode("latin-1") + b"\r\n" + body)

    # ---- WebSocket -------------------------------------------------------------------

    async def _websocket(self, stream: _Replay, nursery: trio.Nursery) -> None:
        from trio_websocket import ConnectionClosed, wrap_server_stream

        request = await wrap_server_stream(nursery, stream,
                                           max_message_size=self.options.max_message)
        ws = await request.accept()
        self.connections += 1
        try:
            await self._viewer(ws, stream)
        except ConnectionClosed:
            pass
        finally:
            self.connections -= 1
            with trio.move_on_after(CLOSE_TIMEOUT, shield=True):
                await ws.aclose()

    async def _viewer(self, ws: Any, stream: _Replay) -> None:
        from trio_websocket import ConnectionClosed

        try:
            with trio.fail_after(HELLO_TIMEOUT):
                hello = p.decode(await ws.get_message())
            if not isinstance(hello, p.Hello):
                raise p.ProtocolError("the first message must be hello")
            if hello.protocol != p.PROTOCOL:
                raise p.ProtocolError(f"protocol {hello.protocol} is not served; this server "
                                      f"speaks protocol {p.PROTOCOL}")
            session = await self.hub.find(hello.session)
        except ConnectionClosed:
            return
        except (p.ProtocolError, trio.TooSlowError) as exc:
            message = str(exc) or "no hello within 30 seconds"
            await ws.send_message(p.encode(p.ErrorMessage(message)))
            await ws.aclose(1008, message[:120])
            return
        except Exception as exc:  # a new session that could not open: one line, no traceback
            log.debug("hello failed", exc_info=exc)
            first = self.hub.first
            message = describe_error(exc)
            if first is not None:
                message = first.redactor.redact(message)
            await ws.send_message(p.encode(p.ErrorMessage(f"hello: {message}")))
            await ws.aclose(1008, message[:120])
            return
        viewer = Viewer(self.options.send_queue)
        welcome = p.Welcome(p.PROTOCOL, p.SERVER, __version__, session.session_id,
                            tuple(self.hub.sessions), tuple(session.commands()))
        with session.attach(viewer, hello.since) as (state, backlog), viewer.cancel_scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_send_all, ws, stream, viewer,
                                   [p.encode(welcome), p.encode(state), *backlog])
                try:
                    while True:
                        text = await ws.get_message()
                        try:
                            message = p.decode(text)
                        except p.ProtocolError as exc:
                            session.tell(viewer, p.ErrorMessage(str(exc)))
                            continue
                        await session.handle(viewer, message)
                except ConnectionClosed:
                    pass
                nursery.cancel_scope.cancel()
        if viewer.dropped:
            with trio.move_on_after(CLOSE_TIMEOUT):
                await ws.aclose(1008, "too slow: the send queue was full")


async def _send_all(ws: Any, stream: _Replay, viewer: Viewer, first: list[str]) -> None:
    """One viewer's sender. It takes what is queued (up to ``SEND_BATCH`` messages) and writes
    their frames with one system call, then yields to the loop before the next batch, so
    a burst of events costs each viewer one write per batch rather than one per event, and
    no viewer holds the loop for long."""
    from trio_websocket import ConnectionClosed

    try:
        for start in range(0, len(first), SEND_BATCH):
            await _send_batch(ws, stream, first[start:start + SEND_BATCH])
        async for text in viewer.receive:
            batch = [text]
            with contextlib.suppress(trio.WouldBlock):
                while len(batch) < SEND_BATCH:
                    batch.append(viewer.receive.receive_nowait())
            await _send_batch(ws, stream, batch)
    except (ConnectionClosed, trio.BrokenResourceError, trio.ClosedResourceError):
        viewer.cancel_scope.cancel()


async def _send_batch(ws: Any, stream: _Replay, batch: list[str]) -> None:
    async with stream.cork():
        for text in batch:
            await ws.send_message(text)
    await trio.lowlevel.checkpoint()


def _header(headers: Any, name: bytes) -> bytes:
    for key, value in headers:
        if key.lower() == name:
            return bytes(value)
    return b""


def _peer(stream: Any) -> str:
    try:
        host, port, *_ = stream.socket.getpeername()
        return f"{host}:{port}"
    except (AttributeError, OSError, ValueError):
        return "an unknown peer"


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 405: "Method Not Allowed", 421: "Misdirected Request",
            426: "Upgrade Required", 429: "Too Many Requests",
            431: "Request Header Fields Too Large"}


async def serve(options: ServeOptions, runtime_options: Any) -> int:
    """Run until interrupted; the first session's runtime opens before the port does."""
    options.check()
    if options.team is not None:
        from nyzhi.core.protocol.team_view import RunningTeam, TeamViewError

        team = RunningTeam(options.team)
        try:
            team.check()
        except TeamViewError as exc:
            raise ServeError(f"--team {options.team}: {exc}") from None
        if team.lead_pid() is None:
            print(f"nyz serve: team '{options.team}' has no running lead; its members show "
                  "as the store has them until one starts", file=sys.stderr, flush=True)
    async with trio.open_nursery() as nursery:
        hub = Hub(nursery, runtime_options, options)
        try:
            first = await hub.open(first=True)
        except Exception as exc:
            raise ServeError(describe_error(exc)) from None
        try:
            listeners = await trio.open_tcp_listeners(options.port, host=options.host)
        except OSError as exc:
            raise ServeError(f"cannot listen on {options.host}:{options.port}: "
                             f"{exc.strerror or exc}") from None
        server = Server(options, hub)
        server.port = listeners[0].socket.getsockname()[1]
        name = f"[{options.host}]" if ":" in options.host else options.host
        url = f"http://{name}:{server.port}/"
        print(f"nyz serve: listening on {url} (session {first.session_id})", file=sys.stderr,
              flush=True)
        if options.generated:
            print(f"nyz serve: token {options.token}", file=sys.stderr, flush=True)
            print(f"nyz serve: open {url}#token={options.token}", file=sys.stderr, flush=True)
        nursery.start_soon(_stop_on_signal, nursery.cancel_scope)
        await trio.serve_listeners(server.handle, listeners)
    return 0


def _say(line: str) -> None:
    print(f"nyz serve: {line}", file=sys.stderr, flush=True)


async def _stop_on_signal(scope: trio.CancelScope) -> None:
    """SIGTERM, SIGHUP or Ctrl-C: stop serving and close every runtime (their processes
    with them) before exiting."""
    from nyzhi.signals import stop_on_signal

    def stop(_signum: int) -> None:
        print("nyz serve: stopping", file=sys.stderr, flush=True)
        scope.cancel()

    await stop_on_signal(stop)
