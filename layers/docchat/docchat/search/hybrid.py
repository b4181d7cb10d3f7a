"""Hybrid search: k-NN and BM25 candidates fused by rank or by normalised score."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Literal, TypeVar

from docchat.errors import ConfigError
from docchat.models import Passage
from docchat.ports import ChunkStore, Embedder

K = TypeVar("K", bound=Hashable)
# The published method's constant (Cormack et al., 2009), not a tuned number: the tuned ones
# (fusion, candidates, vector weight) live in `docchat.config.Settings` only.
RRF_K = 60
Fusion = Literal["rank", "score"]


def fuse_by_rank(rankings: Sequence[Sequence[K]], *, k: int = RRF_K) -> list[tuple[K, float]]:
    """Reciprocal-rank fusion: sum of 1/(k + rank) per list, best first, ties by first seen."""
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def fuse_by_score(
    scored: Sequence[Sequence[tuple[K, float]]], *, weights: Sequence[float]
) -> list[tuple[K, float]]:
    """Convex combination of min-max normalised scores, best first, ties by first seen.

    Each list's scores are `rescaled` to 0..1; a key absent from a list gets 0 there. Scores of
    any scale fuse: BM25, cosine, OpenSearch's.
    """
    if len(weights) != len(scored):
        raise ValueError(f"{len(weights)} weights for {len(scored)} lists of scores")
    fused: dict[K, float] = {}
    for hits, weight in zip(scored, weights, strict=True):
        if not hits:
            continue
        for (key, _), share in zip(hits, rescaled([score for _, score in hits]), strict=True):
            fused[key] = fused.get(key, 0.0) + weight * share
    return sorted(fused.items(), key=lambda item: -item[1])


def rescaled(values: Sequence[float]) -> list[float]:
    """`values` mapped to 0..1: the best 1, the worst 0; all 1 when they are equal."""
    if not values:
        return []
    low, span = min(values), max(values) - min(values)
    return [(value - low) / span if span > 0 else 1.0 for value in values]


def hybrid_search(
    index: ChunkStore,
    embedder: Embedder,
    query: str,
    *,
    top_k: int,
    candidates: int,
    fusion: Fusion,
    vector_weight: float,
    doc_ids: Sequence[str] | None = None,
    versions: Mapping[str, str] | None = None,
    keywords: str | None = None,
) -> list[Passage]:
    """The `top_k` passages for `query`, optionally only from `doc_ids` and only of `versions`
    (doc_id -> version; see `ChunkStore`); BM25 searches `keywords` when given (the query with
    other names of what it asks about: `docchat.search.concepts.hinted`), else `query`.

    `candidates` come from each of k-NN and BM25. `fusion="rank"` is reciprocal-rank fusion;
    `"score"` weighs the normalised cosine by `vector_weight` and the normalised BM25 score by
    1 - `vector_weight`. The tuned values are `Settings.candidates`, `.fusion`, `.vector_weight`.
    """
    if not query.strip() or top_k <= 0:
        return []
    check_weight(fusion, vector_weight)
    if (doc_ids is not None and not doc_ids) or (versions is not None and not versions):
        return []  # nothing may match: spare the embedder and the index a call
    vector_hits = index.vector_search(
        embedder.embed_query(query), k=candidates, doc_ids=doc_ids, versions=versions
    )
    keyword_hits = index.keyword_search(
        keywords or query, k=candidates, doc_ids=doc_ids, versions=versions
    )
    return fused_passages(
        index,
        vector_hits,
        keyword_hits,
        top_k=top_k,
        fusion=fusion,
        vector_weight=vector_weight,
    )


def check_weight(fusion: Fusion, vector_weight: float) -> None:
    """Refuse a vector weight score fusion cannot use."""
    if fusion == "score" and not 0.0 <= vector_weight <= 1.0:
        raise ConfigError(f"vector weight ({vector_weight}) must be between 0 and 1")


def fused_passages(
    index: ChunkStore,
    vector_hits: Sequence[tuple[str, float]],
    keyword_hits: Sequence[tuple[str, float]],
    *,
    top_k: int,
    fusion: Fusion,
    vector_weight: float,
) -> list[Passage]:
    """The `top_k` passages of the two candidate lists fused (see `hybrid_search`)."""
    vector_rank = {chunk_id: rank for rank, (chunk_id, _) in enumerate(vector_hits, start=1)}
    keyword_rank = {chunk_id: rank for rank, (chunk_id, _) in enumerate(keyword_hits, start=1)}
    if fusion == "score":
        fused = fuse_by_score(
            [vector_hits, keyword_hits], weights=[vector_weight, 1.0 - vector_weight]
        )[:top_k]
    else:
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
