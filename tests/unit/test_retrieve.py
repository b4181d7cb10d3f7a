"""Hybrid retrieval: reciprocal-rank fusion of k-NN and BM25 with an exact expected order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.models import Chunk, DocumentRecord
from docchat.search.hybrid import fuse_by_rank, hybrid_search
from tests.conftest import WordEmbedder

# Reciprocal-rank fusion, what these tests were written for (the tuned fusion is score fusion:
# test_evaluate.py); the vector weight only counts in score fusion.
RANK: dict[str, Any] = {"candidates": 50, "fusion": "rank", "vector_weight": 0.45}


def test_fuse_by_rank_sums_reciprocal_ranks() -> None:
    fused = fuse_by_rank([["a", "b", "c"], ["c", "a"]], k=60)

    assert [key for key, _ in fused] == ["a", "c", "b"]
    assert fused[0][1] == 1 / 61 + 1 / 62
    assert fused[1][1] == 1 / 63 + 1 / 61


def test_fuse_by_rank_keeps_first_seen_order_on_ties() -> None:
    assert [key for key, _ in fuse_by_rank([["x", "y"], ["y", "x"]])] == ["x", "y"]


CORPUS = {
    "solar": "solar panels convert sunlight into electricity on the roof",
    "wind": "wind turbines turn moving air into electricity",
    "battery": "a battery stores electricity for the night",
    "roof": "the roof was repaired after the storm",
    "bees": "bees make honey in the summer",
}


def _index(tmp_path: Path) -> SqliteIndex:
    embedder = WordEmbedder()
    index = SqliteIndex(tmp_path / "i.sqlite3", embedding_model=embedder.model_id, dimension=64)
    for doc_id, text in CORPUS.items():
        chunk = Chunk(
            chunk_id=f"{doc_id}:0",
            doc_id=doc_id,
            version="v",
            source=f"{doc_id}.pdf",
            title=doc_id,
            headings=[],
            page_start=1,
            page_end=1,
            text=text,
        )
        index.replace_document(
            DocumentRecord(doc_id=doc_id, source=f"{doc_id}.pdf", title=doc_id),
            [chunk],
            embedder.embed_documents([text]),
        )
    return index


def test_hybrid_search_order_on_small_corpus(tmp_path: Path) -> None:
    # Given a query whose words only BM25's stemmer links to "roof" ("storms" ~ "storm")
    index = _index(tmp_path)
    embedder = WordEmbedder()
    query = "storms and electricity"
    vector = [
        index.chunks([r])[r].doc_id
        for r, _ in index.vector_search(embedder.embed_query(query), k=50)
    ]
    keyword = [index.chunks([r])[r].doc_id for r, _ in index.keyword_search(query, k=50)]
    assert vector == ["wind", "battery", "solar", "roof", "bees"]
    assert keyword == ["roof", "wind", "battery", "solar"]

    # When both lists are fused by rank
    passages = hybrid_search(index, embedder, query, top_k=4, **RANK)

    # Then the keyword-only hit climbs to second place: 1/64+1/61 beats 1/62+1/63
    assert [p.chunk.doc_id for p in passages] == ["wind", "roof", "battery", "solar"]
    assert [(p.vector_rank, p.keyword_rank) for p in passages] == [(1, 2), (4, 1), (2, 3), (3, 4)]
    assert passages[1].score == 1 / 64 + 1 / 61


def test_hybrid_search_limited_to_documents(tmp_path: Path) -> None:
    passages = hybrid_search(
        _index(tmp_path), WordEmbedder(), "electricity", top_k=5, doc_ids=["wind", "bees"], **RANK
    )

    assert [p.chunk.doc_id for p in passages] == ["wind", "bees"]
    assert passages[1].keyword_rank is None  # only the vector side found it


def test_hybrid_search_empty_query_returns_nothing(tmp_path: Path) -> None:
    assert hybrid_search(_index(tmp_path), WordEmbedder(), "   ", top_k=5, **RANK) == []
