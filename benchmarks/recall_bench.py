"""Memory recall per user message: the FTS5 query (with its check that the index matches the
memory files) against reading every memory file, the least a recall without an index costs.

    python -m benchmarks recall [--json] [--quick]

A project memory of 40 topics x 25 entries (1,000 facts, ~100 KB) plus a user memory. Figures:

  recall, warm       one message: stat every file, FTS5 MATCH, BM25 top 3   (target <= 10 ms)
  read all files     baseline: read every memory file (no matching at all)
  recall, one edit   one topic changed since the last message, re-indexed first
  first recall       a fresh index built from every file
Timings are the best of several repeats (the machine is shared). Nothing here is asserted.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from nyzhi.knowledge.memory import MemoryStore
from nyzhi.knowledge.recall import RecallStore

WORDS = ("cache build deploy docker pytest fixture schema migration queue worker retry token "
         "parser lexer config logging metrics tracing release branch review lint format "
         "sandbox network timeout proxy database index vector search prompt model").split()


def _fill(store: MemoryStore, topics: int, entries: int) -> None:
    store.project_dir.mkdir(parents=True)
    for t in range(topics):
        lines = [f"# topic{t}", ""]
        for e in range(entries):
            words = " ".join(WORDS[(t * 7 + e * k) % len(WORDS)] for k in range(1, 12))
            lines += [f"Entry {e} of topic {t}: {words}.", ""]
        (store.project_dir / f"topic{t}.md").write_text("\n".join(lines))
    store.write("style", "The user prefers short answers.", scope="user")


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    repeats = 5 if quick else 20
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = MemoryStore(root / "MEMORY.md", root / "memory")
        _fill(store, 40 if not quick else 10, 25)
        recall = RecallStore(store, root / "recall.db")
        message = "why does the pytest fixture for the database migration time out?"
        first = _best(lambda: recall.recall(message), 1)
        warm = _best(lambda: recall.recall(message), repeats)
        baseline = _best(lambda: [p.read_text() for p in store.source_files()], repeats)
        topic = store.project_dir / "topic3.md"

        def edited() -> None:
            with open(topic, "a") as fh:
                fh.write("\nA new note about the retry queue.\n")
            os.utime(topic)
            recall.recall(message)

        one_edit = _best(edited, repeats)
        facts = len(recall.recall(message, limit=3))
    figures = {
        "recall_warm_ms": warm * 1000,
        "read_all_files_ms": baseline * 1000,
        "recall_one_edit_ms": one_edit * 1000,
        "first_recall_ms": first * 1000,
        "ratio_warm_vs_read_all": warm / baseline,
        "facts_returned": facts,
        "target_recall_warm_ms": 10,
    }
    if "--json" in argv:
        print(json.dumps(figures))
        return
    print(f"recall, warm       {warm * 1000:7.2f} ms   ({warm / baseline:.1f}x reading every "
          f"memory file; target <= 10 ms)")
    print(f"read all files     {baseline * 1000:7.2f} ms   (baseline)")
    print(f"recall, one edit   {one_edit * 1000:7.2f} ms")
    print(f"first recall       {first * 1000:7.2f} ms   (index built from scratch)")
    sys.stdout.flush()
