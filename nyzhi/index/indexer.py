"""Building and refreshing an index: incremental by content hash, resumable after a kill.

Files come from the same walker as the ``grep`` and ``glob`` tools (``walk_files``: .gitignore,
.ignore, hidden entries, ``node_modules``/``target``), plus ``[index] exclude`` globs. A file
whose size and mtime match the index is not even read; one whose bytes hash the same is only
re-stamped; only files whose content changed are chunked, and of their chunks only those whose
text changed are embedded (the others keep their stored vectors). Files that disappeared
leave the index. Binary files (a NUL byte in the first 8 KiB) and files over
``MAX_FILE_BYTES`` are skipped and counted.

Each changed file is committed on its own (``IndexStore.replace_file``), so a build killed
halfway resumes where it stopped: committed files match their hash and are skipped. The vector
graph is saved every ``SAVE_EVERY`` seconds and at the end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nyzhi import records
from nyzhi.index.chunking import chunk_file
from nyzhi.index.store import FileRecord, IndexStore, content_hash
from nyzhi.tools.ignore import walk_files

MAX_FILE_BYTES = 1_000_000
SAVE_EVERY = 20.0
SKIP_DIRS = frozenset({"node_modules", "target"})  # as grep skips them


@records.frozen
class Progress:
    """Where a build is: ``files_done`` of ``files_total`` looked at, ``embedded`` of them
    (re)embedded so far, ``chunks`` embedded so far; ``done`` on the last one of a build, with
    the build's ``summary``."""

    files_done: int
    files_total: int
    embedded: int
    chunks: int
    path: str
    elapsed: float
    done: bool = False
    summary: str = ""


@records.define
class BuildReport:
    files: int = 0
    embedded: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0  # chunks embedded
    reused: int = 0  # chunks of changed files whose text, hence vector, was unchanged
    skipped_binary: int = 0
    skipped_large: int = 0
    seconds: float = 0.0
    note: str = ""  # what the build had to do first, said once (a corrupt index deleted)

    def summary(self) -> str:
        return (
            f"{self.files} files: {self.embedded} embedded ({self.chunks} chunks"
            f"{f', {self.reused} reused' if self.reused else ''}), "
            f"{self.unchanged} unchanged, {self.removed} removed; skipped "
            f"{self.skipped_binary} binary and {self.skipped_large} too large; "
            f"{self.seconds:.1f} s"
        )


def index_paths(root: Path, exclude: Sequence[str] = ()) -> list[str]:
    """Paths relative to ``root`` of the files an index covers, sorted."""
    cut = len(str(root).rstrip("/")) + 1
    return [p[cut:] for p in walk_files(root, skip_dirs=SKIP_DIRS, exclude=tuple(exclude))]


def embed_text(path: str, symbol: str, text: str) -> str:
    """What the model sees for a chunk: where it is, then the code."""
    head = f"{path} {symbol}".strip()
    return f"{head}\n{text}"


def build_index(
    store: IndexStore,
    embedder: Any,
    root: Path,
    *,
    exclude: Sequence[str] = (),
    on_progress: Callable[[Progress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> BuildReport:
    """Bring ``store`` up to date with the files under ``root`` (blocking; run it in a thread)."""
    began = time.monotonic()
    root = Path(os.path.abspath(root))
    store.ensure_model(embedder.model_id, embedder.dim)
    store.set_meta(root=str(root))
    store.vectors()  # load and reconcile before changing anything
    report = BuildReport()
    known = store.files()
    paths = index_paths(root, exclude)
    report.files = len(paths)
    seen = set(paths)
    for gone in sorted(set(known) - seen):
        store.remove_file(gone)
        report.removed += 1
    last_save = time.monotonic()
    for n, rel in enumerate(paths, 1):
        if should_stop is not None and should_stop():
            break
        _index_one(store, embedder, root, rel, known.get(rel), report)
        if time.monotonic() - last_save > SAVE_EVERY:
            store.save_vectors()
            last_save = time.monotonic()
        if on_progress is not None:
            on_progress(Progress(n, len(paths), report.embedded, report.chunks, rel,
                                 time.monotonic() - began))
    store.save_vectors()
    report.seconds = time.monotonic() - began
    store.set_meta(
        built_at=int(time.time()), skipped_binary=report.skipped_binary,
        skipped_large=report.skipped_large,
    )
    return report


def _index_one(store: IndexStore, embedder: Any, root: Path, rel: str,
               old: FileRecord | None, report: BuildReport) -> None:
    full = root / rel
    try:
        st = full.stat()
    except OSError:
        return
    if st.st_size > MAX_FILE_BYTES:
        report.skipped_large += 1
        if old is not None:
            store.remove_file(rel)
        return
    if old is not None and old.size == st.st_size and old.mtime_ns == st.st_mtime_ns:
        report.unchanged += 1
        return
    try:
        data = full.read_bytes()
    except OSError:
        return
    if b"\0" in data[:8192]:
        report.skipped_binary += 1
        if old is not None:
            store.remove_file(rel)
        return
    digest = content_hash(data)
    if old is not None and old.hash == digest:
        store.touch(rel, st.st_size, st.st_mtime_ns)
        report.unchanged += 1
        return
    import numpy as np

    chunks = chunk_file(rel, data.decode("utf-8", "replace"))
    rows = [(c.start, c.end, c.symbol, c.text) for c in chunks]
    # A chunk whose text is unchanged keeps its vector: editing one function of a long file
    # embeds that function, not the file.
    stored = store.stored_vectors(rel) if old is not None else {}
    fresh = [i for i, c in enumerate(chunks) if (c.symbol, c.text) not in stored]
    vectors = np.zeros((len(chunks), embedder.dim), dtype=np.float32)
    if fresh:
        vectors[fresh] = embedder.embed([embed_text(rel, chunks[i].symbol, chunks[i].text)
                                         for i in fresh])
    for i, c in enumerate(chunks):
        if (c.symbol, c.text) in stored:
            vectors[i] = np.frombuffer(stored[(c.symbol, c.text)], dtype=np.float32)
    store.replace_file(FileRecord(rel, digest, st.st_size, st.st_mtime_ns, len(rows)), rows,
                       vectors)
    report.embedded += 1
    report.chunks += len(fresh)
    report.reused += len(chunks) - len(fresh)
