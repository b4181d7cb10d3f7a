"""The searches the OpenSearch index sends: scope filters (documents, indexed versions) and
hits read back as ranked chunk ids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from docchat.adapters.opensearch_index.mapping import KEYWORD_FIELDS

#: Largest `from + size` of one search (OpenSearch's `index.max_result_window` default).
MAX_RESULT_WINDOW = 10_000
#: `scope_filters` for a search no chunk can pass.
NOTHING: list[dict[str, Any]] = [{"match_none": {}}]


def scope_filters(
    doc_ids: Sequence[str] | None, versions: Mapping[str, str] | None
) -> list[dict[str, Any]]:
    """Term filters keeping the chunks of `doc_ids`, and of `versions` (doc_id -> version).

    No filter: every chunk; `NOTHING`: none can pass. Two documents at one version (the same
    bytes under two names) let through each other's chunks of it: the library checks each
    chunk's pair again, and this keeps the filter two `terms` lists, not a clause per document.
    """
    if versions is None:
        if doc_ids is None:
            return []
        return [{"terms": {"doc_id": list(doc_ids)}}] if doc_ids else NOTHING
    wanted = None if doc_ids is None else set(doc_ids)
    allowed = {d: v for d, v in versions.items() if wanted is None or d in wanted}
    if not allowed:
        return NOTHING
    return [
        {"terms": {"doc_id": list(allowed)}},
        {"terms": {"version": list(dict.fromkeys(allowed.values()))}},
    ]


def ranked(hits: Sequence[dict[str, Any]]) -> list[tuple[str, float]]:
    """(chunk id, score) in hit order, each chunk once (Serverless may hold duplicates)."""
    scores: dict[str, float] = {}
    for hit in hits:
        scores.setdefault(hit["_source"]["chunk_id"], float(hit["_score"]))
    return list(scores.items())


def knn_query(vector: list[float], *, k: int, filters: list[dict[str, Any]]) -> dict[str, Any]:
    """The k-NN search for `vector`'s top k, filtered inside the search."""
    knn: dict[str, Any] = {"vector": vector, "k": k}
    if filters:
        # Efficient k-NN filtering (faiss, OpenSearch >= 2.9): the k found all pass it.
        # https://docs.opensearch.org/docs/vector-search/filter-search-knn/efficient-knn-filtering
        knn["filter"] = filters[0] if len(filters) == 1 else {"bool": {"filter": filters}}
    return {"size": k, "_source": ["chunk_id"], "query": {"knn": {"vector": knn}}}


def keyword_query(query: str, *, k: int, filters: list[dict[str, Any]]) -> dict[str, Any]:
    """The BM25 search for `query`'s top k over KEYWORD_FIELDS."""
    match = {
        "multi_match": {
            "query": query,
            "fields": KEYWORD_FIELDS,
            "type": "best_fields",
        }
    }
    bool_query: dict[str, Any] = {"must": [match]}
    if filters:
        bool_query["filter"] = filters
    return {"size": k, "_source": ["chunk_id"], "query": {"bool": bool_query}}
