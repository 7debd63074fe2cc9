"""The stdio transport to an MCP server, over a child started the one way (``nyzhi.spawn``).

The SDK's own ``stdio_client`` starts the server through ``anyio.open_process``, which on trio
forks from a short-lived worker thread: there is no way to make such a child die with nyz, and
an MCP server killed nyz's way (SIGKILL) was left running. This transport gives the session the
same two streams (``SessionMessage`` items in, ``SessionMessage`` out; a line that is not
JSON-RPC arrives as the exception value, as the SDK does) over ``open_bound_process``, and
shuts the server down as the specification says: stdin closed, a grace, SIGTERM, SIGKILL.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import AsyncIterator
from typing import IO, Any

import trio

from nyzhi.config.procgroup import signal_group
from nyzhi.spawn import BoundProcess, open_bound_process

# A server line longer than this is dropped with an error (every input bounded).
MAX_LINE = 32 * 1024 * 1024
STOP_GRACE_S = 2.0

_PIPE_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


@contextlib.asynccontextmanager
async def stdio_transport(server: Any, errlog: IO[str]) -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` for ``mcp.ClientSession`` to the stdio ``server``
    (an ``McpStdioServer``); its stderr goes to ``errlog``."""
    import anyio
    from mcp.client.stdio import get_default_environment

    proc = await open_bound_process(
        [server.command, *server.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=errlog, env=get_default_environment() | dict(server.env),
        cwd=server.cwd, tree=True,  # npx and the like: the whole tree dies with nyz
    )
    to_session, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, from_session = anyio.create_memory_object_stream[Any](0)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_read, proc, to_session)
            nursery.start_soon(_write, proc, from_session, to_session)
            try:
                yield read_stream, write_stream
            finally:
                with trio.CancelScope(shield=True):
                    await _stop(proc)
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            if proc.returncode is None:
                signal_group(proc.pid, signal.SIGKILL)
                await proc.wait()
            for stream in (proc.stdin, proc.stdout, read_stream, write_stream):
                if stream is not None:
                    await stream.aclose()


def _parse(line: bytes) -> Any:
    from mcp import types
    from mcp.shared.message import SessionMessage

    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _read(proc: BoundProcess, to_session: Any) -> None:
    import anyio

    assert proc.stdout is not None
    buf = b""
    async with to_session:
        try:
            while chunk := await proc.stdout.receive_some(65536):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                if len(buf) > MAX_LINE:
                    buf = b""
                    await to_session.send(ValueError(f"an MCP server line over {MAX_LINE} bytes"))
                for line in lines:
                    if line.strip():
                        await to_session.send(_parse(line))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, *_PIPE_ERRORS):
            return  # the session or the pipe is gone


async def _write(proc: BoundProcess, from_session: Any, to_session: Any) -> None:
    import anyio

    assert proc.stdin is not None
    try:
        async with from_session:
            async for message in from_session:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await proc.stdin.send_all(data.encode() + b"\n")
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, *_PIPE_ERRORS):
        await to_session.aclose()  # the session sees the end, not a request hanging forever


async def _stop(proc: BoundProcess) -> None:
    """stdin closed (the server's cue), then SIGTERM and SIGKILL to its group, each after a grace."""
    if proc.stdin is not None:
        with contextlib.suppress(*_PIPE_ERRORS):
            await proc.stdin.aclose()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with trio.move_on_after(STOP_GRACE_S):
            await proc.wait()
        if proc.returncode is not None:
            break
        signal_group(proc.pid, sig)
    await proc.wait()
    signal_group(proc.pid, signal.SIGKILL)  # anything the server left in its group
