"""Hybrid search: k-NN and BM25 candidates fused by reciprocal rank."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol, TypeVar

from docchat.embed import Embedder, Vectors
from docchat.models import Chunk, Passage

K = TypeVar("K", bound=Hashable)
RRF_K = 60


class SearchIndex(Protocol):
    """What retrieval needs from an index: two ranked lists of chunk ids, and the chunks."""

    def vector_search(
        self, query: Vectors, *, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]: ...

    def keyword_search(
        self, query: str, *, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]: ...

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]: ...


def fuse_by_rank(rankings: Sequence[Sequence[K]], *, k: int = RRF_K) -> list[tuple[K, float]]:
    """Reciprocal-rank fusion: sum of 1/(k + rank) per list, best first, ties by first seen."""
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def hybrid_search(
    index: SearchIndex,
    embedder: Embedder,
    query: str,
    *,
    top_k: int = 5,
    candidates: int = 50,
    doc_ids: Sequence[str] | None = None,
) -> list[Passage]:
    """The `top_k` passages for `query`, optionally only from `doc_ids`."""
    if not query.strip() or top_k <= 0:
        return []
    vector_hits = index.vector_search(embedder.embed_query(query), k=candidates, doc_ids=doc_ids)
    keyword_hits = index.keyword_search(query, k=candidates, doc_ids=doc_ids)
    vector_rank = {chunk_id: rank for rank, (chunk_id, _) in enumerate(vector_hits, start=1)}
    keyword_rank = {chunk_id: rank for rank, (chunk_id, _) in enumerate(keyword_hits, start=1)}
    fused = fuse_by_rank([list(vector_rank), list(keyword_rank)])[:top_k]
    chunks = index.chunks([chunk_id for chunk_id, _ in fused])
    return [
        Passage(
            chunk=chunks[chunk_id],
            score=score,
            vector_rank=vector_rank.get(chunk_id),
            keyword_rank=keyword_rank.get(chunk_id),
        )
        for chunk_id, score in fused
        if chunk_id in chunks
    ]
