"""Hybrid retrieval with the real local model (MiniLM int8 ONNX) on a tiny corpus: the
right file comes first for queries phrased unlike the code, in every mode, and the per-file
cap holds."""

from __future__ import annotations

import pytest
import trio

from nyzhi.index.embed import EmbeddingError, LocalEmbedder
from nyzhi.index.indexer import build_index
from nyzhi.index.search import search
from nyzhi.index.store import IndexStore, index_dir

CORPUS = {
    "net/backoff.py": (
        "import random\n\n\ndef delay_for(attempt, base=0.5, cap=30.0):\n"
        "    \"\"\"Exponential backoff with full jitter for retrying failed requests.\"\"\"\n"
        "    return random.uniform(0, min(cap, base * 2 ** attempt))\n"
    ),
    "auth/password.py": (
        "import hashlib\n\n\ndef hash_password(password, salt):\n"
        "    \"\"\"Derive a key from a user's password with PBKDF2.\"\"\"\n"
        "    return hashlib.pbkdf2_hmac('sha256', password.encode(), salt, 200_000)\n\n\n"
        "def check_password(password, salt, expected):\n"
        "    return hash_password(password, salt) == expected\n"
    ),
    "ui/colors.py": (
        "def hex_to_rgb(value):\n    \"\"\"Turn '#ff8800' into (255, 136, 0).\"\"\"\n"
        "    value = value.lstrip('#')\n"
        "    return tuple(int(value[i:i + 2], 16) for i in (0, 2, 4))\n"
    ),
    "storage/cache.py": (
        "from collections import OrderedDict\n\n\nclass LRUCache:\n"
        "    \"\"\"Keeps the most recently used entries, evicting the oldest.\"\"\"\n\n"
        "    def __init__(self, size):\n        self.size = size\n        self.data = OrderedDict()\n\n"
        "    def get(self, key):\n        self.data.move_to_end(key)\n        return self.data[key]\n"
    ),
    "docs/deploy.md": "# Deploying\n\nProduction runs on Kubernetes; the Helm chart lives in charts/.\n",
}
QUERIES = {
    "how long to wait before trying a request again": "net/backoff.py",
    "verify the login secret of a user": "auth/password.py",
    "convert a colour code to red green blue": "ui/colors.py",
    "evict least recently used items": "storage/cache.py",
    "which cluster do we ship to in production": "docs/deploy.md",
}


@pytest.fixture(scope="module")
def embedder():
    try:
        return LocalEmbedder()
    except EmbeddingError as exc:
        pytest.skip(f"the local embedding model is not installed: {exc}")


async def test_hybrid_retrieval_finds_the_right_file(tmp_path, home, embedder):
    root = tmp_path / "proj"
    for rel, text in CORPUS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    store = IndexStore(index_dir(root))
    report = await trio.to_thread.run_sync(lambda: build_index(store, embedder, root))
    assert report.embedded == len(CORPUS)
    for mode in ("hybrid", "vector"):
        for query, target in QUERIES.items():
            hits = await trio.to_thread.run_sync(
                lambda q=query, m=mode: search(store, embedder, q, k=3, mode=m))
            assert hits[0].path == target, (mode, query, [h.path for h in hits])
    # keyword-only needs shared words, and finds them through snake_case and the path
    hits = search(store, None, "hash password", k=3, mode="keyword")
    assert hits[0].path == "auth/password.py"
    hits = search(store, None, "deploy kubernetes", k=3, mode="keyword")
    assert hits[0].path == "docs/deploy.md"
    # at most per_file chunks of one file
    hits = search(store, embedder, "password", k=5, per_file=1)
    assert len({h.path for h in hits}) == len(hits)
    store.close()
