"""The actors of the MCP pool: ``/mcp`` and, per server, ``/mcp/NAME/conn``.

``/mcp`` and the per-server supervisors (``/mcp/NAME``) are ``nyzhi.core.runtime.server_supervision``'s,
shared with the language servers: a server that keeps crashing exhausts *its* supervisor, is
marked failed, and every other server goes on.

The connection actor owns the SDK client for its incarnation. It connects in a background
task (``started`` returns at once, so nothing waits for a slow server), publishes the
client through the server's ``ServerLink``, and crashes when the connection ends: the
supervisor restarts it after a backoff. Calls do not go through its mailbox: callers use
the published client from their own tasks, so calls to one server run concurrently and a
cancelled caller's cancellation reaches the SDK (which tells the server).
"""

from __future__ import annotations

import contextlib
import importlib
import math
from typing import Any

import trio

import actors
from nyzhi import records
from nyzhi.core.runtime import server_supervision
from nyzhi.core.runtime.server_supervision import Intensity as Intensity
from nyzhi.core.runtime.server_supervision import leaf_error


class ServerDropped(Exception):
    """The server's connection ended (its process exited or the peer went away)."""


@records.frozen
class Dropped:
    """Told to a connection actor when a call saw its connection fail."""

    client: Any


class ServerConnection(actors.Actor):
    crash_on_ask_error = False

    def __init__(self, link: Any, pool: Any) -> None:
        self.link = link
        self.pool = pool
        self.client: Any = None

    async def started(self) -> None:
        self.link.mark_starting(self.context.restarts)
        self.context.start_soon(self._run, name=f"mcp {self.link.name}")

    async def _run(self) -> None:
        link = self.link
        if not await self.pool.check_trust(link):
            self.context.stop()
            return
        closed = trio.Event()
        # Importing the SDK takes 0.6-1.2 s (more on a loaded machine): do it in a thread so
        # the event loop, and with it the first prompt, is not held up meanwhile.
        await trio.to_thread.run_sync(importlib.import_module, "nyzhi.core.runtime.mcp.client")
        from nyzhi.core.runtime.mcp.client import connect, list_all, route_sdk_logs

        route_sdk_logs(link.log_path.parent)

        # The deadline covers connecting only; the scope must still enclose the client's
        # whole life (its task groups may not outlive a cancel scope entered after them).
        deadline = trio.current_time() + self.pool.startup_timeout
        with trio.CancelScope(deadline=deadline) as scope:
            async with contextlib.AsyncExitStack() as stack:
                errlog = stack.enter_context(link.open_errlog())
                try:
                    client = await connect(stack, link.entry, errlog, closed,
                                           self.pool.elicitation_for(link.name),
                                           auth=self.pool.auth_for(link))
                    tools = await list_all(client.list_tools, "tools")
                except Exception as exc:
                    error = leaf_error(exc)
                    if type(error).__name__ in ("NeedsLogin", "OAuthRefused"):
                        # A restart cannot log in or make the metadata safe: one line, stop.
                        if type(error).__name__ == "NeedsLogin":
                            link.mark_needs_login(str(error))
                        else:
                            link.mark_failed(str(error))
                        await self.pool.server_failed(link)
                        self.context.stop()
                        return
                    if isinstance(error, FileNotFoundError | PermissionError):
                        # Restarting cannot fix a missing or non-executable command.
                        link.mark_failed(f"cannot start {link.entry.describe()!r}: {error}")
                        await self.pool.server_failed(link)
                        self.context.stop()
                        return
                    raise ServerDropped(
                        f"MCP server {link.name!r} could not connect: "
                        f"{type(error).__name__}: {error}{link.stderr_hint()}"
                    ) from exc
                scope.deadline = math.inf
                self.client = client
                self.pool.server_connected(link, client, tools)
                await closed.wait()
                self.client = None
                link.mark_dropped()
        if scope.cancelled_caught:
            raise ServerDropped(
                f"MCP server {link.name!r} did not finish connecting within "
                f"{self.pool.startup_timeout:g} s{link.stderr_hint()}"
            )
        raise ServerDropped(
            f"MCP server {link.name!r} closed its connection{link.stderr_hint()}"
        )

    async def receive(self, message: Any) -> Any:
        if isinstance(message, Dropped):
            if message.client is self.client and self.client is not None:
                raise ServerDropped(f"MCP server {self.link.name!r} stopped answering")
            return None
        return await super().receive(message)

    async def stopping(self) -> None:
        self.link.mark_down()


def server_spec(link: Any, pool: Any, intensity: Intensity) -> actors.ChildSpec:
    return server_supervision.server_spec(ServerConnection, link.name, (link, pool), intensity)
