"""The one JSON-RPC 2.0 peer, over a pair of trio byte streams, with the framing pluggable.

Two wires speak it: an editor to ``nyz acp`` (one message per line, ``JsonLines``) and nyz to
a language server (``Content-Length`` headers, ``ContentLength``). Both sides of either call:
our requests wait for the answer with their id, the other side's requests run each in its own
task (so ACP's ``session/cancel`` is read while a ``session/prompt`` runs), and a notification
goes to its handler. It sits at the bottom of the layers so that ``nyzhi.core.runtime.lsp`` and the
``acp`` front end share it; the LSP client libraries on PyPI are asyncio, so it is our own.

Every failure is one ``RpcError`` carrying the spec's code, a one-line message and ``data``:
raised by a handler to answer with it, raised by ``request`` when the other side answered with
one, and ``PeerGone`` (a subclass) once the other side has gone, so that nobody waits for an
answer that cannot come. What is wrong with one message is answered and the connection goes
on: a message that is not JSON (-32700), not a request (-32600), an unknown method (-32601);
a handler's own failure is mapped by ``errors`` (ACP: parameters that do not fit are -32602,
anything else -32603 with one line, never a traceback). A frame the framing cannot recover
from (a bad ``Content-Length``, a body over the bound) ends the connection with ``PeerGone``
saying why; the JSON-lines framing skips an over-long line and answers it.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, Protocol

import trio

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

Handler = Callable[[Any], Any]  # params -> result (a request's, awaited) or None/awaitable
Lookup = Callable[[str], Handler | None]  # a method's name -> its handler (``dict.get``)


class RpcError(Exception):
    """A JSON-RPC error: ``code``, a one-line ``message`` and optional ``data``; ``method`` is
    the request it answered, when it came back from the other side."""

    def __init__(self, code: int, message: str, data: Any = None, *,
                 method: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.method = method


class PeerGone(RpcError):
    """The other side has gone (closed its end, exited, sent what cannot be read): every
    request waiting, and every one made later, fails with this."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


class FrameError(Exception):
    """A frame that cannot be read; ``fatal`` when the stream cannot be resynchronised."""

    def __init__(self, message: str, *, fatal: bool) -> None:
        super().__init__(message)
        self.fatal = fatal


class Framing(Protocol):
    """How messages are cut out of the byte stream and wrapped for it."""

    def wrap(self, body: bytes) -> bytes: ...

    def split(self, chunk: bytes | bytearray) -> list[bytes | FrameError]:
        """The complete messages (and unreadable frames) ``chunk`` completes, in order."""
        ...


class JsonLines:
    """One message per line (ACP over stdio). A line over ``limit`` bytes is refused, not
    buffered forever: it is dropped up to its newline and answered once."""

    def __init__(self, limit: int = 64 * 1024 * 1024) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._skipping = False

    def wrap(self, body: bytes) -> bytes:
        return body + b"\n"

    def split(self, chunk: bytes | bytearray) -> list[bytes | FrameError]:
        out: list[bytes | FrameError] = []
        buffer = self._buffer
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            if self._skipping:
                self._skipping = False
            elif len(line) > self.limit:
                out.append(FrameError(f"message too long (over {self.limit} bytes)",
                                      fatal=False))
            elif line.strip():
                out.append(line)
        if len(buffer) > self.limit:
            buffer.clear()
            if not self._skipping:
                self._skipping = True
                out.append(FrameError(f"message too long (over {self.limit} bytes)",
                                      fatal=False))
        return out


class ContentLength:
    """``Content-Length: N`` headers, a blank line, then N bytes (LSP). A header block over
    ``header_limit`` bytes, or a length missing, unreadable or over ``limit``, leaves nothing
    to resynchronise on: fatal."""

    def __init__(self, limit: int = 256 * 1024 * 1024, header_limit: int = 8192) -> None:
        self.limit = limit
        self.header_limit = header_limit
        self._buffer = bytearray()
        self._length: int | None = None  # of the body being read, after its headers

    def wrap(self, body: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def split(self, chunk: bytes | bytearray) -> list[bytes | FrameError]:
        out: list[bytes | FrameError] = []
        buffer = self._buffer
        buffer += chunk
        while True:
            if self._length is None:
                end = buffer.find(b"\r\n\r\n")
                if end < 0 or end > self.header_limit:
                    if len(buffer) > self.header_limit:
                        out.append(FrameError("a malformed header (no end within "
                                              f"{self.header_limit} bytes)", fatal=True))
                    return out
                try:
                    self._length = self._length_of(bytes(buffer[:end]))
                except FrameError as exc:
                    out.append(exc)
                    return out
                del buffer[: end + 4]
            if len(buffer) < self._length:
                return out
            out.append(bytes(buffer[: self._length]))
            del buffer[: self._length]
            self._length = None

    def _length_of(self, head: bytes) -> int:
        length = None
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    length = None
        if length is None or not 0 <= length <= self.limit:
            raise FrameError("a message without a valid Content-Length", fatal=True)
        return length


def internal_error(exc: Exception) -> RpcError:
    """The default answer to a handler's failure: itself if it is an ``RpcError``, else
    -32603 with its first line."""
    if isinstance(exc, RpcError):
        return exc
    text = str(exc).splitlines()
    return RpcError(INTERNAL_ERROR, text[0] if text and text[0] else type(exc).__name__)


class _Pending:
    __slots__ = ("done", "error", "method", "result")

    def __init__(self, method: str) -> None:
        self.method = method
        self.done = trio.Event()
        self.result: Any = None
        self.error: RpcError | None = None


class Connection:
    """One JSON-RPC peer on ``send``/``receive``; ``serve`` (the one reader) must be running
    for answers to arrive.

    ``methods`` and ``notifications`` find the handler of a name (``dict.get``); a request's
    handler is awaited in its own task and its return value is the result. A notification's
    handler is called in arrival order; if it returns an awaitable, that runs in its own task
    (it may wait on this peer: ACP's ``session/cancel``), else it is done before the next
    message is read (LSP's diagnostics, in order). ``errors`` maps a handler's failure to the
    error answered, ``redact`` is applied to every error message sent (an error may quote a
    file or a setting). ``peer`` names the other side in ``PeerGone``'s messages.
    ``cancel_method``: the notification that tells the other side a request was given up
    (LSP's ``$/cancelRequest``; ACP has none). ``raise_when_gone``: a notification to a side
    that has gone raises ``PeerGone`` (LSP: the caller says so); False drops it (ACP: its
    reader sees EOF and everything ends that way)."""

    def __init__(self, send: trio.abc.SendStream, receive: trio.abc.ReceiveStream,
                 framing: Framing | None = None, *, methods: Lookup | dict[str, Any] | None = None,
                 notifications: Lookup | dict[str, Any] | None = None,
                 errors: Callable[[Exception], RpcError] = internal_error,
                 redact: Callable[[str], str] = lambda text: text, peer: str = "the peer",
                 cancel_method: str | None = None, raise_when_gone: bool = True) -> None:
        self._send_stream = send
        self._receive = receive
        self.framing: Framing = framing if framing is not None else JsonLines()
        self._methods = _lookup(methods)
        self._notifications = _lookup(notifications)
        self.errors = errors
        self.redact = redact
        self.peer = peer
        self.cancel_method = cancel_method
        self.raise_when_gone = raise_when_gone
        self._write_lock = trio.Lock()
        # a pipe (``nyz acp``'s stdout, a server's stdin) is written directly when no write
        # waits (``_send``)
        self._pipe = send if isinstance(send, trio.lowlevel.FdStream) else None
        self._next_id = 0
        self._pending: dict[int, _Pending] = {}
        self.closed = trio.Event()
        self.gone: PeerGone | None = None  # why, once ``closed`` is set

    # ---- ending -------------------------------------------------------------------------

    def _end(self, gone: PeerGone) -> None:
        """The other side has gone: say why once, and fail every request waiting."""
        if self.gone is None:
            self.gone = gone
        self.closed.set()
        for pending in self._pending.values():
            if not pending.done.is_set():
                pending.error = PeerGone(str(self.gone))
                pending.done.set()

    # ---- sending ------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        """Write one message, whole and in order; ``PeerGone`` if the other side has gone.

        On a pipe the message is written here and now when no other write is in progress:
        ``FdStream.send_all`` and the lock each yield to the scheduler before writing, and
        every other runnable task (the agent streaming on, the session log) ran first, which
        is what a streamed chunk's latency was made of. Only the rest of a message the pipe
        did not take at once goes the waiting way, holding the lock, so nothing is written in
        between."""
        if self.gone is not None:
            raise PeerGone(str(self.gone))
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        data = self.framing.wrap(body)
        lock = self._write_lock
        if self._pipe is not None and not lock.locked():
            try:
                # asked each time: -1 once the stream is closed (EBADF below), never a
                # descriptor number the process has since reused for another file
                sent = os.write(self._pipe.fileno(), data)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                self._write_failed(exc)
            if sent == len(data):
                return
            lock.acquire_nowait()  # free (checked above, nothing awaited since): ours now
            try:
                await self._write(data[sent:])
            finally:
                lock.release()
            return
        async with lock:
            await self._write(data)

    async def _write(self, data: bytes) -> None:
        try:
            await self._send_stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self._write_failed(exc)

    def _write_failed(self, exc: BaseException) -> NoReturn:
        self._end(PeerGone(f"cannot write to {self.peer}: {exc or type(exc).__name__}"))
        assert self.gone is not None
        raise PeerGone(str(self.gone))

    async def notify(self, method: str, params: Any = None) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        try:
            await self._send(message)
        except PeerGone:
            if self.raise_when_gone:
                raise

    async def request(self, method: str, params: Any = None, *, limit: float = math.inf) -> Any:
        """The other side's result for ``method``: ``RpcError`` if it answers with an error,
        ``PeerGone`` if it goes away first, ``trio.TooSlowError`` past ``limit`` seconds
        (given up, as when the caller is cancelled: said with ``cancel_method``)."""
        self._next_id += 1
        request_id = self._next_id
        pending = self._pending[request_id] = _Pending(method)
        try:
            await self._send({"jsonrpc": "2.0", "id": request_id, "method": method,
                              "params": params})
            with trio.fail_after(limit):
                await pending.done.wait()
        except BaseException:
            if self.cancel_method and not pending.done.is_set() and self.gone is None:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    try:
                        await self._send({"jsonrpc": "2.0", "method": self.cancel_method,
                                          "params": {"id": request_id}})
                    except PeerGone:
                        pass
            raise
        finally:
            self._pending.pop(request_id, None)
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def _reply(self, request_id: Any, result: Any) -> None:
        try:
            await self._send({"jsonrpc": "2.0", "id": request_id, "result": result})
        except PeerGone:
            pass  # nobody to answer: the reader ends with the stream

    async def _reply_error(self, request_id: Any, error: RpcError) -> None:
        body: dict[str, Any] = {"code": error.code, "message": self.redact(error.message)}
        if error.data is not None:
            body["data"] = error.data
        try:
            await self._send({"jsonrpc": "2.0", "id": request_id, "error": body})
        except PeerGone:
            pass

    # ---- receiving ----------------------------------------------------------------------

    async def serve(self) -> PeerGone:
        """Read and dispatch messages until the other side's output ends or cannot be read
        any more; then what is pending fails and the requests still running are cancelled.
        Returns why it ended (the same ``PeerGone`` as ``gone``)."""
        ended = PeerGone(f"{self.peer} closed the connection")
        try:
            async with trio.open_nursery() as nursery:
                while True:
                    try:
                        chunk = await self._receive.receive_some(65536)
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                        ended = PeerGone(f"the output of {self.peer} broke: {exc}")
                        break
                    if not chunk:
                        break
                    fatal = await self._read(chunk, nursery)
                    if fatal is not None:
                        ended = PeerGone(f"{self.peer} sent {fatal}")
                        break
                nursery.cancel_scope.cancel()  # the end: requests still running end here
        finally:
            self._end(ended)
        assert self.gone is not None
        return self.gone

    async def _read(self, chunk: bytes | bytearray, nursery: trio.Nursery) -> str | None:
        """Dispatch what ``chunk`` completes; the message of a fatal frame error, if any."""
        for item in self.framing.split(chunk):
            if isinstance(item, FrameError):
                if item.fatal:
                    return str(item)
                await self._reply_error(None, RpcError(INVALID_REQUEST, str(item)))
            else:
                await self._dispatch(item, nursery)
        return None

    async def _dispatch(self, body: bytes, nursery: trio.Nursery) -> None:
        try:
            message = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            await self._reply_error(None, RpcError(PARSE_ERROR, f"parse error: {exc}"))
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            await self._reply_error(_id_of(message), RpcError(
                INVALID_REQUEST, "invalid request: not a JSON-RPC 2.0 object"))
            return
        method = message.get("method")
        if method is None and ("result" in message or "error" in message):
            self._answered(message)
            return
        if not isinstance(method, str):
            await self._reply_error(_id_of(message), RpcError(
                INVALID_REQUEST, "invalid request: 'method' must be a string"))
            return
        if "id" not in message:
            handler = self._notifications(method)
            if handler is not None:  # unknown notifications are ignored, as the spec says
                self._notification(handler, message.get("params"), nursery)
            return
        request_id = message["id"]
        if not (isinstance(request_id, str | int) and not isinstance(request_id, bool)):
            await self._reply_error(None, RpcError(
                INVALID_REQUEST, "invalid request: 'id' must be a string or an integer"))
            return
        handler = self._methods(method)
        if handler is None:
            await self._reply_error(request_id, RpcError(METHOD_NOT_FOUND,
                                                         f"method not found: {method}"))
            return
        nursery.start_soon(self._request, request_id, handler, message.get("params"))

    def _answered(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        pending = self._pending.get(request_id) if isinstance(request_id, int) else None
        if pending is None or pending.done.is_set():
            return  # not ours, or given up already
        error = message.get("error")
        if error is not None:
            error = error if isinstance(error, dict) else {}
            code = error.get("code")
            pending.error = RpcError(
                code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
                str(error.get("message", "error")), error.get("data"), method=pending.method)
        else:
            pending.result = message.get("result")
        pending.done.set()

    async def _request(self, request_id: Any, handler: Handler, params: Any) -> None:
        try:
            result = await handler(params)
        except Exception as exc:  # one line, never a traceback
            await self._reply_error(request_id, self.errors(exc))
        else:
            await self._reply(request_id, result)

    def _notification(self, handler: Handler, params: Any, nursery: trio.Nursery) -> None:
        try:
            result = handler(params)
        except Exception:  # nobody to answer; a bad notification changes nothing
            return
        if inspect.isawaitable(result):
            nursery.start_soon(_quietly, result)


async def _quietly(awaitable: Awaitable[Any]) -> None:
    try:
        await awaitable
    except Exception:  # nobody to answer; a bad notification changes nothing
        pass


def _lookup(table: Lookup | dict[str, Any] | None) -> Lookup:
    if table is None:
        return lambda _name: None
    return table.get if isinstance(table, dict) else table


def _id_of(message: Any) -> Any:
    if isinstance(message, dict):
        value = message.get("id")
        if isinstance(value, str | int) and not isinstance(value, bool):
            return value
    return None


__all__ = ["INTERNAL_ERROR", "INVALID_PARAMS", "INVALID_REQUEST", "METHOD_NOT_FOUND",
           "PARSE_ERROR", "Connection", "ContentLength", "FrameError", "Framing", "JsonLines",
           "PeerGone", "RpcError", "internal_error"]
