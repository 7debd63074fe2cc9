"""The runtime's language servers: one per (server, project root), shared by every agent.

``LspPool`` owns ``/lsp`` (see ``actor.py``) and one ``Link`` per server it started. The
pool sits on the tool context (``ToolContext.lsp``), which every agent's context is derived
from, so five agents asking about one Python project talk to one pyright process.

Servers start on first use (a tool call, or an edit of a file of their language), restart
with backoff when they crash, and stop when unused for ``[lsp] idle_timeout``. Statuses:
``starting``, ``running``, ``stopping``, ``stopped`` (idle, or the runtime is closing),
``failed`` (with the reason).

After an edit (``before_edit`` / ``EditWatch.after``) the touched files are synced
(didChange, didSave) and the errors the server reports that it did not report before the edit
are rendered for the tool's result, waiting at most ``[lsp] diagnostics_wait`` seconds.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import Any

import trio

import actors
from nyzhi.config import paths as config_paths
from nyzhi.config.schema import LspConfig
from nyzhi.core.runtime.lsp.actor import server_spec
from nyzhi.core.runtime.lsp.servers import NoServer, ServerChoice, choose, language_of, project_root
from nyzhi.core.runtime.server_supervision import Intensity, PoolSupervisor, StatusLink, gave_up

NEW_ERRORS_SHOWN = 10
_KEY_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


class LspUnavailable(Exception):
    """The server for a file cannot answer now (failed, still starting, gone mid-request)."""


class Link(StatusLink):
    """One server's shared state: written by its connection actor, read by callers."""

    def __init__(self, key: str, choice: ServerChoice, root: Path, log_dir: Path) -> None:
        super().__init__(log_dir / f"{key}.log")
        self.key = key
        self.choice = choice
        self.root = root
        self.pid: int | None = None
        self.restarts = 0
        self.in_flight = 0
        self.last_used = trio.current_time()

    # -- written by the connection actor -----------------------------------------------------
    def mark_starting(self, restarts: int) -> None:
        self.restarts = restarts
        self.client = self.pid = None
        if self.status != "failed":
            self._set("starting", f"restart {restarts}" if restarts else "")

    def mark_running(self, client: Any, pid: int) -> None:
        self.client, self.pid = client, pid
        self._set("running")

    def mark_stopping(self) -> None:
        self._set("stopping", "idle")

    def mark_stopped(self, reason: str) -> None:
        self.client = self.pid = None
        self._set("stopped", reason)

    def mark_down(self) -> None:
        self.client = self.pid = None
        if self.status in ("running", "stopping"):
            self._set("starting", "restarting")

    def mark_failed(self, reason: str) -> None:
        self.client = self.pid = None
        self._set("failed", reason)

    async def wait_idle(self, idle_timeout: float) -> None:
        """Until nobody has used the server for ``idle_timeout`` seconds (0: forever)."""
        if idle_timeout <= 0:
            await trio.sleep_forever()
        while True:
            await trio.sleep_until(self.last_used + idle_timeout)
            if self.in_flight == 0 and trio.current_time() >= self.last_used + idle_timeout:
                return

    # -- read by callers ---------------------------------------------------------------------
    @contextlib.contextmanager
    def using(self) -> Any:
        self.in_flight += 1
        self.last_used = trio.current_time()
        try:
            yield
        finally:
            self.in_flight -= 1
            self.last_used = trio.current_time()

    async def running_client(self, wait: float) -> Any:
        with trio.move_on_after(wait):
            # a client whose process just died is "running" until its actor notices
            while self.status in ("starting", "stopping") or (
                    self.status == "running" and self.client.rpc.closed.is_set()):
                await self._changed.wait()
        if self.status == "running" and self.client is not None:
            return self.client
        name = f"language server {self.choice.name} ({self.root})"
        if self.status == "starting":
            raise LspUnavailable(f"{name} is still starting (waited {wait:g} s); try again "
                                 "shortly, or use grep meanwhile")
        why = f": {self.reason}" if self.reason else ""
        raise LspUnavailable(f"{name} is {self.status}{why}. Use grep meanwhile.")


class EditWatch:
    """Diagnostics around one edit: the errors known before it, checked after it."""

    def __init__(self, pool: LspPool, deadline: float) -> None:
        self.pool = pool
        self.deadline = deadline
        self.baseline: dict[Path, Counter[tuple[Any, ...]]] = {}
        self.links: dict[Path, Link] = {}

    async def after(self, paths: Iterable[Path]) -> str:
        """The new errors in ``paths`` (as written), rendered; "" if none (or no answer in
        time)."""
        found: dict[Path, list[Any]] = {}

        async def check(path: Path) -> None:
            link = self.links.get(path)
            if link is None:
                return
            remaining = self.deadline - trio.current_time()
            try:
                client = await link.running_client(max(remaining, 0))
                text = await trio.to_thread.run_sync(_read_text, path)
                with link.using():
                    if text is None:
                        return
                    # -1 (the text is what the server had): what it last said still stands
                    seq = await client.sync(path, text, save=True)
                    got = await client.wait_diagnostics(
                        path, seq, max(self.deadline - trio.current_time(), 0))
            except Exception:  # a server's trouble never fails the edit itself
                return
            if got:
                found[path] = new_errors(client.diagnostics_of(path) or [],
                                         self.baseline.get(path, Counter()))

        async with trio.open_nursery() as nursery:
            for path in dict.fromkeys(paths):
                nursery.start_soon(check, path)
        return self.pool.render_new_errors(found)


def _error_key(diag: Any) -> tuple[Any, ...]:
    return (diag.message, str(diag.code), diag.source)


def is_error(diag: Any) -> bool:
    return diag.severity is None or int(diag.severity) == 1


def new_errors(now: list[Any], before: Counter[tuple[Any, ...]]) -> list[Any]:
    """The errors in ``now`` beyond those in ``before`` (by message, code and source: lines
    move when code is edited above them)."""
    left = Counter(before)
    out = []
    for diag in now:
        if not is_error(diag):
            continue
        key = _error_key(diag)
        if left[key] > 0:
            left[key] -= 1
        else:
            out.append(diag)
    return out


async def sync_from_disk(client: Any, more: Iterable[Path] = ()) -> None:
    """Send the server what the files hold now: every document it has open (a command or an
    editor may have changed one since) and ``more``."""
    from nyzhi.core.runtime.lsp.text import path_of

    paths = list(dict.fromkeys([*(path_of(uri) for uri in client.docs), *more]))
    texts = await trio.to_thread.run_sync(
        lambda: [(_read_text(p), os.path.lexists(p)) for p in paths])
    for path, (text, exists) in zip(paths, texts, strict=True):
        if text is not None:
            await client.sync(path, text)
        elif not exists:
            await client.close(path)


def _read_text(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(8 * 1024 * 1024 + 1)
    except OSError:
        return None
    if len(data) > 8 * 1024 * 1024 or b"\0" in data[:8192]:
        return None  # too large or binary: not a document to send
    return data.decode("utf-8", "replace")


class LspPool:
    """The runtime's language servers. Create with ``LspPool.open`` inside an actor system."""

    def __init__(self, system: actors.ActorSystem, config: LspConfig, *, workspace: Path,
                 env: Mapping[str, str] | None = None, env_policy: Any = None,
                 sandbox: Any = None, intensity: Intensity | None = None) -> None:
        self.system = system
        self.config = config
        self.workspace = Path(os.path.realpath(workspace))
        self.env = os.environ if env is None else env
        self.env_policy = env_policy
        self.sandbox = sandbox
        self.intensity = intensity or Intensity()
        self.log_dir = config_paths.state_dir(env) / "lsp"
        self.links: dict[tuple[str, Path], Link] = {}
        self._by_key: dict[str, Link] = {}
        self._serial = itertools.count(1)
        self._sup: actors.ActorRef | None = None

    @classmethod
    async def open(cls, system: actors.ActorSystem, config: LspConfig, **kw: Any) -> LspPool:
        """Start ``/lsp``; servers start on first use."""
        pool = cls(system, config, **kw)
        pool._sup = system.spawn(PoolSupervisor, pool, "language server", name="lsp",
                                 restart=actors.Restart.PERMANENT)
        return pool

    def command(self, argv: Iterable[str], root: Path) -> tuple[list[str], bool]:
        """The command line that starts a server, confined by the session's sandbox as a
        ``bash`` command is (a server may run the project's code: rust-analyzer its build
        scripts, pyright a virtualenv's interpreter); and whether it is confined."""
        from nyzhi.tools.sandbox import SandboxPolicy

        if not isinstance(self.sandbox, SandboxPolicy):
            return list(argv), False
        wrapped = self.sandbox.wrap(list(argv), root)
        return wrapped.argv, wrapped.sandboxed

    def standins(self, root: Path) -> Any:
        """Held while a confined server runs (``SandboxPolicy.standins``)."""
        from nyzhi.tools.protected import Standins
        from nyzhi.tools.sandbox import SandboxPolicy

        if not isinstance(self.sandbox, SandboxPolicy):
            return Standins(())
        return self.sandbox.standins(root)

    def readable(self, path: Path) -> bool:
        """Whether nyz may read ``path`` for an answer (the sandbox refuses credential
        files, whatever a server names)."""
        check = getattr(self.sandbox, "check_read", None)
        if check is None:
            return True
        try:
            check(path)
        except Exception:
            return False
        return True

    def child_env(self) -> dict[str, str]:
        from nyzhi.tools.env_policy import child_env

        return child_env(self.env_policy, parent=self.env)

    # -- servers -----------------------------------------------------------------------------
    def choice_for(self, path: Path) -> ServerChoice:
        """The server for ``path``; ``NoServer`` saying why there is none."""
        if not self.config.enabled:
            raise NoServer("language servers are turned off ([lsp] enabled = false); use grep")
        language = language_of(path, self.config)
        if language is None:
            raise NoServer(f"no language server handles {path.suffix or path.name!r} files "
                           "(configure one under [lsp.NAME] with extensions); use grep")
        return choose(language, self.config, self.env)

    async def link_for(self, path: Path) -> Link:
        """The server for ``path``, started if it is not running (returns at once)."""
        choice = self.choice_for(path)
        root = project_root(path, choice.root_markers, self.workspace)
        link = self.links.get((choice.name, root))
        if link is not None and link.status not in ("stopped",):
            return link
        key = _KEY_CHARS.sub("_", f"{choice.name}-{next(self._serial)}")
        old = link
        link = self.links[(choice.name, root)] = self._by_key[key] = Link(
            key, choice, root, self.log_dir)
        assert self._sup is not None
        if old is not None:
            self._by_key.pop(old.key, None)
            with contextlib.suppress(actors.ActorError):
                await self._sup.ask(actors.StopChild(old.key))
        await self._sup.ask(actors.StartChild(server_spec(link, self, self.intensity)))
        return link

    @contextlib.asynccontextmanager
    async def session(self, path: Path) -> AsyncIterator[tuple[Any, Link]]:
        """The running client for ``path``'s server, its document synced with the disk, held in
        use (not stopped as idle) for the block."""
        link = await self.link_for(path)
        if link.status == "stopping":  # going idle just now: wait, and start a fresh one
            with contextlib.suppress(LspUnavailable):
                await link.running_client(self.config.startup_timeout)
            link = await self.link_for(path)
        with link.using():
            client = await link.running_client(self.config.startup_timeout)
            await sync_from_disk(client, {path})
            if client.version(path) is None:
                raise LspUnavailable(f"{path} cannot be read as a text document")
            yield client, link

    async def server_ended(self, key: str, outcome: actors.Outcome) -> None:
        link = self._by_key.get(key)
        reason = gave_up(outcome, self.intensity)
        if link is not None and reason is not None:
            link.mark_failed(reason)

    def statuses(self) -> list[dict[str, Any]]:
        return [{"name": link.choice.name, "root": str(link.root), "status": link.status,
                 "reason": link.reason, "pid": link.pid, "restarts": link.restarts}
                for link in self.links.values()]

    def running(self) -> list[Link]:
        return [link for link in self.links.values() if link.status == "running"]

    # -- diagnostics after edits -------------------------------------------------------------
    async def before_edit(self, paths: Iterable[Path]) -> EditWatch | None:
        """Record what the servers of ``paths`` report now, so ``after`` tells new errors
        from old; None when diagnostics after edits are off or no path has a server."""
        if not (self.config.enabled and self.config.diagnostics_after_edit):
            return None
        watch = EditWatch(self, trio.current_time() + self.config.diagnostics_wait)
        for path in paths:
            try:
                watch.links[path] = await self.link_for(path)
            except (NoServer, ValueError, actors.ActorError):
                continue
        if not watch.links:
            return None

        async def baseline(path: Path, link: Link) -> None:
            with contextlib.suppress(Exception):  # no baseline: every error counts as new
                remaining = max(watch.deadline - trio.current_time(), 0)
                client = await link.running_client(remaining)
                with link.using():
                    text = await trio.to_thread.run_sync(_read_text, path)
                    if text is not None:
                        seq = await client.sync(path, text)
                        if seq >= 0:  # newly opened or changed outside our tools
                            await client.wait_diagnostics(
                                path, seq, max(watch.deadline - trio.current_time(), 0))
                watch.baseline[path] = Counter(
                    _error_key(d) for d in client.diagnostics_of(path) or () if is_error(d))

        async with trio.open_nursery() as nursery:
            for path, link in watch.links.items():
                nursery.start_soon(baseline, path, link)
        return watch

    def render_new_errors(self, found: dict[Path, list[Any]]) -> str:
        from nyzhi.core.runtime.lsp.render import render_diagnostics

        flat = [(path, d) for path, diags in found.items() for d in diags]
        if not flat:
            return ""
        lines = render_diagnostics(flat[:NEW_ERRORS_SHOWN], self.workspace, self.readable)
        more = len(flat) - NEW_ERRORS_SHOWN
        n = len(flat)
        head = f"[lsp] {n} new error{'s' if n != 1 else ''} after this change:"
        tail = [f"… and {more} more (lsp_diagnostics shows them all)"] if more > 0 else []
        return "\n".join([head, *lines, *tail])


    # -- the tools' entry point --------------------------------------------------------------
    async def ask(self, op: str, *, path: Path | None = None, line: int | None = None,
                  column: int | None = None, symbol: str | None = None,
                  query: str | None = None, new_name: str | None = None) -> tuple[Any, bool]:
        """Run one ``lsp_*`` operation: (rendered text, or for ``rename`` the new text of
        each file; is_error). Every failure comes back as a sentence, never raised."""
        from nyzhi.core.runtime.lsp import ops

        try:
            if op == "symbols":
                return await ops.symbols_op(self, path, query), False
            if op == "diagnostics":
                return await ops.diagnostics_op(self, path), False
            assert path is not None
            return await ops.position_op(self, op, path, line, column, symbol, new_name), False
        except LspUnavailable as exc:
            return str(exc), True
        except actors.ActorError:
            return "the language servers are shutting down with the session", True
        except (NoServer, ops.OpError, ops.RpcError, trio.TooSlowError,
                OSError, UnicodeDecodeError) as exc:
            return ops.explain(exc, f"lsp_{op}"), True
