"""The runtime's browser: one headless Chromium under a supervised actor, shared by every agent.

``BrowserPool`` is what the tools see (``ToolContext.browser``). It starts nothing until a
browser tool is first called: then it asks ``/services`` to start a ``BrowserProcess`` actor,
which launches Chromium with a fresh profile in nyz's state directory (mode 0700, masked from
the sandbox: no sandboxed command can read it or reach the browser's sockets there), speaks
DevTools with it over a pipe (no port: ``nyzhi.tools.cdp``), puts it under guard
(``nyzhi.tools.browser_guard``: every request, target and download checked) and publishes the
connection back to the pool. Each agent gets its own tab.

The actor is ``TEMPORARY``: when the browser dies (a crash, someone's ``kill``) the actor ends
and every call in flight fails at once with ``BrowserGone``; the *next* browser call starts a
new one. A restart loop would relaunch a browser nobody asked for, and one that cannot start
would exhaust ``/services``. Stopping the actor (the runtime's stop included, since it stops the
actor system) kills the browser's whole process group and removes the profile: no orphan.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import trio

import actors
from nyzhi import records

# Chromium's singleton socket is TMPDIR/.org.chromium.Chromium.XXXXXX/SingletonSocket: ~45
# bytes past TMPDIR, and a Unix socket's path has room for 107.
SOCKET_DIR_MAX = 58
PROFILE_PARENT: str | None = None  # where profiles are made (None: the state dir's browser/)


@records.frozen
class BrowserSettings:
    """``[browser]`` as the pool uses it, and the environment the browser is started with."""

    executable: str | None = None
    headless: bool = True
    env: Mapping[str, str] = attrs.field(factory=dict)
    width: int = 1280
    height: int = 800
    net: Any = None  # nyzhi.tools.netguard.NetPolicy for the pages' requests (None: strict)
    redactor: Any = None  # the run's, for the strict default (secrets in URLs)


def profile_parent(env: Mapping[str, str] | None = None) -> Path:
    """Where profiles are made: ``browser/`` in nyz's state directory (0700), which the
    sandbox masks, unlike the temporary directory every sandboxed command shares."""
    if PROFILE_PARENT:
        return Path(PROFILE_PARENT)
    from nyzhi.config import paths

    parent = paths.state_dir(env) / "browser"
    parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    parent.chmod(0o700)
    return parent


def _fresh_profile(env: Mapping[str, str]) -> tuple[Path, dict[str, str]]:
    """A new empty profile directory (0700), and the browser's environment: its config, cache
    and temporary files (its singleton socket among them) inside the profile, so removing it
    leaves nothing behind and nothing of it is in the shared temporary directory. When the
    state directory's path is too long for a socket's, the temporary files go to a private
    0700 directory of the system's instead (SOCKET_DIR_MAX)."""
    base = str(profile_parent(env))
    profile = Path(tempfile.mkdtemp(prefix="nyz-browser-", dir=base))
    env = {**env, "XDG_CONFIG_HOME": str(profile / "config"),
           "XDG_CACHE_HOME": str(profile / "cache")}
    if len(str(profile)) < SOCKET_DIR_MAX:
        (profile / "t").mkdir(mode=0o700)
        env["TMPDIR"] = str(profile / "t")
    else:
        tmp = tempfile.gettempdir()
        short = Path(tempfile.mkdtemp(prefix="nyzb-", dir=tmp if len(tmp) < 30 else "/tmp"))
        (profile / "t").symlink_to(short)  # removed with the profile (shutil follows none)
        env["TMPDIR"] = str(short)
    return profile, env


class BrowserProcess(actors.Actor):
    """One Chromium and its DevTools connection, for the life of this incarnation."""

    def __init__(self, pool: BrowserPool) -> None:
        self.pool = pool
        self.launched: Any = None
        self.profile: Path | None = None
        self._stopping = False

    async def started(self) -> None:
        self.context.start_soon(self._run, name=f"{self.context.path}:chromium")

    async def _run(self) -> None:
        from nyzhi.tools import cdp
        from nyzhi.tools.browser_guard import BrowserGuard
        from nyzhi.tools.browser_proxy import GuardProxy
        from nyzhi.tools.netguard import NetPolicy

        settings = self.pool.settings
        policy = settings.net or NetPolicy(redactor=settings.redactor)
        try:
            async with trio.open_nursery() as nursery:
                # workspace pages come from here, never from file:// (nyzhi.tools.workspace_http)
                files_port = await _serve(nursery, self.pool.files.serve)
                self.pool.files.base = f"http://127.0.0.1:{files_port}"
                notes: list[str] = []
                proxy = GuardProxy(policy, files_port, notes.append)
                proxy_port = await _serve(nursery, proxy.serve)
                try:
                    exe = cdp.find_browser(settings.executable, settings.env.get("PATH"))
                    self.profile, env = _fresh_profile(settings.env)
                    self.launched = await cdp.launch(
                        cdp.chromium_args(exe, self.profile, headless=settings.headless,
                                          width=settings.width, height=settings.height,
                                          proxy=f"socks5://127.0.0.1:{proxy_port}"), env)
                except (cdp.BrowserError, OSError) as exc:
                    self.pool._failed(exc if isinstance(exc, cdp.BrowserError)
                                      else cdp.BrowserUnavailable(f"cannot make a profile: {exc}"))
                    self.context.stop()
                    nursery.cancel_scope.cancel()
                    return
                self.pool.pid = self.launched.process.pid
                nursery.start_soon(cdp.drain, self.launched)
                conn = cdp.CdpConnection(self.launched.pipe)
                nursery.start_soon(conn.read)
                guard = BrowserGuard(conn, policy, files_port)
                proxy.note = guard._note
                await guard.start(nursery)  # every rule in force before the first page
                self.pool._connected(conn, guard)
                await conn.closed.wait()
                nursery.cancel_scope.cancel()
        except Exception as exc:  # the pipe failed: whoever waits must hear of it
            self.pool._failed(cdp.BrowserUnavailable(f"cannot reach the browser: {exc}"))
            raise
        finally:
            self._cleanup()
            if self.launched is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(5):
                    await self.launched.process.wait()  # reaped: no zombie left behind
                    await _group_gone(self.launched.process.pid)
                    await self.launched.pipe.aclose()
        if not self._stopping:
            raise cdp.BrowserGone("the browser exited")  # reported; TEMPORARY: not restarted

    def _cleanup(self) -> None:
        from nyzhi.tools.cdp import kill_group

        if self.launched is not None:
            kill_group(self.launched.process)
        if self.profile is not None:
            _remove_profile(self.profile)

    async def stopping(self) -> None:
        self._stopping = True
        from nyzhi.tools.cdp import BrowserGone

        self.pool._failed_if_waiting(BrowserGone("the browser was stopped while starting"))
        self._cleanup()
        if self.launched is not None:
            with trio.move_on_after(5), trio.CancelScope(shield=True):
                await self.launched.process.wait()
                await _group_gone(self.launched.process.pid)
            # Chromium's helpers may have left files in the profile while it died
            if self.profile is not None:
                _remove_profile(self.profile)


def _remove_profile(profile: Path) -> None:
    """The profile and, when its temporary files were elsewhere, that directory too."""
    tmp = profile / "t"
    if tmp.is_symlink():
        shutil.rmtree(os.path.realpath(tmp), ignore_errors=True)
    shutil.rmtree(profile, ignore_errors=True)


async def _serve(nursery: trio.Nursery, handler: Any) -> int:
    """Serve ``handler`` on 127.0.0.1 at a port the kernel picks, until ``nursery`` ends."""
    listeners = await nursery.start(functools.partial(trio.serve_tcp, handler, 0,
                                                      host="127.0.0.1"))
    return listeners[0].socket.getsockname()[1]


async def _group_gone(pgid: int) -> None:
    """Until every process of the browser's group has exited. Its helpers (zygotes, renderers,
    the GPU and network processes) were killed with it, but a killed process ends only once the
    kernel runs it to its end: on a busy machine that was still under way when nyz exited (its
    caller bounds the wait)."""
    from nyzhi.config.procgroup import signal_group
    from nyzhi.tools.executors.process import wait_group_empty

    signal_group(pgid)  # again: harmless to the dying, final to any straggler
    await wait_group_empty(pgid)


class BrowserPool:
    """The runtime's browser, started on first use; tabs by agent path."""

    def __init__(self, services: Any, settings: BrowserSettings) -> None:
        self._services = services  # a callable returning the supervisor to start under
        self.settings = settings
        self._lock = trio.Lock()
        self._conn: Any = None
        self._ref: actors.ActorRef | None = None
        self._ready: trio.Event | None = None
        self._error: Exception | None = None
        self._pages: dict[str, Any] = {}
        self._launches = 0
        self.pid: int | None = None  # the browser's pid while one runs (tests, benchmarks)
        self.guard: Any = None  # the running browser's BrowserGuard
        from nyzhi.tools.workspace_http import WorkspaceFiles

        self.files = WorkspaceFiles()  # served by the running browser's actor

    def _connected(self, conn: Any, guard: Any) -> None:
        self._conn, self._error, self.guard = conn, None, guard
        if self._ready is not None:
            self._ready.set()

    def _failed(self, exc: Exception) -> None:
        self._conn, self._error = None, exc
        if self._ready is not None:
            self._ready.set()

    def _failed_if_waiting(self, exc: Exception) -> None:
        if self._ready is not None and not self._ready.is_set():
            self._failed(exc)

    @property
    def running(self) -> bool:
        return self._conn is not None and not self._conn.closed.is_set()

    async def connection(self) -> Any:
        """The live DevTools connection, starting a browser if none runs."""
        from nyzhi.tools import cdp

        async with self._lock:
            if self.running:
                return self._conn
            if self._ref is not None:
                await self._ref.stop()  # the dead one's profile is removed before a new one
            self._launches += 1
            self._pages.clear()
            self._ready, self._conn, self._error = trio.Event(), None, None
            spec = actors.ChildSpec(BrowserProcess, (self,), name=f"browser-{self._launches}",
                                    restart=actors.Restart.TEMPORARY, grace=10.0)
            self._ref = await self._services().ask(actors.StartChild(spec))
            with trio.move_on_after(cdp.START_TIMEOUT + 10):
                await self._ready.wait()
            if self._conn is None:
                raise self._error or cdp.BrowserUnavailable("the browser did not start in time")
            return self._conn  # under guard: no downloads, every request and target checked

    async def page(self, owner: str) -> Any:
        """``owner``'s tab (an agent path), opened on first use."""
        conn = await self.connection()
        page = self._pages.get(owner)
        if page is None or page.conn is not conn:
            page = await conn.new_page(self.settings.width, self.settings.height)
            self._pages[owner] = page
        return page

    async def aclose(self) -> None:
        """Stop the browser (the actor kills it and removes its profile)."""
        if self._ref is not None:
            await self._ref.stop()
            self._ref = None
        self._conn = None


def browser_pool(system: actors.ActorSystem, config: Any, env: Mapping[str, str] | None,
                 policy: Any = None, net: Any = None, redactor: Any = None) -> BrowserPool:
    """The runtime's pool for ``[browser]``; the browser starts only when a tool needs it.
    Its environment is any tool process's (``child_env`` of ``env``, None: ours): no keys or
    tokens. ``net``: what its pages may reach (the run's ``NetPolicy``)."""
    from nyzhi.core.runtime.assembly import services_supervisor
    from nyzhi.tools.env_policy import child_env

    browser = config.browser
    return BrowserPool(
        lambda: services_supervisor(system),
        BrowserSettings(executable=browser.executable or browser.executable_path,
                        headless=browser.headless, env=child_env(policy, parent=env),
                        net=net, redactor=redactor),
    )
