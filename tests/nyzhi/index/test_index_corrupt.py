"""A damaged index never gives a traceback, and ``nyz index build`` recovers from it.

``index.db`` damaged in several ways: ``nyz index status`` and ``search`` say so in one line
(exit 1), ``build`` says it once, deletes the index and builds it again (exit 0), after which
search finds the code. A damaged ``vectors.hnsw`` (which hnswlib may load and then crash on)
is never trusted: its hash does not match, so the graph is rebuilt from SQLite and vector
search still answers. Real ``nyz`` processes, the fake LLM's /embeddings endpoint.
"""

from __future__ import annotations

import os

import pytest
import trio

from nyzhi.index.store import index_dir
from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import open_fake_llm

INDEX_CONFIG = '[index]\nembedding = "fake"\nembedding_model = "fake-embed"\n'
FILES = {
    "retry.py": "def retry_with_backoff(call):\n    \"\"\"Retry with exponential backoff.\"\"\"\n"
                "    return call()\n",
    "parser.py": "def parse_sse(lines):\n    \"\"\"Parse server sent events.\"\"\"\n"
                 "    return list(lines)\n",
}


def _garbage(data: bytes) -> bytes:
    return os.urandom(len(data))


def _no_magic(data: bytes) -> bytes:
    return b"Not SQLite at all" + data[17:]


def _pages_damaged(data: bytes) -> bytes:
    page = int.from_bytes(data[16:18], "big") or 65536  # the page size, from the header
    return data[:page] + bytes([0xA5]) * (len(data) - page)


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2 + 100]


DB_DAMAGE = {"garbage": _garbage, "no magic": _no_magic, "pages damaged": _pages_damaged,
             "truncated": _truncated}


async def _build(workspace, home):
    done = await run_nyz(workspace, home, "index", "build")
    assert done.returncode == 0, done.stderr.decode()
    return done


def _one_line_error(proc, *needles: str) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == 1, (proc.returncode, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.parametrize("damage", sorted(DB_DAMAGE))
async def test_a_corrupt_index_db_is_said_in_one_line_and_rebuilt_by_build(
        workspace, home, configure, damage):
    for rel, text in FILES.items():
        (workspace / rel).write_text(text)
    async with open_fake_llm() as server:
        configure(workspace, server.url_for("openai"), extra=INDEX_CONFIG)
        with trio.fail_after(120):
            await _build(workspace, home)
            db = index_dir(workspace) / "index.db"
            db.write_bytes(DB_DAMAGE[damage](db.read_bytes()))

            status = await run_nyz(workspace, home, "index", "status")
            _one_line_error(status, str(db), "is corrupt", "nyz index build")
            search = await run_nyz(workspace, home, "index", "search", "backoff")
            _one_line_error(search, str(db), "is corrupt", "nyz index build")

            rebuilt = await run_nyz(workspace, home, "index", "build")
            err = rebuilt.stderr.decode()
            assert rebuilt.returncode == 0, err
            assert "Traceback" not in err
            assert [line for line in err.splitlines() if "corrupt" in line] == [
                line for line in err.splitlines() if line.strip()]
            assert "the index was corrupt" in err and "built it again" in err
            assert "2 files: 2 embedded" in rebuilt.stdout.decode()

            found = await run_nyz(workspace, home, "index", "search", "backoff", "-k", "1")
            assert found.returncode == 0, found.stderr.decode()
            assert "retry.py" in found.stdout.decode()
            again = await run_nyz(workspace, home, "index", "status")
            assert again.returncode == 0 and "files:     2" in again.stdout.decode()


# hnswlib's file: a 96-byte header (the entry point's id at 52), then each element's level-0
# block: its neighbour count (4 bytes), then its neighbours' ids (4 bytes each).
def _neighbour_damaged(data: bytes) -> bytes:
    """The first element's first neighbour pointed far outside the graph: hnswlib's size
    checks pass, and a search follows it out of its memory (a segfault, before the hash)."""
    return data[:100] + b"\x7e\x7f\x7f\x7f" + data[104:]


def _entry_point_damaged(data: bytes) -> bytes:
    return data[:52] + b"\x7f\x7f\x7f\x7f" + data[56:]


HNSW_DAMAGE = {"garbage": _garbage, "truncated": _truncated, "empty": lambda _data: b"",
               "neighbour damaged": _neighbour_damaged,
               "entry point damaged": _entry_point_damaged}


@pytest.mark.parametrize("damage", sorted(HNSW_DAMAGE))
async def test_a_corrupt_vector_graph_is_rebuilt_from_sqlite(workspace, home, configure, damage):
    for rel, text in FILES.items():
        (workspace / rel).write_text(text)
    async with open_fake_llm() as server:
        configure(workspace, server.url_for("openai"), extra=INDEX_CONFIG)
        with trio.fail_after(120):
            await _build(workspace, home)
            graph = index_dir(workspace) / "vectors.hnsw"
            graph.write_bytes(HNSW_DAMAGE[damage](graph.read_bytes()))
            embedded = len(server.requests)
            for mode in ("vector", "hybrid"):
                found = await run_nyz(workspace, home, "index", "search", "backoff", "--mode",
                                      mode, "-k", "2")
                err = found.stderr.decode()
                assert found.returncode == 0 and "Traceback" not in err, err
                assert "retry.py" in found.stdout.decode()
            # only the queries were embedded: the chunks' vectors came from SQLite
            inputs = [r.json["input"] for r in server.requests[embedded:]
                      if r.path == "/v1/embeddings"]
            assert inputs, "no query was embedded: the search did not use the vectors"
            assert all(len(i) == 1 and "retry.py" not in i[0] for i in inputs), inputs
