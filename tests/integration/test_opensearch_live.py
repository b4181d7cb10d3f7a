"""The OpenSearch adapter against a real cluster: set OPENSEARCH_URL to run it.

    docker compose up -d
    OPENSEARCH_URL=http://127.0.0.1:9200 .venv/bin/pytest tests/integration -q

The URL must be on loopback (tests/conftest.py fails any other connection); a `https://`
URL is signed with SigV4 for OPENSEARCH_SERVICE (default "es") in AWS_REGION.
Every test writes to its own randomly named index and drops it at the end. Both write modes
run against the same cluster: a local cluster accepts documents without `_id`, so the
Serverless path (search, then bulk deletes by `_id`) is exercised too.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import numpy as np
import pytest
from opensearchpy import OpenSearch

from docchat.adapters.opensearch_index import OpenSearchIndex, client_for
from docchat.models import Chunk

OPENSEARCH_URL = os.environ.get("OPENSEARCH_URL", "")
if not OPENSEARCH_URL:
    pytest.skip(
        "set OPENSEARCH_URL (e.g. http://127.0.0.1:9200 after `docker compose up -d`) "
        "to run the live OpenSearch tests",
        allow_module_level=True,
    )

DIMENSION = 8


def _chunks(doc_id: str, version: str, texts: list[str]) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=f"{doc_id}:{version}:{i:05d}",
            doc_id=doc_id,
            version=version,
            source=f"/docs/{doc_id}.pdf",
            title=doc_id.title(),
            headings=["Orchard"],
            page_start=i + 1,
            page_end=i + 1,
            text=text,
            embedding_model="test-live",
        )
        for i, text in enumerate(texts)
    ]


def _vectors(axes: list[int]) -> np.ndarray:
    """One unit vector per chunk, along the given axis: exact and normalised."""
    return np.eye(DIMENSION, dtype=np.float32)[axes]


@pytest.fixture
def client() -> Iterator[OpenSearch]:
    client = client_for(
        OPENSEARCH_URL,
        region=os.environ.get("AWS_REGION", "us-east-1"),
        service=os.environ.get("OPENSEARCH_SERVICE", "es"),
    )
    yield client
    client.close()


@pytest.fixture(params=[False, True], ids=["domain", "serverless-path"])
def index(request: pytest.FixtureRequest, client: OpenSearch) -> Iterator[OpenSearchIndex]:
    live = OpenSearchIndex(
        client=client,
        embedding_model="test-live",
        dimension=DIMENSION,
        serverless=request.param,
        index_prefix=f"docchat-test-{uuid.uuid4().hex[:10]}",
    )
    live.ensure_index()
    try:
        yield live
    finally:
        client.indices.delete(index=live.index_name, ignore=404)


def test_live_search_finalize_and_delete(index: OpenSearchIndex, client: OpenSearch) -> None:
    def refresh() -> None:
        client.indices.refresh(index=index.index_name)

    # Given a document in a first version and another document
    old = _chunks("a", "v1", ["apples grow on trees", "ripe pears are sweet", "plums are purple"])
    other = _chunks("b", "v1", ["pears and quinces in winter"])
    index.write_chunks(old, _vectors([0, 1, 2]))
    index.write_chunks(other, _vectors([3]))
    refresh()

    # Then both searches find the expected chunks, and filters hold
    ((best, score),) = index.vector_search(_vectors([1])[0], k=1)
    assert (best, score) == (old[1].chunk_id, 2.0)  # faiss inner product: score = 1 + <x, y>
    assert [c for c, _ in index.keyword_search("pear", k=5, doc_ids=["a"])] == [old[1].chunk_id]
    assert {c for c, _ in index.keyword_search("pears", k=5)} == {
        old[1].chunk_id,
        other[0].chunk_id,
    }
    filtered = index.vector_search(_vectors([3])[0], k=2, doc_ids=["a"])
    assert len(filtered) == 2
    assert {c for c, _ in filtered} <= {c.chunk_id for c in old}
    assert index.chunks([old[2].chunk_id]) == {old[2].chunk_id: old[2]}

    # When a new version is written, one chunk twice (a retried request), and finalized
    new = _chunks("a", "v2", ["cherries in june", "figs in august"])
    index.write_chunks(new, _vectors([4, 5]))
    index.write_chunks(new[:1], _vectors([4]))
    refresh()
    counts = index.finalize_document("a", "v2")
    refresh()

    # Then only the new version remains, once
    assert counts == {"old": 3, "duplicates": 1 if index.serverless else 0}
    assert index.count("a") == 2
    assert index.keyword_search("apples", k=5) == []
    assert index.chunks([c.chunk_id for c in [*old, *new]]) == {c.chunk_id: c for c in new}

    # When the document is deleted, the other one stays
    assert index.delete_document("a") == 2
    refresh()
    assert index.count("a") == 0
    assert index.count() == 1
