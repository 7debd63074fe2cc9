"""Recall: the memory facts relevant to a user message, from an SQLite FTS5 index.

The memory files stay the truth (a person edits them, ``memory_write`` appends to them); the
index at ``project_data_dir(root)/recall.db`` only mirrors their entries. Before each query it is
brought up to date with the files: a file whose size or modification time changed is
re-indexed, a file gone is dropped. So a note written by another session, or edited by hand,
is recalled without any hand-off.

A query is the message's distinct words (stop words and very short words left out) OR-ed
together, ranked by BM25 with the porter stemmer, so "testing" finds a note about "tests".
Everything here is blocking I/O: async callers run it in a worker thread.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from nyzhi.config import paths
from nyzhi.knowledge.memory import Fact, MemoryStore

DEFAULT_LIMIT = 3
MAX_QUERY_WORDS = 32

_STOP = frozenset(
    "the and for are but not you all any can had her was one our out has him his how its may "
    "new now old see two who did get let put say she too use this that with have from they "
    "will would there their what about which when make like time just know take into your "
    "some could them than then look only come over also back after work first well even want "
    "because these give most please should does here where been were".split()
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER);
CREATE VIRTUAL TABLE IF NOT EXISTS facts USING fts5(
    text, scope UNINDEXED, topic UNINDEXED, path UNINDEXED, tokenize = 'porter unicode61'
);
"""


def query_words(text: str) -> list[str]:
    """The words of ``text`` a query uses: distinct, lower case, at least three characters,
    no stop words, at most ``MAX_QUERY_WORDS``."""
    seen: dict[str, None] = {}
    for word in re.findall(r"\w+", text.lower()):
        if len(word) >= 3 and word not in _STOP and not word.isdigit():
            seen.setdefault(word, None)
    return list(seen)[:MAX_QUERY_WORDS]


class RecallStore:
    """The FTS5 mirror of one ``MemoryStore``."""

    def __init__(self, memory: MemoryStore, db_path: Path) -> None:
        self.memory = memory
        self.db_path = db_path

    @classmethod
    def for_workspace(cls, root: Path | str, env: Mapping[str, str] | None = None) -> RecallStore:
        return cls(MemoryStore.for_workspace(root, env), paths.project_data_dir(root, env) / "recall.db")

    def _connect(self) -> sqlite3.Connection:
        """The index, created if missing. It is a cache of the memory files, so WAL with
        ``synchronous=NORMAL`` is durable enough, and an unreadable file is rebuilt."""
        self.db_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        for attempt in (1, 2):
            db = sqlite3.connect(self.db_path, timeout=10)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(_SCHEMA)
                return db
            except sqlite3.DatabaseError:
                db.close()
                if attempt == 2:
                    raise
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.db_path}{suffix}").unlink(missing_ok=True)
        raise AssertionError("unreachable")

    def sync(self, db: sqlite3.Connection) -> int:
        """Re-index changed memory files, drop deleted ones; returns how many files changed."""
        known = {p: (m, s) for p, m, s in db.execute("SELECT path, mtime_ns, size FROM sources")}
        changed = 0
        with db:
            for path in self.memory.source_files():
                try:
                    st = os.stat(path)
                except FileNotFoundError:
                    continue
                key = str(path)
                if known.pop(key, None) == (st.st_mtime_ns, st.st_size):
                    continue
                db.execute("DELETE FROM facts WHERE path = ?", (key,))
                db.executemany(
                    "INSERT INTO facts (text, scope, topic, path) VALUES (?, ?, ?, ?)",
                    [(f.text, f.scope, f.topic, key) for f in self.memory.facts(path)],
                )
                db.execute("INSERT OR REPLACE INTO sources VALUES (?, ?, ?)",
                           (key, st.st_mtime_ns, st.st_size))
                changed += 1
            for gone in known:
                db.execute("DELETE FROM facts WHERE path = ?", (gone,))
                db.execute("DELETE FROM sources WHERE path = ?", (gone,))
                changed += 1
        return changed

    def recall(self, text: str, limit: int = DEFAULT_LIMIT, exclude: str = "") -> list[Fact]:
        """The ``limit`` facts most relevant to ``text``, best first; facts whose text appears
        in ``exclude`` (what the prompt already holds) are skipped."""
        words = query_words(text)
        if not words or limit <= 0:
            return []
        db = self._connect()
        try:
            self.sync(db)
            match = " OR ".join(f'"{w}"' for w in words)
            rows = db.execute(
                "SELECT text, scope, topic, path FROM facts WHERE facts MATCH ? "
                "ORDER BY bm25(facts) LIMIT ?",
                (match, limit + 32),
            ).fetchall()
        finally:
            db.close()
        out: list[Fact] = []
        for fact_text, scope, topic, path in rows:
            if fact_text in exclude:
                continue
            out.append(Fact(scope, topic, fact_text, Path(path)))
            if len(out) == limit:
                break
        return out


def recall_block(facts: list[Fact]) -> str:
    """The context attached to a user message ("" when nothing was recalled)."""
    if not facts:
        return ""
    lines = ["<recalled_memory>",
             "Notes from earlier sessions that may bear on this message (check before relying "
             "on them):"]
    lines += [f"- [{f.scope}/{f.topic}] {f.text}" for f in facts]
    lines.append("</recalled_memory>")
    return "\n".join(lines)
