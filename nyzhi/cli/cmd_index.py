"""``nyz index build|status|search QUERY|clear``: the project's semantic index.

``build`` runs the same ``IndexService`` actor the runtime runs under ``/services`` and renders
its ``index_progress`` events: a progress bar with an ETA on a terminal, plain lines otherwise
(one per embedded file, one per 100 files looked at, and the summary), so scripts and tests can
follow it. Imports stay inside the handlers so ``nyz --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="build, inspect, search or clear the semantic index",
                       description="The project's local semantic index (see docs/config.md, [index]).")
    actions = p.add_subparsers(dest="index_action", metavar="ACTION", required=True)
    a = actions.add_parser("build", help="index new and changed files (incremental, resumable)")
    a.set_defaults(handler=run_build)
    a = actions.add_parser("status", help="what is indexed and where")
    a.set_defaults(handler=run_status)
    a = actions.add_parser("search", help="hybrid search of the index")
    a.add_argument("query", nargs="+", help="what to look for")
    a.add_argument("-k", type=int, default=5, help="how many chunks (default 5)")
    a.add_argument("--mode", choices=("hybrid", "vector", "keyword"), default="hybrid")
    a.set_defaults(handler=run_search)
    a = actions.add_parser("clear", help="delete the project's index")
    a.set_defaults(handler=run_clear)


def _fail(exc: Exception | str) -> int:
    print(f"nyz: {exc}", file=sys.stderr)
    return 1


def _setup(args: argparse.Namespace) -> tuple[Any, Any]:
    from pathlib import Path

    from nyzhi.config.project_trust import load_trusted
    from nyzhi.index.service import settings_from_config

    loaded, _verdict = load_trusted(Path.cwd())  # an unapproved embedding host left out
    for warning in loaded.warnings:
        print(f"nyz: {warning}", file=sys.stderr)
    return loaded.config, settings_from_config(loaded.config, loaded.workspace.root)


async def _with_service(settings: Any, emit: Any, work: Any) -> Any:
    import actors
    from nyzhi.core.runtime.assembly import index_progress_to, services_supervisor
    from nyzhi.index.service import start_index_service

    report = index_progress_to(emit) if emit is not None else None
    async with actors.open_system(name="nyzhi") as system:
        ref = await start_index_service(services_supervisor(system), settings, report)
        try:
            return await work(ref)
        finally:
            await system.shutdown()


def _renderer(out: TextIO) -> Any:
    from nyzhi.core.protocol import events as ev
    from nyzhi.core.protocol.renderer import EventRenderer

    class BuildProgress(EventRenderer):
        """A bar with an ETA on a terminal; plain lines otherwise."""

        def __init__(self) -> None:
            self.tty = out.isatty()

        def on_index_progress(self, event: ev.IndexProgress) -> None:
            if event.done:
                if self.tty:
                    out.write("\r\033[K")
                out.write(f"indexed {event.summary}\n")
            elif self.tty:
                out.write("\r\033[K" + bar(event))
            else:
                out.write(f"{event.files_done}/{event.files_total} files, {event.embedded} "
                          f"embedded, {event.chunks} chunks: {event.path}\n")
            out.flush()

    return BuildProgress()


def bar(event: Any, width: int = 30) -> str:
    """``[#####.....] 12/40 files  33 chunks  ETA 1m05s  path``."""
    total = max(event.files_total, 1)
    done = event.files_done
    filled = int(width * done / total)
    eta = event.elapsed_s / done * (total - done) if done else 0.0
    minutes, seconds = divmod(int(eta + 0.5), 60)
    path = event.path if len(event.path) <= 40 else "…" + event.path[-39:]
    return (f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files  "
            f"{event.chunks} chunks  ETA {minutes}m{seconds:02d}s  {path}")


def run_build(args: argparse.Namespace) -> int:
    import trio

    from nyzhi.config.errors import ConfigError
    from nyzhi.index.embed import EmbeddingError

    try:
        _config, settings = _setup(args)
    except ConfigError as exc:
        return _fail(exc)
    renderer = _renderer(sys.stdout)

    async def emit(event: Any) -> None:
        renderer.render(event)

    async def work(ref: Any) -> Any:
        from nyzhi.index.service import Build

        handle = await ref.ask(Build())
        return await handle.wait()

    try:
        report = trio.run(_with_service, settings, emit, work)
    except EmbeddingError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        print("\nnyz: index build interrupted; `nyz index build` resumes it", file=sys.stderr)
        return 130
    if report.note:
        print(f"nyz: {report.note}", file=sys.stderr)
    return 0


def run_status(args: argparse.Namespace) -> int:
    import datetime

    import trio

    from nyzhi.config.errors import ConfigError
    from nyzhi.index.service import NoIndex, Status

    try:
        _config, settings = _setup(args)
    except ConfigError as exc:
        return _fail(exc)

    async def work(ref: Any) -> Any:
        return await ref.ask(Status())

    try:
        st = trio.run(_with_service, settings, None, work)
    except NoIndex as exc:  # a corrupt index
        return _fail(exc)
    print(f"project:   {settings.root}")
    print(f"index:     {st.directory}")
    if not st.exists:
        print("status:    not built (run `nyz index build`)")
        return 0
    when = (datetime.datetime.fromtimestamp(st.built_at).isoformat(timespec="seconds")
            if st.built_at else "never finished")
    print(f"files:     {st.files}")
    print(f"chunks:    {st.chunks}")
    print(f"model:     {st.model_id}")
    print(f"built:     {when}")
    return 0


def run_search(args: argparse.Namespace) -> int:
    import trio

    from nyzhi.config.errors import ConfigError
    from nyzhi.index.embed import EmbeddingError
    from nyzhi.index.search import format_hits
    from nyzhi.index.service import NoIndex, Search

    if args.k < 1:
        return _fail("-k must be at least 1")
    try:
        _config, settings = _setup(args)
    except ConfigError as exc:
        return _fail(exc)

    async def work(ref: Any) -> Any:
        return await ref.ask(Search(" ".join(args.query), k=args.k, mode=args.mode), timeout=300)

    try:
        hits = trio.run(_with_service, settings, None, work)
    except (NoIndex, EmbeddingError) as exc:
        return _fail(exc)
    print(format_hits(hits) if hits else "no matches")
    return 0


def run_clear(args: argparse.Namespace) -> int:
    import shutil

    from nyzhi.config.errors import ConfigError

    try:
        _config, settings = _setup(args)
    except ConfigError as exc:
        return _fail(exc)
    if settings.directory.exists():
        shutil.rmtree(settings.directory)
        print(f"removed {settings.directory}")
    else:
        print("no index to remove")
    return 0
