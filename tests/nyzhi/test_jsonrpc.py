"""The one JSON-RPC peer (``nyzhi.jsonrpc``) with both of its framings: a message per line
(``nyz acp``) and ``Content-Length`` headers (the language servers). Two real peers talk over
in-process streams or a real pipe; bad input is answered or ends the connection with one
line, and nothing waits for an answer that cannot come."""

from __future__ import annotations

import json
import os

import pytest
import trio
import trio.testing

from nyzhi.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Connection,
    ContentLength,
    JsonLines,
    PeerGone,
    RpcError,
)

FRAMINGS = {"lines": JsonLines, "content-length": ContentLength}


@pytest.fixture(params=sorted(FRAMINGS))
def framing(request):
    return FRAMINGS[request.param]


class Raw:
    """The far end of a connection, read and written as bytes through a framing of its own."""

    def __init__(self, stream: trio.abc.Stream, framing) -> None:
        self.stream = stream
        self.framing = framing()
        self.queue: list = []

    async def send(self, message: dict | bytes) -> None:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        await self.stream.send_all(self.framing.wrap(body))

    async def receive(self) -> dict:
        with trio.fail_after(10):
            while not self.queue:
                chunk = await self.stream.receive_some(65536)
                assert chunk, "the peer closed the connection"
                self.queue += self.framing.split(chunk)
        return json.loads(self.queue.pop(0))


async def test_requests_answers_and_notifications_both_ways(framing):
    """Each side calls the other while one of its own calls waits; a notification's plain
    handler runs in arrival order; the error answer carries code, message, data and method."""
    a_end, b_end = trio.testing.memory_stream_pair()
    seen: list = []

    async def add(params):
        return params["x"] + params["y"]

    async def ask_back(params):  # B's method calls A while A's request waits on it
        return await b.request("double", params) + 1

    async def double(params):
        return params * 2

    async def refuse(params):
        raise RpcError(-32000, "not now", {"retry": True})

    a = Connection(a_end, a_end, framing(), methods={"double": double})
    b = Connection(b_end, b_end, framing(), peer="A",
                   methods={"add": add, "ask_back": ask_back, "refuse": refuse},
                   notifications={"note": seen.append})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(a.serve)
        nursery.start_soon(b.serve)
        with trio.fail_after(10):
            assert await a.request("add", {"x": 2, "y": 3}) == 5
            assert await a.request("ask_back", 20) == 41
            for n in range(5):
                await a.notify("note", n)
            assert await a.request("add", {"x": 0, "y": 0}) == 0  # after the notes
            assert seen == [0, 1, 2, 3, 4]
            with pytest.raises(RpcError) as refused:
                await a.request("refuse")
            assert (refused.value.code, refused.value.message, refused.value.data,
                    refused.value.method) == (-32000, "not now", {"retry": True}, "refuse")
            with pytest.raises(RpcError) as unknown:
                await a.request("teleport")
            assert unknown.value.code == METHOD_NOT_FOUND and "teleport" in unknown.value.message
        nursery.cancel_scope.cancel()


async def test_a_failing_handler_is_one_line_and_an_async_notification_runs_on_its_own(
        framing):
    """A handler's failure is answered with one line (never a traceback), through ``errors``;
    an async notification handler may wait on the peer while the reader goes on."""
    a_end, b_end = trio.testing.memory_stream_pair()
    released = trio.Event()

    async def broken(params):
        raise ValueError("first line\nTraceback (most recent call last): ...")

    async def waits(params):  # waits for a message only the reader can deliver
        await b.request("release")
        released.set()

    async def release(params):
        return True

    a = Connection(a_end, a_end, framing(), methods={"release": release})
    b = Connection(b_end, b_end, framing(), methods={"broken": broken},
                   notifications={"waits": waits}, redact=lambda text: text.replace("first", "*"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(a.serve)
        nursery.start_soon(b.serve)
        with trio.fail_after(10):
            with pytest.raises(RpcError) as failed:
                await a.request("broken")
            assert failed.value.code == INTERNAL_ERROR
            assert failed.value.message == "* line"  # the first line only, redacted
            await a.notify("waits")
            await released.wait()
        nursery.cancel_scope.cancel()


async def test_a_request_given_up_is_cancelled_on_the_wire(framing):
    """Past its limit a request raises TooSlowError and the other side is told with
    ``cancel_method`` (LSP's ``$/cancelRequest``); a late answer to it is dropped."""
    ours, theirs = trio.testing.memory_stream_pair()
    conn = Connection(ours, ours, framing(), cancel_method="$/cancelRequest")
    far = Raw(theirs, framing)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.serve)
        async with trio.open_nursery() as inner:
            inner.start_soon(_too_slow, conn)
            asked = await far.receive()
            assert asked["method"] == "slow"
            assert await far.receive() == {"jsonrpc": "2.0", "method": "$/cancelRequest",
                                           "params": {"id": asked["id"]}}
        await far.send({"jsonrpc": "2.0", "id": asked["id"], "result": "late"})
        await far.send({"jsonrpc": "2.0", "id": "x", "method": "ping"})  # still reading
        assert (await far.receive())["error"]["code"] == METHOD_NOT_FOUND
        nursery.cancel_scope.cancel()


async def _too_slow(conn: Connection) -> None:
    with pytest.raises(trio.TooSlowError):
        await conn.request("slow", limit=0.05)


async def test_when_the_other_side_goes_every_wait_ends(framing):
    """The other side closes while a request waits: it fails with PeerGone, ``serve`` returns
    why, and later requests fail at once; a notification is dropped or raises, as asked."""
    ours, theirs = trio.testing.memory_stream_pair()
    conn = Connection(ours, ours, framing(), peer="the editor")
    quiet = Connection(ours, ours, framing(), raise_when_gone=False)
    far = Raw(theirs, framing)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_gone_while_waiting, conn)
        assert (await far.receive())["method"] == "wait"
        await theirs.aclose()
        with trio.fail_after(10):
            gone = await conn.serve()
    assert str(gone) == "the editor closed the connection" and conn.closed.is_set()
    with pytest.raises(PeerGone):
        await conn.request("again")
    with pytest.raises(PeerGone):
        await conn.notify("note")
    await quiet.notify("note")  # the stream is broken: dropped, no error
    assert quiet.closed.is_set() and "cannot write" in str(quiet.gone)


async def _gone_while_waiting(conn: Connection) -> None:
    with pytest.raises(PeerGone, match="the editor closed the connection"):
        await conn.request("wait")


@pytest.mark.parametrize("raw", [b'{"jsonrpc": "2.0", "id": 1, "method": ', b"\xff\xfe"])
async def test_malformed_json_is_a_parse_error_and_the_peer_goes_on(framing, raw):
    ours, theirs = trio.testing.memory_stream_pair()
    conn = Connection(ours, ours, framing(), methods={"ping": _pong})
    far = Raw(theirs, framing)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.serve)
        await far.send(raw)
        error = await far.receive()
        assert error["id"] is None and error["error"]["code"] == PARSE_ERROR
        assert error["error"]["message"].startswith("parse error:")
        assert "\n" not in error["error"]["message"]
        await far.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert await far.receive() == {"jsonrpc": "2.0", "id": 2, "result": "pong"}
        nursery.cancel_scope.cancel()


async def _pong(params):
    return "pong"


@pytest.mark.parametrize("pieces", [[b"x" * 1000] * 5 + [b"x\n"], [b"y" * 1500 + b"\n"]])
async def test_an_over_long_line_is_answered_once_and_skipped(pieces):
    """In pieces (5000 bytes, buffered up to the bound) or whole in one read."""
    ours, theirs = trio.testing.memory_stream_pair()
    conn = Connection(ours, ours, JsonLines(limit=1000), methods={"ping": _pong})
    far = Raw(theirs, JsonLines)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.serve)
        for piece in pieces:
            await theirs.send_all(piece)
        await far.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        error = await far.receive()
        assert error["error"] == {"code": INVALID_REQUEST,
                                  "message": "message too long (over 1000 bytes)"}
        assert await far.receive() == {"jsonrpc": "2.0", "id": 2, "result": "pong"}
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("head, words", [
    (b"Content-Length: many\r\n\r\n{}", "without a valid Content-Length"),
    (b"Content-Type: x\r\n\r\n{}", "without a valid Content-Length"),
    (b"Content-Length: -1\r\n\r\n", "without a valid Content-Length"),
    (b"Content-Length: 2000\r\n\r\n", "without a valid Content-Length"),  # over the bound
    (b"x" * 300, "a malformed header"),  # no end of the headers within their bound
    (b"X-Pad: " + b"y" * 300 + b"\r\n\r\n{}", "a malformed header"),  # an end past it
])
async def test_a_frame_that_cannot_be_read_ends_the_connection_in_one_line(head, words):
    """A bad ``Content-Length`` leaves nothing to resynchronise on: the connection ends and
    what waits fails, saying why in one line."""
    ours, theirs = trio.testing.memory_stream_pair()
    conn = Connection(ours, ours, ContentLength(limit=1000, header_limit=200),
                      peer="the language server")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_gone_while_asking, conn, words)
        await theirs.receive_some(65536)  # the request is out
        await theirs.send_all(head)
        with trio.fail_after(10):
            gone = await conn.serve()
    assert str(gone).startswith("the language server sent ") and words in str(gone)
    assert "\n" not in str(gone)


async def _gone_while_asking(conn: Connection, words: str) -> None:
    with pytest.raises(PeerGone, match=words):
        await conn.request("initialize")


async def test_messages_stay_whole_and_in_order_on_a_full_pipe(framing):
    """A message goes straight to a pipe when no other write is in progress; one the pipe
    takes only in part finishes first, holding the writers' lock. Several writers with
    messages larger than the pipe's buffer (64 KiB) and a slow reader: every message read back
    is whole JSON, and each writer's come in the order it wrote them."""
    read_fd, write_fd = os.pipe()
    reader = trio.lowlevel.FdStream(read_fd)
    conn = Connection(trio.lowlevel.FdStream(write_fd), reader, framing())
    per_writer, writers = 12, "abc"
    pad = "é" * 30_000  # 60 KB of UTF-8 per message: most writes fill the pipe

    async def write(tag: str) -> None:
        for i in range(per_writer):
            await conn.notify("session/update", {"tag": tag, "i": i, "pad": pad})

    split = framing()
    messages: list[dict] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for tag in writers:
                nursery.start_soon(write, tag)
            while len(messages) < per_writer * len(writers):
                chunk = await reader.receive_some(4096)  # slower than the writers
                messages += [json.loads(body) for body in split.split(chunk)]
    for tag in writers:
        mine = [m["params"] for m in messages if m["params"]["tag"] == tag]
        assert [m["i"] for m in mine] == list(range(per_writer))
        assert all(m["pad"] == pad for m in mine)
