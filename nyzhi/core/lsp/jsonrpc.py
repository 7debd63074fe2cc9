"""JSON-RPC 2.0 over a language server's stdin/stdout, with LSP's ``Content-Length`` framing.

Our own small client on trio: the LSP client libraries on PyPI are asyncio. Messages are
plain dicts here; ``client.py`` builds and reads them with ``lsprotocol``'s types.

One reader task owns stdout: a response wakes the request waiting for its id, a
notification goes to ``on_notify``, and a request *from* the server (``workspace/
configuration``, ``client/registerCapability``, ...) is answered by ``on_request``. When the
stream ends (the server exited or was killed) every pending request fails with
``ServerGone`` at once, so no caller waits for an answer that cannot come.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from typing import Any

import trio

MAX_HEADER = 8192
MAX_BODY = 256 * 1024 * 1024  # a workspace's symbols can be large; past this it is garbage

OnNotify = Callable[[str, Any], None]
OnRequest = Callable[[str, Any], Awaitable[Any]]


class ServerGone(Exception):
    """The server's output ended (it exited, crashed or was killed)."""


class RpcError(Exception):
    """The server answered a request with an error object."""

    def __init__(self, method: str, error: dict[str, Any]) -> None:
        self.code = error.get("code")
        self.data = error.get("data")
        super().__init__(f"{method}: {error.get('message', 'error')} (code {self.code})")


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class _Reader:
    """Splits a byte stream into LSP messages."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.buf = bytearray()

    async def _fill(self) -> None:
        chunk = await self.stream.receive_some(65536)
        if not chunk:
            raise ServerGone("the language server closed its output")
        self.buf += chunk

    async def next(self) -> dict[str, Any]:
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(self.buf) > MAX_HEADER:
                raise ServerGone("the language server sent a malformed header")
            await self._fill()
        length = None
        for line in bytes(self.buf[:end]).split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length is None or not 0 <= length <= MAX_BODY:
            raise ServerGone("the language server sent a message without a valid Content-Length")
        del self.buf[: end + 4]
        while len(self.buf) < length:
            await self._fill()
        body = bytes(self.buf[:length])
        del self.buf[:length]
        return json.loads(body)


class _Pending:
    __slots__ = ("done", "error", "method", "result")

    def __init__(self, method: str) -> None:
        self.method = method
        self.done = trio.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class RpcConnection:
    """Requests and notifications to one server. ``run`` (the reader) must be running."""

    def __init__(self, send: trio.abc.SendStream, receive: trio.abc.ReceiveStream,
                 on_notify: OnNotify, on_request: OnRequest) -> None:
        self._send = send
        self._reader = _Reader(receive)
        self._write_lock = trio.Lock()
        self._pending: dict[int, _Pending] = {}
        self._next_id = 0
        self.on_notify = on_notify
        self.on_request = on_request
        self.closed: BaseException | None = None

    async def _write(self, message: dict[str, Any]) -> None:
        if self.closed is not None:
            raise ServerGone(str(self.closed))
        async with self._write_lock:
            try:
                await self._send.send_all(frame(message))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                raise ServerGone(f"cannot write to the language server: {exc}") from exc

    async def notify(self, method: str, params: Any = None) -> None:
        await self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any = None, *, limit: float = math.inf) -> Any:
        """The result of ``method``; ``RpcError`` for an error answer, ``ServerGone`` if the
        server went away, ``trio.TooSlowError`` past ``limit`` seconds (the server is told to
        cancel, as it is when the caller is cancelled)."""
        self._next_id += 1
        rid = self._next_id
        pending = self._pending[rid] = _Pending(method)
        try:
            await self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            with trio.fail_after(limit):
                await pending.done.wait()
        except BaseException:
            if not pending.done.is_set() and self.closed is None:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    try:
                        await self.notify("$/cancelRequest", {"id": rid})
                    except ServerGone:
                        pass
            raise
        finally:
            self._pending.pop(rid, None)
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def run(self) -> None:
        """Read until the server's output ends; then fail what is pending and raise
        ``ServerGone``."""
        try:
            while True:
                message = await self._reader.next()
                await self._dispatch(message)
        except (ServerGone, ValueError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            gone = exc if isinstance(exc, ServerGone) else ServerGone(
                f"the language server's output broke: {exc}")
            self._fail_all(gone)
            raise gone from None

    def _fail_all(self, exc: BaseException) -> None:
        self.closed = exc
        for pending in self._pending.values():
            pending.error = ServerGone(str(exc))
            pending.done.set()

    async def _dispatch(self, message: dict[str, Any]) -> None:
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if method is None:  # a response
            pending = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if pending is None:
                return
            if "error" in message and message["error"] is not None:
                pending.error = RpcError(pending.method, message["error"])
            else:
                pending.result = message.get("result")
            pending.done.set()
            return
        if "id" in message:  # a request from the server: always answered
            try:
                result = await self.on_request(method, message.get("params"))
                reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            except Exception as exc:
                reply = {"jsonrpc": "2.0", "id": message["id"],
                         "error": {"code": -32603, "message": str(exc)}}
            await self._write(reply)
            return
        self.on_notify(method, message.get("params"))
