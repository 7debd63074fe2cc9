"""Hybrid retrieval: vector similarity and BM25 keyword ranks fused by reciprocal rank.

Each retriever returns its best ``CANDIDATES`` chunks; a chunk's fused score is the sum over
retrievers of ``1 / (RRF_K + rank)``. Rank fusion needs no score calibration between cosine
similarity and BM25, and a chunk both retrievers like rises above one only one of them likes.
At most ``per_file`` chunks of one file are returned, so one long file cannot fill the list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nyzhi import records

if TYPE_CHECKING:  # the store (SQLite) is the caller's: the tool's schema needs none of it
    from nyzhi.index.store import IndexStore

RRF_K = 60
CANDIDATES = 50
MODES = ("hybrid", "vector", "keyword")


@records.frozen
class Hit:
    path: str
    start: int
    end: int
    symbol: str
    text: str
    score: float

    def location(self) -> str:
        return f"{self.path}:{self.start}-{self.end}"


def search(
    store: IndexStore,
    embedder: Any,
    query: str,
    *,
    k: int = 5,
    per_file: int = 2,
    mode: str = "hybrid",
    query_vector: Any = None,
) -> list[Hit]:
    """The ``k`` best chunks for ``query`` (``mode``: hybrid, vector or keyword)."""
    if mode not in MODES:
        raise ValueError(f"search mode must be one of {', '.join(MODES)}, got {mode!r}")
    ranked: list[list[int]] = []
    if mode in ("hybrid", "vector"):
        vec = query_vector if query_vector is not None else embedder.embed([query])[0]
        ranked.append([cid for cid, _ in store.vectors().search(vec, CANDIDATES)])
    if mode in ("hybrid", "keyword"):
        ranked.append([cid for cid, _ in store.keyword_search(query, CANDIDATES)])
    scores: dict[int, float] = {}
    for ranking in ranked:
        for rank, cid in enumerate(ranking):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (RRF_K + rank + 1)
    order = sorted(scores, key=lambda c: -scores[c])
    chunks = store.chunks_by_id(order[: max(CANDIDATES, k * per_file * 4)])
    out: list[Hit] = []
    per: dict[str, int] = {}
    for cid in order:
        c = chunks.get(cid)
        if c is None or per.get(c.path, 0) >= per_file:
            continue
        per[c.path] = per.get(c.path, 0) + 1
        out.append(Hit(c.path, c.start, c.end, c.symbol, c.text, scores[cid]))
        if len(out) >= k:
            break
    return out


def format_hits(hits: list[Hit], *, max_lines: int = 30) -> str:
    """Hits as text for a model or a terminal: location, then the (clipped) chunk."""
    parts = []
    for h in hits:
        lines = h.text.splitlines()
        body = "\n".join(lines[:max_lines])
        if len(lines) > max_lines:
            body += f"\n… ({len(lines) - max_lines} more lines)"
        name = f" ({h.symbol})" if h.symbol else ""
        parts.append(f"{h.location()}{name}\n{body}")
    return "\n\n".join(parts)
