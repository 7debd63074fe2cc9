"""Building an index against the fake LLM's real /v1/embeddings endpoint (loopback HTTP):
incremental updates, deleted files, the shared walker's rules, skipped files, and a lost
vector graph rebuilt from SQLite without re-embedding."""

from __future__ import annotations

import os

import pytest
import trio

from nyzhi.index.embed import RemoteEmbedder
from nyzhi.index.indexer import MAX_FILE_BYTES, build_index
from nyzhi.index.search import search
from nyzhi.index.store import IndexStore, index_dir
from nyzhi.testing.fake_llm import open_fake_llm

FILES = {
    "retry.py": "def retry_with_backoff(call):\n    \"\"\"Retry a call with exponential backoff.\"\"\"\n    return call()\n",
    "parser.py": "def parse_sse(lines):\n    \"\"\"Parse server sent events.\"\"\"\n    return list(lines)\n",
    "docs/guide.md": "# Guide\nInstall the package and run the tests.\n",
    "src/app.ts": "export function renderWidget() {\n  return 1;\n}\n",
}


def write_tree(root, files=FILES):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def embedded_paths(server, since=0):
    """The file paths whose chunks were sent to /embeddings (each input starts with its path)."""
    out = []
    for req in server.requests[since:]:
        if req.path == "/v1/embeddings":
            out += [text.split("\n", 1)[0].split(" ")[0] for text in req.json["input"]
                    if text != "dimension probe"]
    return out


async def build(store, embedder, root, **kw):
    return await trio.to_thread.run_sync(lambda: build_index(store, embedder, root, **kw))


@pytest.fixture
async def fake():
    async with open_fake_llm() as server:
        yield server


def embedder_for(server):
    e = RemoteEmbedder(server.url_for("openai"), "fake-embed", api_key="sk-test")
    e.probe()
    return e


async def test_only_changed_files_are_re_embedded_and_deleted_files_leave(tmp_path, home, fake):
    root = tmp_path / "proj"
    write_tree(root)
    embedder = await trio.to_thread.run_sync(embedder_for, fake)
    store = IndexStore(index_dir(root))
    assert str(store.directory).startswith(str(home))  # under the isolated XDG data dir

    first = await build(store, embedder, root)
    assert (first.files, first.embedded, first.unchanged) == (4, 4, 0)
    assert sorted(set(embedded_paths(fake))) == sorted(FILES)

    mark = len(fake.requests)
    (root / "parser.py").write_text("def parse_json_lines(lines):\n    return lines\n")
    second = await build(store, embedder, root)
    assert (second.embedded, second.unchanged) == (1, 3)
    assert set(embedded_paths(fake, mark)) == {"parser.py"}
    hits = await trio.to_thread.run_sync(lambda: search(store, embedder, "parse json lines", k=1))
    assert hits[0].path == "parser.py" and "parse_json_lines" in hits[0].text
    assert "parse_sse" not in {c.text for c in store.chunks_by_id(range(1, 100)).values()}

    # same bytes, new mtime: hashed, not embedded
    mark = len(fake.requests)
    st = os.stat(root / "retry.py")
    os.utime(root / "retry.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    third = await build(store, embedder, root)
    assert third.embedded == 0 and embedded_paths(fake, mark) == []

    (root / "docs" / "guide.md").unlink()
    fourth = await build(store, embedder, root)
    assert fourth.removed == 1 and "docs/guide.md" not in store.files()
    hits = await trio.to_thread.run_sync(
        lambda: search(store, embedder, "install the package guide", k=5))
    assert "docs/guide.md" not in {h.path for h in hits}
    store.close()


async def test_an_edited_file_re_embeds_only_its_changed_chunks(tmp_path, home, fake):
    root = tmp_path / "proj"
    two = "def alpha():\n    return 1\n\n\ndef beta():\n    return 2\n"
    write_tree(root, {"two.py": two})
    embedder = await trio.to_thread.run_sync(embedder_for, fake)
    store = IndexStore(index_dir(root))
    await build(store, embedder, root)
    mark = len(fake.requests)
    (root / "two.py").write_text(two.replace("return 2", "return 22"))
    report = await build(store, embedder, root)
    assert (report.embedded, report.chunks, report.reused) == (1, 1, 1)
    sent = [t for r in fake.requests[mark:] for t in r.json["input"]]
    assert sent == ["two.py beta\ndef beta():\n    return 22"]
    hits = await trio.to_thread.run_sync(
        lambda: search(store, embedder, "alpha return", k=1, mode="vector"))
    assert hits[0].symbol == "alpha"  # the reused vector is still found
    store.close()


async def test_gitignore_exclude_binary_and_huge_files(tmp_path, home, fake):
    root = tmp_path / "proj"
    write_tree(root)
    (root / ".gitignore").write_text("build/\n*.log\n")
    write_tree(root, {"build/out.py": "x = 1\n", "run.log": "log\n", "vendor/lib.py": "y = 2\n",
                      ".hidden/secret.py": "z = 3\n", "node_modules/m/index.js": "a\n"})
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x00\x00binary")
    (root / "huge.txt").write_text("w " * (MAX_FILE_BYTES // 2 + 10))
    embedder = await trio.to_thread.run_sync(embedder_for, fake)
    store = IndexStore(index_dir(root))
    report = await build(store, embedder, root, exclude=("vendor/", "src/*.ts"))
    assert sorted(store.files()) == ["docs/guide.md", "parser.py", "retry.py"]
    assert (report.skipped_binary, report.skipped_large) == (1, 1)
    assert "skipped 1 binary and 1 too large" in report.summary()
    store.close()


async def test_a_lost_vector_graph_is_rebuilt_from_sqlite_without_embedding(tmp_path, home, fake):
    root = tmp_path / "proj"
    write_tree(root)
    embedder = await trio.to_thread.run_sync(embedder_for, fake)
    store = IndexStore(index_dir(root))
    await build(store, embedder, root)
    store.close()
    (index_dir(root) / "vectors.hnsw").unlink()

    mark = len(fake.requests)
    store = IndexStore(index_dir(root))
    report = await build(store, embedder, root)
    assert report.embedded == 0 and embedded_paths(fake, mark) == []
    hits = await trio.to_thread.run_sync(
        lambda: search(store, embedder, "retry backoff", k=1, mode="vector"))
    assert hits[0].path == "retry.py"
    assert (index_dir(root) / "vectors.hnsw").is_file()
    store.close()


async def test_changing_the_embedding_model_clears_the_index(tmp_path, home, fake):
    root = tmp_path / "proj"
    write_tree(root)
    embedder = await trio.to_thread.run_sync(embedder_for, fake)
    store = IndexStore(index_dir(root))
    await build(store, embedder, root)
    other = RemoteEmbedder(fake.url_for("openai"), "other-model")
    await trio.to_thread.run_sync(other.probe)
    report = await build(store, other, root)
    assert report.embedded == 4 and store.get_meta("model_id") == "remote:other-model"
    store.close()
