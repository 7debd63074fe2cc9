"""JSON-RPC 2.0 over a pair of trio byte streams, one message per line (ACP's stdio transport).

Both sides call: the client's requests run each in its own task (so ``session/cancel`` is
read while a ``session/prompt`` is still running), and our own requests to the client
(``session/request_permission``, ``fs/*``) wait for the reply with the same id. Whatever goes
wrong with one message is answered with the spec's error code and a one-line message, and the
connection goes on: a line that is not JSON (-32700), not a request (-32600), an unknown
method (-32601), parameters that do not fit (-32602, naming the field), and any other failure
(-32603, the message of ``nyzhi.core.errors.describe_error``: never a traceback).
The connection ends when the client closes its end (EOF on our input).
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from nyzhi.acp.schema import ParamsError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
AUTH_REQUIRED = -32000

Handler = Callable[[Any], Awaitable[Any]]
MAX_LINE = 64 * 1024 * 1024  # one message; a longer line is refused, not buffered forever


class RpcError(Exception):
    """A JSON-RPC error: raised by a handler to answer with it, or by ``request`` when the
    client answered with one."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Connection:
    """One JSON-RPC peer. ``methods`` answer requests (their return value is the result);
    ``notifications`` handle notifications. ``redact`` is applied to every error message we
    send (an error may quote a file or a setting)."""

    def __init__(self, send: trio.abc.SendStream, receive: trio.abc.ReceiveStream, *,
                 methods: dict[str, Handler], notifications: dict[str, Handler],
                 redact: Callable[[str], str] = lambda text: text) -> None:
        self._send_stream = send
        self._receive = receive
        self.methods = methods
        self.notifications = notifications
        self.redact = redact
        self._write_lock = trio.Lock()
        # a pipe (``nyz acp``'s stdout) is written directly when no write waits (``_send``)
        self._pipe = isinstance(send, trio.lowlevel.FdStream)
        self._next_id = 0
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self.closed = trio.Event()

    # ---- sending ------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        """Write one message, whole and in order.

        On a pipe (``nyz acp``'s stdout) the line is written here and now when no other
        write is in progress: ``FdStream.send_all`` and the lock each yield to the scheduler
        before writing, and every other runnable task (the agent streaming on, the session
        log) ran first, which is what a streamed chunk's latency was made of. Only the rest
        of a line the pipe did not take at once goes the waiting way, holding the lock, so
        nothing is written in between."""
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        lock = self._write_lock
        if self._pipe and not lock.locked():
            try:
                # asked each time: -1 once the stream is closed (EBADF below), never a
                # descriptor number the process has since reused for another file
                sent = os.write(self._send_stream.fileno(), data)  # type: ignore[attr-defined]
            except BlockingIOError:
                sent = 0
            except OSError:
                self.closed.set()  # the client went away: its reader sees EOF too
                return
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
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.closed.set()  # the client went away: its reader sees EOF too

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        """Call the client and wait for its answer; ``RpcError`` if it answers with an error
        or goes away first."""
        self._next_id += 1
        request_id = self._next_id
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[request_id] = send
        try:
            await self._send({"jsonrpc": "2.0", "id": request_id, "method": method,
                              "params": params})
            async with receive:
                try:
                    reply = await receive.receive()
                except trio.EndOfChannel:
                    raise RpcError(INTERNAL_ERROR, "the client closed the connection") from None
        finally:
            self._waiting.pop(request_id, None)
        if "error" in reply:
            error = reply["error"] if isinstance(reply["error"], dict) else {}
            raise RpcError(int(error.get("code", INTERNAL_ERROR)),
                           str(error.get("message", "error")))
        return reply.get("result")

    async def _reply_error(self, request_id: Any, code: int, message: str) -> None:
        await self._send({"jsonrpc": "2.0", "id": request_id,
                          "error": {"code": code, "message": self.redact(message)}})

    # ---- receiving ----------------------------------------------------------------------

    async def serve(self) -> None:
        """Read and dispatch messages until the client closes its end."""
        try:
            async with trio.open_nursery() as nursery:
                buffer = bytearray()
                while True:
                    try:
                        chunk = await self._receive.receive_some(65536)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        chunk = b""
                    if not chunk:
                        break
                    buffer += chunk
                    while (end := buffer.find(b"\n")) >= 0:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        if line.strip():
                            await self._dispatch(line, nursery)
                    if len(buffer) > MAX_LINE:
                        buffer.clear()
                        await self._reply_error(None, INVALID_REQUEST, "message too long")
                nursery.cancel_scope.cancel()  # EOF: requests still running end here
        finally:
            self.closed.set()
            for channel in list(self._waiting.values()):
                channel.close()

    async def _dispatch(self, line: bytes, nursery: trio.Nursery) -> None:
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            await self._reply_error(None, PARSE_ERROR, f"parse error: {exc}")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            await self._reply_error(_id_of(message), INVALID_REQUEST,
                                    "invalid request: not a JSON-RPC 2.0 object")
            return
        method = message.get("method")
        if method is None and ("result" in message or "error" in message):
            waiting = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
            if waiting is not None:
                waiting.send_nowait(message)
            return
        if not isinstance(method, str):
            await self._reply_error(_id_of(message), INVALID_REQUEST,
                                    "invalid request: 'method' must be a string")
            return
        if "id" not in message:
            handler = self.notifications.get(method)
            if handler is not None:  # unknown notifications are ignored, as the spec says
                nursery.start_soon(self._notification, handler, message.get("params"))
            return
        request_id = message["id"]
        if not (isinstance(request_id, str | int) and not isinstance(request_id, bool)):
            await self._reply_error(None, INVALID_REQUEST,
                                    "invalid request: 'id' must be a string or an integer")
            return
        handler = self.methods.get(method)
        if handler is None:
            await self._reply_error(request_id, METHOD_NOT_FOUND, f"method not found: {method}")
            return
        nursery.start_soon(self._request, request_id, handler, message.get("params"))

    async def _request(self, request_id: Any, handler: Handler, params: Any) -> None:
        try:
            result = await handler(params)
        except RpcError as exc:
            await self._reply_error(request_id, exc.code, exc.message)
        except ParamsError as exc:
            await self._reply_error(request_id, INVALID_PARAMS, str(exc))
        except Exception as exc:  # one line, never a traceback
            await self._reply_error(request_id, INTERNAL_ERROR, _describe(exc))
        else:
            await self._send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def _notification(self, handler: Handler, params: Any) -> None:
        try:
            await handler(params)
        except Exception:  # nobody to answer; a bad notification changes nothing
            pass


def _id_of(message: Any) -> Any:
    if isinstance(message, dict):
        value = message.get("id")
        if isinstance(value, str | int) and not isinstance(value, bool):
            return value
    return None


def _describe(exc: BaseException) -> str:
    from nyzhi.core.protocol import describe_error

    text = describe_error(exc) if isinstance(exc, Exception) else type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = ["Connection", "RpcError"]
