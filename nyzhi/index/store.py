"""Where an index lives: SQLite for everything, hnswlib for fast vector search.

SQLite (``index.db``, WAL) is the source of truth: one row per indexed file (its content hash,
size and mtime), one per chunk (lines, symbol, text and its vector as a float32 blob), and an
FTS5 table over the chunks' words for BM25 keyword search. Each file is replaced in one
transaction, so a build killed at any moment leaves whole files behind and resumes with the
first file that was not committed.

The hnswlib graph (``vectors.hnsw``) is derived data: labels are chunk ids (never reused), it
is saved atomically (temp file + rename) from time to time, and on open it is reconciled with
SQLite — chunks it lacks are added from their stored vectors (no re-embedding), chunks that
no longer exist are marked deleted. A lost or stale graph therefore costs a re-insert, never
a wrong answer: search results are always joined with SQLite's live chunks.

A damaged file must not crash nyz. hnswlib checks only a graph file's sizes, and a graph with
a damaged neighbour list passes them and then crashes the process (a C abort) in a search.
So the SHA-256 of the graph is kept in SQLite's ``meta`` when it is saved and checked before
it is loaded: a graph that does not match (damaged, or saved by an older nyz) is not loaded
but rebuilt from SQLite. A damaged ``index.db`` (SQLite's "file is not a database" or
"database disk image is malformed") is a ``CorruptIndex``, said in one line; ``nyz index
build`` then deletes the index and builds it again (``remove_index_files``).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from nyzhi import records
from nyzhi.index.paths import index_dir as index_dir  # (defined there: no SQLite to find it)

SCHEMA_VERSION = "1"
# Words too common to rank by: an OR over them would match every chunk and drown the signal.
STOPWORDS = frozenset(
    "a an and are as at be been but by can do does for from had has have how i if in into is "
    "it its me my no not of on or our so than that the their them then there these they this "
    "to was we were what when where which while who why will with would you your".split()
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, hash TEXT NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, chunks INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL, start INTEGER NOT NULL,
    "end" INTEGER NOT NULL, symbol TEXT NOT NULL, text TEXT NOT NULL, vector BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(terms, tokenize='porter unicode61');
"""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[A-Za-z0-9]+")


INDEX_FILES = ("index.db", "index.db-wal", "index.db-shm", "vectors.hnsw", "vectors.hnsw.tmp")
_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB (extended codes keep them in the low byte)


class NoIndex(LookupError):
    """Searching a project that has no usable index: never built, empty, or damaged."""


class CorruptIndex(NoIndex):
    """``index.db`` is damaged: ``nyz index build`` deletes it and builds the index again."""

    def __init__(self, directory: Path, exc: BaseException) -> None:
        self.directory = Path(directory)
        self.reason = str(exc) or type(exc).__name__
        super().__init__(f"the semantic index {self.directory / 'index.db'} is corrupt "
                         f"({self.reason}): run `nyz index build` to rebuild it")


def is_corruption(exc: BaseException) -> bool:
    """Whether a SQLite error says the database file itself is damaged (not locked, not
    read-only, not full: those are not fixed by deleting it)."""
    if isinstance(exc, CorruptIndex):
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _CORRUPT_CODES
    text = str(exc)
    return "file is not a database" in text or "malformed" in text


def remove_index_files(directory: Path) -> None:
    """Delete an index's files (the database, its WAL, the graph), leaving the directory."""
    for name in INDEX_FILES:
        (Path(directory) / name).unlink(missing_ok=True)


def file_sha256(path: Path) -> str | None:
    """The SHA-256 of ``path``'s bytes; None when it does not exist."""
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except FileNotFoundError:
        return None


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def search_terms(path: str, text: str) -> str:
    """What FTS5 indexes for a chunk: its path's words and its text, with camelCase split
    (``openNursery`` also yields ``open nursery``; snake_case splits in the tokenizer)."""
    words = _WORD.findall(path.replace("/", " "))
    split = " ".join(w for w in set(_WORD.findall(text)) if _CAMEL.search(w))
    return " ".join([*words, text, _CAMEL.sub(" ", split)])


@records.frozen
class StoredChunk:
    id: int
    path: str
    start: int
    end: int
    symbol: str
    text: str


@records.frozen
class FileRecord:
    path: str
    hash: str
    size: int
    mtime_ns: int
    chunks: int


class VectorIndex:
    """hnswlib's cosine graph over unit vectors, labelled by chunk id."""

    def __init__(self, path: Path, dim: int, sha256: str | None = None) -> None:
        """Load the graph at ``path`` only when its SHA-256 is ``sha256`` (the one recorded
        when it was saved): anything else starts empty, to be refilled from SQLite."""
        import hnswlib

        self.path = path
        self.dim = dim
        self.sha256: str | None = None  # of the file as last saved or loaded
        self._index = hnswlib.Index(space="cosine", dim=dim)
        self._deleted: set[int] = set()
        loaded = False
        if sha256 and path.is_file() and file_sha256(path) == sha256:
            try:
                self._index.load_index(str(path), allow_replace_deleted=False)
                loaded = True
                self.sha256 = sha256
            except RuntimeError:
                loaded = False  # corrupt or of another dimension: rebuilt from SQLite
        if not loaded:
            self._index = hnswlib.Index(space="cosine", dim=dim)
            self._index.init_index(max_elements=1024, ef_construction=200, M=16)
        self._index.set_ef(64)
        self.dirty = not loaded

    def labels(self) -> set[int]:
        return set(int(x) for x in self._index.get_ids_list())

    def count(self) -> int:
        return self._index.get_current_count()

    def add(self, ids: Sequence[int], vectors: Any) -> None:
        if not len(ids):
            return
        need = self._index.get_current_count() + len(ids)
        if need > self._index.get_max_elements():
            self._index.resize_index(max(need, 2 * self._index.get_max_elements()))
        self._index.add_items(vectors, list(ids), num_threads=1)
        self.dirty = True

    def remove(self, ids: Iterable[int]) -> None:
        for label in ids:
            if label in self._deleted:
                continue
            try:
                self._index.mark_deleted(int(label))
            except RuntimeError:
                pass  # unknown or already deleted
            self._deleted.add(label)
            self.dirty = True

    def search(self, vector: Any, k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity), best first."""
        live = self._index.get_current_count() - len(self._deleted)
        k = min(k, live)
        while k > 0:
            try:
                labels, dists = self._index.knn_query(vector, k=k)
                return [(int(lab), 1.0 - float(d)) for lab, d in zip(labels[0], dists[0],
                                                                       strict=True)]
            except RuntimeError:  # fewer reachable live elements than k
                k //= 2
        return []

    def save(self, record: Any = None) -> None:
        """Atomically: a kill mid-save leaves the previous graph in place. ``record(sha256)``
        stores the new file's hash before the file replaces the old one, so a kill in between
        leaves a hash that matches neither: the graph is rebuilt, never trusted wrongly."""
        if not self.dirty:
            return
        from nyzhi.config.fsutil import commit_file

        tmp = self.path.with_name(self.path.name + ".tmp")
        self._index.save_index(str(tmp))
        digest = file_sha256(tmp)
        if record is not None:
            record(digest)
        commit_file(tmp, self.path)  # fsynced and renamed: the one atomic write's rename
        self.sha256 = digest
        self.dirty = False


class IndexStore:
    """One project's index on disk. Thread-safe: the builder writes from a worker thread while
    searches read from others, serialised by one lock."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.lock = threading.RLock()
        self.db = sqlite3.connect(directory / "index.db", check_same_thread=False,
                                  isolation_level=None)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            self.db.close()
            if is_corruption(exc):
                raise CorruptIndex(directory, exc) from None
            raise
        self._vectors: VectorIndex | None = None

    def close(self) -> None:
        with self.lock:
            try:
                self.save_vectors()
            finally:
                self.db.close()

    # ---- meta ------------------------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, **values: Any) -> None:
        with self.lock:
            self.db.executemany(
                "INSERT INTO meta(key, value) VALUES(?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                [(k, str(v)) for k, v in values.items()],
            )

    def ensure_model(self, model_id: str, dim: int) -> bool:
        """Bind the index to an embedding model; a different model (or dimension) than the
        one it was built with clears it. True if it was cleared."""
        with self.lock:
            old = (self.get_meta("model_id"), self.get_meta("dim"))
            if old == (model_id, str(dim)) and self.get_meta("schema") == SCHEMA_VERSION:
                return False
            cleared = old != (None, None)
            if cleared:
                self.clear()
            self.set_meta(model_id=model_id, dim=dim, schema=SCHEMA_VERSION)
            return cleared

    def clear(self) -> None:
        with self.lock:
            self.db.executescript(
                "BEGIN; DELETE FROM files; DELETE FROM chunks; DELETE FROM fts; "
                "DELETE FROM meta; COMMIT;"
            )
            self._vectors = None
            (self.directory / "vectors.hnsw").unlink(missing_ok=True)

    # ---- files -----------------------------------------------------------------------------

    def files(self) -> dict[str, FileRecord]:
        rows = self.db.execute("SELECT path, hash, size, mtime_ns, chunks FROM files")
        return {r[0]: FileRecord(*r) for r in rows}

    def touch(self, path: str, size: int, mtime_ns: int) -> None:
        with self.lock:
            self.db.execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?",
                            (size, mtime_ns, path))

    def replace_file(self, record: FileRecord, chunks: Sequence[tuple[int, int, str, str]],
                     vectors: Any) -> None:
        """Swap one file's chunks (start, end, symbol, text) for new ones, in one transaction,
        then update the vector graph."""
        import numpy as np

        vecs = np.asarray(vectors, dtype=np.float32)
        with self.lock:
            cur = self.db.cursor()
            cur.execute("BEGIN")
            try:
                old = self._delete_rows(cur, record.path)
                new_ids = []
                for (start, end, symbol, text), vec in zip(chunks, vecs, strict=True):
                    cur.execute(
                        'INSERT INTO chunks(path, start, "end", symbol, text, vector) '
                        "VALUES(?,?,?,?,?,?)",
                        (record.path, start, end, symbol, text, vec.tobytes()),
                    )
                    cid = int(cur.lastrowid or 0)
                    new_ids.append(cid)
                    cur.execute("INSERT INTO fts(rowid, terms) VALUES(?, ?)",
                                (cid, search_terms(record.path, text)))
                cur.execute(
                    "INSERT OR REPLACE INTO files(path, hash, size, mtime_ns, chunks) "
                    "VALUES(?,?,?,?,?)",
                    (record.path, record.hash, record.size, record.mtime_ns, len(chunks)),
                )
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            if self._vectors is not None:
                self._vectors.remove(old)
                self._vectors.add(new_ids, vecs)

    def stored_vectors(self, path: str) -> dict[tuple[str, str], bytes]:
        """The vectors of ``path``'s chunks by (symbol, text): an edited file re-embeds only
        the chunks whose text changed."""
        with self.lock:
            rows = self.db.execute(
                "SELECT symbol, text, vector FROM chunks WHERE path=?", (path,)).fetchall()
        return {(r[0], r[1]): r[2] for r in rows}

    def remove_file(self, path: str) -> None:
        with self.lock:
            cur = self.db.cursor()
            cur.execute("BEGIN")
            old = self._delete_rows(cur, path)
            cur.execute("DELETE FROM files WHERE path=?", (path,))
            cur.execute("COMMIT")
            if self._vectors is not None:
                self._vectors.remove(old)

    def _delete_rows(self, cur: sqlite3.Cursor, path: str) -> list[int]:
        old = [r[0] for r in cur.execute("SELECT id FROM chunks WHERE path=?", (path,))]
        if old:
            cur.executemany("DELETE FROM fts WHERE rowid=?", [(i,) for i in old])
            cur.execute("DELETE FROM chunks WHERE path=?", (path,))
        return old

    # ---- vectors ---------------------------------------------------------------------------

    def vectors(self) -> VectorIndex:
        """The graph, loaded and reconciled with SQLite on first use."""
        import numpy as np

        with self.lock:
            if self._vectors is not None:
                return self._vectors
            dim = int(self.get_meta("dim") or 0)
            if not dim:
                raise LookupError("the index has no embedding model yet: build it first")
            vi = VectorIndex(self.directory / "vectors.hnsw", dim, self.get_meta("hnsw_sha256"))
            live = {r[0] for r in self.db.execute("SELECT id FROM chunks")}
            present = vi.labels()
            if len(present) > 2 * len(live) + 1000:  # mostly deleted: start over
                (self.directory / "vectors.hnsw").unlink(missing_ok=True)
                vi = VectorIndex(self.directory / "vectors.hnsw", dim)
                present = set()
            missing = sorted(live - present)
            for start in range(0, len(missing), 2048):
                ids = missing[start : start + 2048]
                marks = ",".join("?" * len(ids))
                rows = self.db.execute(
                    f"SELECT id, vector FROM chunks WHERE id IN ({marks})", ids).fetchall()
                vi.add([r[0] for r in rows],
                       np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows]))
            vi.remove(present - live)
            self._vectors = vi
            return vi

    def save_vectors(self) -> None:
        with self.lock:
            if self._vectors is not None:
                self._vectors.save(lambda digest: self.set_meta(hnsw_sha256=digest))

    # ---- reading ---------------------------------------------------------------------------

    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self.lock:
            rows = self.db.execute(
                f'SELECT id, path, start, "end", symbol, text FROM chunks WHERE id IN ({marks})',
                list(ids),
            ).fetchall()
        return {r[0]: StoredChunk(*r) for r in rows}

    def keyword_search(self, query: str, k: int) -> list[tuple[int, float]]:
        """(chunk id, bm25 score; lower is better), best first: any query word but stopwords
        may match (porter-stemmed: ``requests`` finds ``request``)."""
        words = [w.lower() for w in _WORD.findall(_CAMEL.sub(" ", query))]
        words = [w for w in words if w not in STOPWORDS and len(w) > 1]
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in dict.fromkeys(words))
        with self.lock:
            rows = self.db.execute(
                "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?",
                (match, k),
            ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def counts(self) -> tuple[int, int]:
        """(files, chunks) indexed."""
        with self.lock:
            files = self.db.execute("SELECT count(*) FROM files").fetchone()[0]
            chunks = self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return int(files), int(chunks)
