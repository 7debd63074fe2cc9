"""The semantic index as a supervised actor under ``/services``.

``IndexService`` owns one project's ``IndexStore`` and embedder. Building runs as long-lived
work of the actor (in a worker thread: embedding is CPU work), so asks keep being answered
while it runs: ``Build`` starts a refresh (or joins the running one) and returns a
``BuildHandle`` to await; ``Search`` and ``Status`` answer at once. Progress goes to the
``report`` it was given, with the service's path: one ``Progress`` per file (re)embedded, one
per ``PROGRESS_EVERY`` files looked at, and a last one with ``done=True``. The index sits
below ``core`` and knows no events: the runtime (and ``nyz index build``) turn each report
into an ``index_progress`` event (``nyzhi.core.runtime.assembly.index_progress_to``).

The embedder (seconds to load the ONNX model) is made on first need, in a worker thread.
Stopping the actor asks the build to stop after the current file; what was committed stays.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

import actors
from nyzhi import records

if TYPE_CHECKING:
    import sqlite3

    from nyzhi.index.indexer import BuildReport, Progress
    from nyzhi.index.search import Hit
    from nyzhi.index.store import IndexStore

# The store (SQLite), the indexer and the search are imported where a build, a search or a
# status first needs them: a runtime starts this service at every start-up, and most runs
# never touch the index (~5 ms of imports off the way to the first request).

SERVICE_NAME = "index"
SERVICE_PATH = f"/services/{SERVICE_NAME}"
PROGRESS_EVERY = 100
Report = Callable[["Progress", str], Awaitable[None]]  # (progress, the service's path)


@records.frozen
class IndexSettings:
    root: Path
    directory: Path
    make_embedder: Callable[[], Any]
    exclude: tuple[str, ...] = ()
    refresh_on_start: bool = False  # bring an existing index up to date when the actor starts


@records.frozen
class Build:
    """Ask: start a build (or join the running one); answers a ``BuildHandle``."""


@records.frozen
class Search:
    query: str
    k: int = 5
    per_file: int = 2
    mode: str = "hybrid"


@records.frozen
class Status:
    """Ask: an ``IndexStatus``."""


@records.frozen
class IndexStatus:
    exists: bool
    files: int
    chunks: int
    building: bool
    model_id: str
    directory: str
    built_at: int | None


_FROM_STORE = ("CorruptIndex", "NoIndex")  # defined in store; importable from here, as before


def __getattr__(name: str) -> Any:
    if name in _FROM_STORE:
        from nyzhi.index import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class BuildHandle:
    def __init__(self) -> None:
        self._done = trio.Event()
        self.report: BuildReport | None = None
        self.error: BaseException | None = None

    async def wait(self) -> BuildReport:
        """The build's report, or the exception that ended it."""
        await self._done.wait()
        if self.error is not None:
            raise self.error
        assert self.report is not None
        return self.report


def index_exists(directory: Path) -> bool:
    return (directory / "index.db").is_file()


class IndexService(actors.Actor):
    crash_on_ask_error = False  # a failed search or a missing model is the asker's problem

    def __init__(self, settings: IndexSettings, report: Report | None = None) -> None:
        self._settings = settings
        self._report = report
        self._store: IndexStore | None = None
        self._embedder: Any = None
        self._building: BuildHandle | None = None
        self._stop = threading.Event()

    async def started(self) -> None:
        if self._settings.refresh_on_start and index_exists(self._settings.directory):
            self._start_build()

    async def stopping(self) -> None:
        self._stop.set()

    async def receive(self, message: Any) -> Any:
        if isinstance(message, Build):
            return self._start_build()
        if isinstance(message, Search):
            return await self._search(message)
        if isinstance(message, Status):
            return self._status()
        return await super().receive(message)

    # ---- building --------------------------------------------------------------------------

    def _start_build(self) -> BuildHandle:
        if self._building is None:
            self._building = BuildHandle()
            self.context.start_soon(self._build, self._building, name=f"{SERVICE_PATH}:build")
        return self._building

    async def _build(self, handle: BuildHandle) -> None:
        from nyzhi.index.indexer import Progress
        from nyzhi.index.store import is_corruption, remove_index_files

        try:
            try:
                report = await self._build_once()
            except Exception as exc:
                if not is_corruption(exc):
                    raise
                # a damaged index.db: what it held is lost anyway, so start over
                self._drop_store()
                remove_index_files(self._settings.directory)
                report = await self._build_once()
                report.note = (f"the index was corrupt ({getattr(exc, 'reason', exc)}); "
                               "deleted it and built it again")
            handle.report = report
            if self._report is not None:
                r = report
                await self._report(Progress(r.files, r.files, r.embedded, r.chunks, "", r.seconds,
                                            done=True, summary=r.summary()), self.context.path)
        except Exception as exc:
            handle.error = exc
        finally:
            self._building = None
            handle._done.set()

    async def _build_once(self) -> BuildReport:
        """One build over the current store (opened here: a damaged one raises)."""
        from nyzhi.index.indexer import build_index

        embedder = await self._get_embedder()
        store = self._get_store()
        token = trio.lowlevel.current_trio_token()
        report = self._report
        path = self.context.path

        last = [0]

        def progress(p: Progress) -> None:
            # One report per embedded file, one per PROGRESS_EVERY files looked at.
            quiet = p.embedded == last[0] and p.files_done % PROGRESS_EVERY
            last[0] = p.embedded
            if report is not None and (not quiet or p.files_done == p.files_total):
                trio.from_thread.run(report, p, path, trio_token=token)

        # Abandoned on cancel (the actor stopping): the thread sees ``_stop`` after the
        # file it is on, and every commit is whole, so nothing waits for the model.
        return await trio.to_thread.run_sync(
            lambda: build_index(store, embedder, self._settings.root,
                                exclude=self._settings.exclude, on_progress=progress,
                                should_stop=self._stop.is_set),
            abandon_on_cancel=True,
        )

    # ---- reading ---------------------------------------------------------------------------

    async def _search(self, msg: Search) -> list[Hit]:
        import sqlite3

        try:
            return await self._search_store(msg)
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None

    async def _search_store(self, msg: Search) -> list[Hit]:
        from nyzhi.index.search import search
        from nyzhi.index.store import NoIndex

        if not index_exists(self._settings.directory):
            raise NoIndex("this project has no semantic index yet: run `nyz index build`")
        store = self._get_store()
        if not store.counts()[1] and self._building is None:
            raise NoIndex("the semantic index is empty: run `nyz index build`")
        embedder = None if msg.mode == "keyword" else await self._get_embedder()
        built_with = store.get_meta("model_id")
        if embedder is not None and built_with and built_with != embedder.model_id:
            raise NoIndex(f"the index was built with {built_with} but [index] embedding now "
                          f"gives {embedder.model_id}: run `nyz index build` to rebuild it")
        return await trio.to_thread.run_sync(
            lambda: search(store, embedder, msg.query, k=msg.k, per_file=msg.per_file,
                           mode=msg.mode),
            abandon_on_cancel=True,
        )

    def _status(self) -> IndexStatus:
        import sqlite3

        try:
            return self._status_store()
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None

    def _corrupt(self, exc: sqlite3.DatabaseError) -> BaseException:
        """A SQLite error while reading: a damaged file is a ``CorruptIndex`` (the store is
        dropped, so ``Build`` starts over); anything else is raised as it is."""
        from nyzhi.index.store import CorruptIndex, is_corruption

        if not is_corruption(exc):
            return exc
        self._drop_store()
        return CorruptIndex(self._settings.directory, exc)

    def _status_store(self) -> IndexStatus:
        d = self._settings.directory
        if not index_exists(d):
            return IndexStatus(False, 0, 0, self._building is not None, "", str(d), None)
        store = self._get_store()
        files, chunks = store.counts()
        built = store.get_meta("built_at")
        return IndexStatus(True, files, chunks, self._building is not None,
                           store.get_meta("model_id") or "", str(d),
                           int(built) if built else None)

    # ---- resources -------------------------------------------------------------------------

    def _get_store(self) -> IndexStore:
        from nyzhi.index.store import IndexStore

        if self._store is None:
            self._store = IndexStore(self._settings.directory)
        return self._store

    def _drop_store(self) -> None:
        import sqlite3

        store, self._store = self._store, None
        if store is not None:
            try:
                store.close()
            except sqlite3.Error:
                pass  # a damaged database may fail to close cleanly too: it is being dropped

    async def _get_embedder(self) -> Any:
        if self._embedder is None:
            self._embedder = await trio.to_thread.run_sync(self._settings.make_embedder)
        return self._embedder


async def start_index_service(services: actors.ActorRef, settings: IndexSettings,
                              report: Report | None = None) -> actors.ActorRef:
    """Spawn the service under the ``/services`` supervisor ``services`` (``PERMANENT``)."""
    return await services.ask(
        actors.StartChild(
            actors.ChildSpec(IndexService, (settings, report), name=SERVICE_NAME,
                             restart=actors.Restart.PERMANENT)
        )
    )


def settings_from_config(config: Any, workspace_root: Path, *, refresh_on_start: bool = False,
                         env: Any = None) -> IndexSettings:
    from nyzhi.index.embed import embedder_from_config
    from nyzhi.index.paths import index_dir

    return IndexSettings(
        root=Path(workspace_root),
        directory=index_dir(workspace_root),
        make_embedder=lambda: embedder_from_config(config, env),
        exclude=tuple(config.index.exclude),
        refresh_on_start=refresh_on_start,
    )
