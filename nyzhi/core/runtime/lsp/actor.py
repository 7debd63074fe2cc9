"""The actors of the language servers: ``/lsp`` and, per (server, project root),
``/lsp/NAME-N`` holding one connection actor ``conn``.

As in the MCP pool, ``/lsp`` and each server's own small supervisor are
``nyzhi.core.runtime.server_supervision``'s, so one server crashing past its restart intensity is
marked failed and the others go on. The
connection actor starts the process, runs the JSON-RPC reader, initializes the server and
publishes its client through the server's ``Link``; it crashes when the process exits, and
its supervisor restarts it after a backoff. Requests do not go through its mailbox: callers
use the published client from their own tasks, concurrently.

A server nobody used for ``[lsp] idle_timeout`` seconds is shut down politely and its actor
stops normally (transient: not restarted); the pool starts a fresh one on the next use.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import subprocess
from typing import Any

import trio

import actors
from nyzhi.core.runtime import server_supervision
from nyzhi.core.runtime.server_supervision import Intensity, leaf_error
from nyzhi.spawn import BoundProcess, open_bound_process
from nyzhi.tools.sandbox import SandboxError


class ServerExited(Exception):
    """The language server's process ended or stopped answering."""


class LspConnection(actors.Actor):
    crash_on_ask_error = False

    def __init__(self, link: Any, pool: Any) -> None:
        self.link = link
        self.pool = pool

    async def started(self) -> None:
        self.link.mark_starting(self.context.restarts)
        self.context.start_soon(self._run, name=f"lsp {self.link.key}")

    async def _run(self) -> None:
        link, pool = self.link, self.pool
        # lsprotocol and its converter take ~0.2 s to import: off the event loop.
        await trio.to_thread.run_sync(importlib.import_module, "nyzhi.core.runtime.lsp.client")
        from nyzhi.core.runtime.lsp.client import LspClient

        client = LspClient(link.choice, link.root, pool.config)
        link.log_path.parent.mkdir(parents=True, exist_ok=True)
        errlog = await trio.to_thread.run_sync(open, link.log_path, "ab")
        # the stand-ins for missing protected paths stay while the server runs
        standins = pool.standins(link.root)
        await trio.to_thread.run_sync(standins.__enter__)
        with errlog, standins:
            try:
                argv, confined = pool.command(link.choice.argv, link.root)
                standins.note(argv)
                proc = await open_bound_process(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog.fileno(),
                    cwd=str(link.root), env=pool.child_env(),
                    # confined: bwrap's PID namespace takes the whole tree; else the guard does
                    start_new_session=True, tree=not confined,
                )
            except (OSError, SandboxError) as exc:  # restarting cannot fix these
                link.mark_failed(f"cannot start {' '.join(link.choice.argv)!r}: {exc}")
                self.context.stop()
                return
            try:
                idle = await self._serve(client, proc, confined)
            except BaseException as exc:
                error = leaf_error(exc)
                if isinstance(error, trio.Cancelled | KeyboardInterrupt):
                    raise
                raise ServerExited(f"language server {link.choice.name} ({link.root}) "
                                   f"stopped: {error}{link.stderr_hint()}") from None
            finally:
                with trio.CancelScope(shield=True):
                    await _kill(proc)
        if idle:
            link.mark_stopped(f"stopped after {pool.config.idle_timeout:g} s unused")
            self.context.stop()

    async def _serve(self, client: Any, proc: BoundProcess, confined: bool) -> bool:
        """Run the server until it exits (raises) or is idle (True, after shutting it down)."""
        link, pool = self.link, self.pool
        assert proc.stdin is not None and proc.stdout is not None
        client.connect(proc.stdin, proc.stdout)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.read)
            try:
                # In the sandbox's own pid namespace our pid means nothing (a server that
                # watches its parent would exit at once): it ends with bwrap instead.
                await client.initialize(None if confined else os.getpid(),
                                        pool.config.startup_timeout)
            except trio.TooSlowError:
                raise ServerExited(f"did not initialize within "
                                   f"{pool.config.startup_timeout:g} s") from None
            link.mark_running(client, proc.pid)
            await link.wait_idle(pool.config.idle_timeout)
            link.mark_stopping()
            await client.shutdown()
            nursery.cancel_scope.cancel()
        return True

    async def stopping(self) -> None:
        self.link.mark_down()


async def _kill(proc: BoundProcess) -> None:
    """End the server and everything it started (tsserver, ...): its process group."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with trio.move_on_after(5):
        await proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(Exception):
                await stream.aclose()


def server_spec(link: Any, pool: Any, intensity: Intensity) -> actors.ChildSpec:
    return server_supervision.server_spec(LspConnection, link.key, (link, pool), intensity)
