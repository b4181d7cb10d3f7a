"""The OpenSearch adapter, offline: a real opensearch-py client over a recording connection."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from opensearchpy import Connection, OpenSearch, Urllib3AWSV4SignerAuth, Urllib3HttpConnection
from opensearchpy import ConnectionError as OpenSearchConnectionError

from docchat.adapters.opensearch_index import OpenSearchIndex, client_for
from docchat.errors import (
    ConfigError,
    SearchIndexError,
    SearchIndexNotReadyError,
    SearchIndexUnavailableError,
)
from docchat.models import Chunk

INDEX = "docchat-chunks-test-words-4"
OK_BULK: dict[str, Any] = {"took": 1, "errors": False, "items": []}
# https://docs.opensearch.org/2.13/api-reference/index-apis/put-mapping (its response)
ACK = {"acknowledged": True}


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, str]
    body: bytes | None
    timeout: float | None = None

    def json(self) -> Any:
        assert self.body is not None
        return json.loads(self.body)

    def ndjson(self) -> list[Any]:
        assert self.body is not None
        return [json.loads(line) for line in self.body.decode().splitlines()]


@dataclass
class FakeOpenSearch:
    """Answers requests in order with canned (status, body) replies or raises, recording each."""

    replies: list[tuple[int, Any] | Exception] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    def reply(self, status: int, body: Any = None) -> FakeOpenSearch:
        self.replies.append((status, body))
        return self

    def fail(self, error: Exception) -> FakeOpenSearch:
        self.replies.append(error)
        return self

    def client(self) -> OpenSearch:
        server = self

        class RecordingConnection(Connection):
            def perform_request(
                self,
                method: str,
                url: str,
                params: Mapping[str, Any] | None = None,
                body: bytes | None = None,
                timeout: float | None = None,
                ignore: Collection[int] = (),
                headers: Mapping[str, str] | None = None,
            ) -> Any:
                query = {
                    k: v.decode() if isinstance(v, bytes) else str(v)
                    for k, v in (params or {}).items()
                }
                server.requests.append(Request(method, url, query, body, timeout))
                assert server.replies, f"unexpected request {method} {url}"
                reply = server.replies.pop(0)
                if isinstance(reply, Exception):
                    raise reply
                status, payload = reply
                raw = "" if payload is None else json.dumps(payload)
                if not 200 <= status < 300 and status not in ignore:
                    self._raise_error(status, raw, "application/json")
                return status, {"content-type": "application/json"}, raw

        return OpenSearch(
            hosts=[{"host": "127.0.0.1", "port": 9200}],
            connection_class=RecordingConnection,
            max_retries=0,
        )


def _index(server: FakeOpenSearch, *, serverless: bool, **options: Any) -> OpenSearchIndex:
    return OpenSearchIndex(
        client=server.client(),
        embedding_model="test-words",
        dimension=4,
        serverless=serverless,
        **options,
    )


def _chunk(i: int, *, doc_id: str = "a", version: str = "v1", text: str = "") -> Chunk:
    return Chunk(
        chunk_id=f"{doc_id}:{version}:{i:05d}",
        doc_id=doc_id,
        version=version,
        source=f"s3://bucket/{doc_id}.pdf",
        title="Fruit",
        headings=["Trees", "Pears"],
        page_start=i + 1,
        page_end=i + 2,
        page_breaks=[7],
        text=text or f"text {i}",
    )


def _stored(chunk: Chunk, vector: list[float]) -> dict[str, Any]:
    return {
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "version": chunk.version,
        "source": chunk.source,
        "title": chunk.title,
        "headings": chunk.headings,
        "page_start": chunk.page_start,
        "page_end": chunk.page_end,
        "page_breaks": chunk.page_breaks,
        "text": chunk.text,
        "embedding_model": "test-words",
        # BM25 reads the chunk with its context: file name, title, heading path
        "contextual_text": f"{chunk.doc_id}\nFruit\nTrees > Pears\n{chunk.text}",
        "vector": vector,
    }


def _hits(*chunk_ids: str) -> dict[str, Any]:
    hits = [
        {"_id": f"id-{i}", "_score": 2.0 - i / 10, "_source": {"chunk_id": chunk_id}}
        for i, chunk_id in enumerate(chunk_ids)
    ]
    return {"hits": {"hits": hits}}


def _scan_page(*hits: tuple[str, str, str]) -> dict[str, Any]:
    """A page of (_id, chunk_id, version) hits sorted by chunk_id."""
    return {
        "hits": {
            "hits": [
                {"_id": _id, "_source": {"chunk_id": c, "version": v}, "sort": [c]}
                for _id, c, v in hits
            ]
        }
    }


def _scan_body(doc_id: str, *, size: int, after: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "size": size,
        "_source": ["chunk_id", "version"],
        "query": {"term": {"doc_id": doc_id}},
        "sort": [{"chunk_id": "asc"}],
        "track_total_hits": False,
    }
    if after is not None:
        body["search_after"] = [after]
    return body


VECTORS = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 0.5, 0.5, 0.0]], dtype=np.float32)


# --- index name and creation -------------------------------------------------------------------


def test_opensearch_index_name_carries_model_and_dimension() -> None:
    server = FakeOpenSearch()

    titan = OpenSearchIndex(
        client=server.client(),
        embedding_model="amazon.titan-embed-text-v2:0",
        dimension=1024,
        serverless=True,
    )
    cohere = OpenSearchIndex(
        client=server.client(),
        embedding_model="cohere.embed-english-v3",
        dimension=1024,
        serverless=True,
    )
    small_titan = OpenSearchIndex(
        client=server.client(),
        embedding_model="amazon.titan-embed-text-v2:0",
        dimension=256,
        serverless=True,
    )

    assert titan.index_name == "docchat-chunks-amazon-titan-embed-text-v2-0-1024"
    assert cohere.index_name == "docchat-chunks-cohere-embed-english-v3-1024"
    assert small_titan.index_name == "docchat-chunks-amazon-titan-embed-text-v2-0-256"


def test_opensearch_index_rejects_an_unsafe_prefix() -> None:
    with pytest.raises(ConfigError, match="'Docs Chunks'"):
        _index(FakeOpenSearch(), serverless=False, index_prefix="Docs Chunks")


def test_opensearch_index_creates_the_index_with_knn_and_bm25_mapping() -> None:
    server = FakeOpenSearch().reply(404).reply(200, {"acknowledged": True})

    _index(server, serverless=True).ensure_index()

    head, put = server.requests
    assert (head.method, head.path) == ("HEAD", f"/{INDEX}")
    assert (put.method, put.path) == ("PUT", f"/{INDEX}")
    english = {"type": "text", "analyzer": "english"}
    assert put.json() == {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "vector": {
                    "type": "knn_vector",
                    "dimension": 4,
                    "method": {"name": "hnsw", "engine": "faiss", "space_type": "innerproduct"},
                },
                "text": english,
                "contextual_text": english,
                "title": english,
                "headings": english,
                "chunk_id": {"type": "keyword"},
                "doc_id": {"type": "keyword"},
                "version": {"type": "keyword"},
                "source": {"type": "keyword"},
                "embedding_model": {"type": "keyword"},
                "page_start": {"type": "integer"},
                "page_end": {"type": "integer"},
                "page_breaks": {"type": "integer", "index": False, "doc_values": False},
                "page_labels": {"type": "keyword", "index": False, "doc_values": False},
                "file_name": {"type": "keyword", "index": False, "doc_values": False},
            },
        },
    }


def test_opensearch_index_ensure_index_maps_the_contextual_field_of_an_existing_index() -> None:
    # An index made before chunks carried their contextual text (or an Office document's page
    # labels, or a synced file's name): its strict mapping would refuse them, so the fields are
    # added (adding a field leaves the rest alone).
    server = FakeOpenSearch().reply(200).reply(200, ACK)

    _index(server, serverless=False).ensure_index()

    head, mapping = server.requests
    assert (head.method, head.path) == ("HEAD", f"/{INDEX}")
    assert (mapping.method, mapping.path) == ("PUT", f"/{INDEX}/_mapping")
    assert mapping.json() == {
        "properties": {
            "contextual_text": {"type": "text", "analyzer": "english"},
            "page_labels": {"type": "keyword", "index": False, "doc_values": False},
            "file_name": {"type": "keyword", "index": False, "doc_values": False},
        }
    }


def test_opensearch_index_ensure_index_accepts_a_concurrent_creation() -> None:
    already = {
        "error": {"type": "resource_already_exists_exception", "reason": "index exists"},
        "status": 400,
    }
    server = FakeOpenSearch().reply(404).reply(400, already).reply(200, ACK)

    _index(server, serverless=False).ensure_index()

    assert [(r.method, r.path) for r in server.requests] == [
        ("HEAD", f"/{INDEX}"),
        ("PUT", f"/{INDEX}"),
        ("PUT", f"/{INDEX}/_mapping"),
    ]


# --- writing -----------------------------------------------------------------------------------


def test_opensearch_index_writes_serverless_chunks_without_ids() -> None:
    server = FakeOpenSearch().reply(200).reply(200, ACK).reply(200, OK_BULK)
    chunks = [_chunk(0), _chunk(1)]

    _index(server, serverless=True).write_chunks(chunks, VECTORS)

    bulk = server.requests[2]
    assert (bulk.method, bulk.path) == ("POST", f"/{INDEX}/_bulk")
    assert bulk.ndjson() == [
        {"index": {}},
        _stored(chunks[0], [1.0, 0.0, 0.0, 0.0]),
        {"index": {}},
        _stored(chunks[1], [0.0, 0.5, 0.5, 0.0]),
    ]


def test_opensearch_index_writes_domain_chunks_with_chunk_ids() -> None:
    server = FakeOpenSearch().reply(200).reply(200, ACK).reply(200, OK_BULK)
    chunks = [_chunk(0), _chunk(1)]

    _index(server, serverless=False).write_chunks(chunks, VECTORS)

    assert server.requests[2].ndjson() == [
        {"index": {"_id": "a:v1:00000"}},
        _stored(chunks[0], [1.0, 0.0, 0.0, 0.0]),
        {"index": {"_id": "a:v1:00001"}},
        _stored(chunks[1], [0.0, 0.5, 0.5, 0.0]),
    ]


def test_opensearch_index_splits_bulk_requests_by_bytes() -> None:
    # Given the size of five same-sized chunks sent in one request
    chunks = [_chunk(i) for i in range(5)]
    vectors = np.eye(5, 4, dtype=np.float32)
    one = FakeOpenSearch().reply(200).reply(200, ACK).reply(200, OK_BULK)
    _index(one, serverless=True).write_chunks(chunks, vectors)
    body = one.requests[2].body
    assert body is not None and len(body) % 5 == 0
    per_chunk = len(body) // 5

    # When the limit fits two and a half chunks
    limit = 2 * per_chunk + per_chunk // 2
    split = FakeOpenSearch().reply(200).reply(200, ACK).reply(200, OK_BULK).reply(200, OK_BULK)
    split.reply(200, OK_BULK)
    _index(split, serverless=True, max_bulk_bytes=limit).write_chunks(chunks, vectors)

    # Then three requests carry 2, 2 and 1 chunks, in order, each within the limit
    bulks = split.requests[2:]
    assert [len(r.ndjson()) // 2 for r in bulks] == [2, 2, 1]
    assert all(r.body is not None and len(r.body) <= limit for r in bulks)
    written = [line["chunk_id"] for r in bulks for line in r.ndjson()[1::2]]
    assert written == [c.chunk_id for c in chunks]


def test_opensearch_index_sends_an_oversized_chunk_alone() -> None:
    server = FakeOpenSearch().reply(200).reply(200, ACK).reply(200, OK_BULK).reply(200, OK_BULK)

    _index(server, serverless=True, max_bulk_bytes=10).write_chunks([_chunk(0), _chunk(1)], VECTORS)

    assert [len(r.ndjson()) for r in server.requests[2:]] == [2, 2]


def test_opensearch_index_bulk_item_429_is_unavailable() -> None:
    response = {
        "errors": True,
        "items": [
            {"index": {"status": 201, "result": "created"}},
            {
                "index": {
                    "status": 429,
                    "error": {"type": "es_rejected_execution_exception", "reason": "queue full"},
                }
            },
        ],
    }
    server = FakeOpenSearch().reply(200).reply(200, ACK).reply(200, response)

    with pytest.raises(SearchIndexUnavailableError, match=r"1 of 2 items.*retry later"):
        _index(server, serverless=True).write_chunks([_chunk(0), _chunk(1)], VECTORS)


def test_opensearch_index_bulk_item_mapping_failure_is_a_search_index_error() -> None:
    refused = {
        "status": 400,
        "error": {
            "type": "mapper_parsing_exception",
            "reason": "failed to parse field [page_start] of type [integer]",
        },
    }
    response = {
        "errors": True,
        "items": [{"index": {"status": 201}}, {"index": refused}],
    }
    server = FakeOpenSearch().reply(200).reply(200, ACK).reply(200, response)

    with pytest.raises(SearchIndexError) as caught:
        _index(server, serverless=False).write_chunks([_chunk(0), _chunk(1)], VECTORS)

    assert not isinstance(caught.value, SearchIndexUnavailableError)
    assert "a:v1:00001" in str(caught.value)
    assert "mapper_parsing_exception: failed to parse field [page_start]" in str(caught.value)


def test_opensearch_index_connection_error_is_unavailable() -> None:
    refused = OpenSearchConnectionError("N/A", "connection refused", OSError("refused"))
    server = FakeOpenSearch().fail(refused)

    with pytest.raises(SearchIndexUnavailableError, match="could not reach OpenSearch"):
        _index(server, serverless=True).ensure_index()


def test_opensearch_index_503_is_unavailable_and_403_says_to_grant_access() -> None:
    server = FakeOpenSearch().reply(503, {"error": "unavailable"})
    server.reply(403, {"error": {"type": "security_exception", "reason": "no permission"}})
    index = _index(server, serverless=True)

    with pytest.raises(SearchIndexUnavailableError, match="503"):
        index.count()
    with pytest.raises(SearchIndexError, match="data access policy"):
        index.count()


def test_opensearch_index_serverless_write_refused_is_not_ready_yet() -> None:
    # A new collection's data access policy takes minutes to apply: the first writes are
    # refused with 403, and the Index step must retry them rather than fail the document.
    denied = {"error": {"type": "security_exception", "reason": "no permissions for [indices]"}}
    serverless = _index(FakeOpenSearch().reply(403, denied), serverless=True)
    domain = _index(FakeOpenSearch().reply(403, denied), serverless=False)
    reading = _index(FakeOpenSearch().reply(403, denied), serverless=True)

    with pytest.raises(SearchIndexNotReadyError) as caught:
        serverless.ensure_index()
    assert "data access policy" in str(caught.value)
    assert "SearchIndexRoleArns" in str(caught.value)
    with pytest.raises(SearchIndexError) as refused:
        domain.ensure_index()
    assert not isinstance(refused.value, SearchIndexUnavailableError)
    with pytest.raises(SearchIndexError) as read:
        reading.count()
    assert not isinstance(read.value, SearchIndexUnavailableError)


def test_opensearch_index_real_transport_to_a_closed_port_is_unavailable() -> None:
    index = OpenSearchIndex(
        client=client_for("http://127.0.0.1:9", region="us-east-1", service="aoss"),
        embedding_model="test-words",
        dimension=4,
        serverless=True,
    )

    with pytest.raises(SearchIndexUnavailableError, match="retry"):
        index.count()


# --- searching ---------------------------------------------------------------------------------


def test_opensearch_index_vector_search_sends_knn_query() -> None:
    server = FakeOpenSearch().reply(200, _hits("a:v1:00002", "a:v1:00000", "a:v1:00002"))

    hits = _index(server, serverless=True).vector_search(
        np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float32), k=3
    )

    request = server.requests[0]
    assert (request.method, request.path) == ("POST", f"/{INDEX}/_search")
    assert request.json() == {
        "size": 3,
        "_source": ["chunk_id"],
        "query": {"knn": {"vector": {"vector": [0.0, 1.0, 0.0, 0.0], "k": 3}}},
    }
    assert hits == [("a:v1:00002", 2.0), ("a:v1:00000", 1.9)]


def test_opensearch_index_vector_search_filters_documents_inside_knn() -> None:
    server = FakeOpenSearch().reply(200, _hits("b:v1:00000"))

    hits = _index(server, serverless=True).vector_search(
        np.array([0.0, 0.0, 0.0, 1.0], dtype=np.float32), k=5, doc_ids=["b", "c"]
    )

    assert server.requests[0].json() == {
        "size": 5,
        "_source": ["chunk_id"],
        "query": {
            "knn": {
                "vector": {
                    "vector": [0.0, 0.0, 0.0, 1.0],
                    "k": 5,
                    "filter": {"terms": {"doc_id": ["b", "c"]}},
                }
            }
        },
    }
    assert hits == [("b:v1:00000", 2.0)]


def test_opensearch_index_vector_search_keeps_indexed_versions_inside_knn() -> None:
    server = FakeOpenSearch().reply(200, _hits("b:v2:00000"))

    hits = _index(server, serverless=True).vector_search(
        np.array([0.0, 0.0, 0.0, 1.0], dtype=np.float32), k=5, versions={"b": "v2", "c": "v1"}
    )

    assert server.requests[0].json() == {
        "size": 5,
        "_source": ["chunk_id"],
        "query": {
            "knn": {
                "vector": {
                    "vector": [0.0, 0.0, 0.0, 1.0],
                    "k": 5,
                    "filter": {
                        "bool": {
                            "filter": [
                                {"terms": {"doc_id": ["b", "c"]}},
                                {"terms": {"version": ["v2", "v1"]}},
                            ]
                        }
                    },
                }
            }
        },
    }
    assert hits == [("b:v2:00000", 2.0)]


def test_opensearch_index_keyword_search_keeps_indexed_versions_of_chosen_documents() -> None:
    server = FakeOpenSearch().reply(200, _hits())

    _index(server, serverless=True).keyword_search(
        "pears", k=4, doc_ids=["c", "x"], versions={"b": "v2", "c": "v1", "d": "v1"}
    )

    assert server.requests[0].json()["query"]["bool"]["filter"] == [
        {"terms": {"doc_id": ["c"]}},
        {"terms": {"version": ["v1"]}},
    ]


def test_opensearch_index_search_without_indexed_documents_sends_nothing() -> None:
    server = FakeOpenSearch()
    index = _index(server, serverless=True)

    assert index.keyword_search("pears", k=5, versions={}) == []
    assert index.keyword_search("pears", k=5, doc_ids=["x"], versions={"b": "v2"}) == []
    assert index.vector_search(np.ones(4, dtype=np.float32), k=5, versions={}) == []
    assert server.requests == []


def test_opensearch_index_keyword_search_sends_multi_match() -> None:
    server = FakeOpenSearch().reply(200, _hits("a:v1:00001"))

    hits = _index(server, serverless=False).keyword_search("ripe pears", k=10)

    assert server.requests[0].json() == {
        "size": 10,
        "_source": ["chunk_id"],
        "query": {
            "bool": {
                "must": [
                    {
                        "multi_match": {
                            "query": "ripe pears",
                            "fields": ["contextual_text", "text", "title^2", "headings^3"],
                            "type": "best_fields",
                        }
                    }
                ]
            }
        },
    }
    assert hits == [("a:v1:00001", 2.0)]


def test_opensearch_index_keyword_search_filters_documents() -> None:
    server = FakeOpenSearch().reply(200, _hits())

    hits = _index(server, serverless=False).keyword_search("pears", k=4, doc_ids=["a"])

    assert server.requests[0].json()["query"] == {
        "bool": {
            "must": [
                {
                    "multi_match": {
                        "query": "pears",
                        "fields": ["contextual_text", "text", "title^2", "headings^3"],
                        "type": "best_fields",
                    }
                }
            ],
            "filter": [{"terms": {"doc_id": ["a"]}}],
        }
    }
    assert hits == []


def test_opensearch_index_search_skips_requests_that_cannot_match() -> None:
    server = FakeOpenSearch()
    index = _index(server, serverless=True)

    assert index.keyword_search("   ", k=5) == []
    assert index.keyword_search("pears", k=5, doc_ids=[]) == []
    assert index.vector_search(np.ones(4, dtype=np.float32), k=0) == []
    assert index.chunks([]) == {}
    assert server.requests == []


def test_opensearch_index_search_before_any_ingestion_finds_nothing() -> None:
    missing = {"error": {"type": "index_not_found_exception", "reason": "no such index"}}
    server = FakeOpenSearch().reply(404, missing).reply(404, missing)
    index = _index(server, serverless=True)

    assert index.keyword_search("pears", k=5) == []
    assert index.count("a") == 0


def test_opensearch_index_chunks_fetches_by_chunk_id_and_drops_duplicates() -> None:
    first, second = _chunk(0), _chunk(1)
    stored = [
        {"_id": "x1", "_source": first.model_dump()},
        {"_id": "x2", "_source": second.model_dump()},
        {"_id": "x3", "_source": first.model_dump()},
    ]
    server = FakeOpenSearch().reply(200, {"hits": {"hits": stored}})

    found = _index(server, serverless=True).chunks([first.chunk_id, second.chunk_id])

    assert server.requests[0].json() == {
        "size": 8,
        "_source": [
            "chunk_id",
            "doc_id",
            "version",
            "source",
            "title",
            "headings",
            "page_start",
            "page_end",
            "page_breaks",
            "page_labels",
            "file_name",
            "text",
            "embedding_model",
        ],
        "query": {"terms": {"chunk_id": ["a:v1:00000", "a:v1:00001"]}},
    }
    assert found == {first.chunk_id: first, second.chunk_id: second}


def test_opensearch_index_document_chunks_of_one_version_fetch_only_that_version() -> None:
    new = _chunk(0, version="v2")
    page = _scan_page(("x1", "a:v1:00000", "v1"), ("x2", new.chunk_id, "v2"))
    server = FakeOpenSearch().reply(200, page)
    server.reply(200, {"hits": {"hits": [{"_id": "x2", "_source": new.model_dump()}]}})

    chunks = _index(server, serverless=True).document_chunks("a", version="v2")

    assert server.requests[0].json() == _scan_body("a", size=1000)
    assert server.requests[1].json()["query"] == {"terms": {"chunk_id": [new.chunk_id]}}
    assert chunks == [new]


def test_opensearch_index_counts_a_documents_chunks() -> None:
    server = FakeOpenSearch().reply(200, {"count": 7})

    assert _index(server, serverless=True).count("a") == 7
    request = server.requests[0]
    assert (request.method, request.path) == ("POST", f"/{INDEX}/_count")
    assert request.json() == {"query": {"term": {"doc_id": "a"}}}


# --- replacing and deleting --------------------------------------------------------------------


def test_opensearch_index_finalize_on_serverless_deletes_old_versions_and_duplicates() -> None:
    # Given two old chunks and one kept chunk stored twice, found three hits per page
    server = FakeOpenSearch()
    server.reply(
        200,
        _scan_page(
            ("o1", "a:v1:00000", "v1"), ("o2", "a:v1:00001", "v1"), ("n1", "a:v2:00000", "v2")
        ),
    )
    server.reply(
        200,
        _scan_page(
            ("n1", "a:v2:00000", "v2"), ("n1b", "a:v2:00000", "v2"), ("n2", "a:v2:00001", "v2")
        ),
    )
    server.reply(200, _scan_page(("n2", "a:v2:00001", "v2")))
    server.reply(200, OK_BULK)

    # When the new version is finalized
    counts = _index(server, serverless=True, page_size=3).finalize_document("a", "v2")

    # Then a page boundary inside a chunk id's copies holds that chunk id back for the next page
    assert counts == {"old": 2, "duplicates": 1}
    searches = server.requests[:3]
    assert {(r.method, r.path) for r in searches} == {("POST", f"/{INDEX}/_search")}
    assert [r.json() for r in searches] == [
        _scan_body("a", size=3),
        _scan_body("a", size=3, after="a:v1:00001"),
        _scan_body("a", size=3, after="a:v2:00000"),
    ]
    delete = server.requests[3]
    assert (delete.method, delete.path) == ("POST", f"/{INDEX}/_bulk")
    assert delete.ndjson() == [
        {"delete": {"_id": "o1"}},
        {"delete": {"_id": "o2"}},
        {"delete": {"_id": "n1b"}},
    ]
    assert not any("_delete_by_query" in r.path for r in server.requests)


def test_opensearch_index_finalize_on_a_domain_deletes_old_versions_by_query() -> None:
    server = FakeOpenSearch().reply(200, {"deleted": 3, "failures": []})

    counts = _index(server, serverless=False).finalize_document("a", "v2")

    assert counts == {"old": 3, "duplicates": 0}
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", f"/{INDEX}/_delete_by_query")
    assert request.params == {"conflicts": "proceed", "refresh": "true"}
    assert request.json() == {
        "query": {
            "bool": {
                "filter": [{"term": {"doc_id": "a"}}],
                "must_not": [{"term": {"version": "v2"}}],
            }
        }
    }


def test_opensearch_index_delete_document_on_serverless_deletes_every_hit() -> None:
    server = FakeOpenSearch()
    server.reply(200, _scan_page(("o1", "a:v1:00000", "v1"), ("n1", "a:v2:00000", "v2")))
    server.reply(
        200,
        {
            "errors": False,
            "items": [
                {"delete": {"status": 200, "result": "deleted"}},
                {"delete": {"status": 404, "result": "not_found"}},
            ],
        },
    )

    deleted = _index(server, serverless=True).delete_document("a")

    assert deleted == 2
    assert server.requests[0].json() == _scan_body("a", size=1000)
    assert server.requests[1].ndjson() == [{"delete": {"_id": "o1"}}, {"delete": {"_id": "n1"}}]


def test_opensearch_index_delete_document_on_a_domain_uses_delete_by_query() -> None:
    server = FakeOpenSearch().reply(200, {"deleted": 4, "failures": []})

    assert _index(server, serverless=False).delete_document("a") == 4
    assert server.requests[0].json() == {"query": {"term": {"doc_id": "a"}}}


def test_opensearch_index_delete_by_query_failure_is_reported() -> None:
    failure = {
        "id": "a:v1:00000",
        "status": 429,
        "cause": {"type": "es_rejected_execution_exception", "reason": "busy"},
    }
    server = FakeOpenSearch().reply(200, {"deleted": 0, "failures": [failure]})

    with pytest.raises(SearchIndexUnavailableError, match="a:v1:00000"):
        _index(server, serverless=False).delete_document("a")


# --- a collection waking from zero -------------------------------------------------------------


class WakingCollection(ThreadingHTTPServer):
    """A search endpoint on loopback that answers 503 until `asleep_s` have passed, then hits.

    A NextGen collection scaled to zero needs 10-30 s before its first answer
    (https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-scale-to-zero.html);
    whether it holds the request or refuses it meanwhile is not documented, so the adapter
    must survive both: refusals here, held requests by the long per-attempt timeout.
    """

    def __init__(self, asleep_s: float) -> None:
        super().__init__(("127.0.0.1", 0), _WakingHandler)
        self.awake_at = time.monotonic() + asleep_s
        self.requests = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _WakingHandler(BaseHTTPRequestHandler):
    server: WakingCollection

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.requests += 1
        awake = time.monotonic() >= self.server.awake_at
        status, body = (200, _hits("a:v1:00000")) if awake else (503, {"error": "waking"})
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def waking() -> Iterator[Callable[[float], WakingCollection]]:
    servers: list[WakingCollection] = []

    def start(asleep_s: float) -> WakingCollection:
        server = WakingCollection(asleep_s)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _real_index(url: str, **options: Any) -> OpenSearchIndex:
    client = client_for(url, region="us-east-1", service="aoss")
    return OpenSearchIndex(
        client=client, embedding_model="test-words", dimension=4, serverless=True, **options
    )


def test_opensearch_index_search_waits_for_a_waking_collection(
    waking: Callable[[float], WakingCollection],
) -> None:
    # Given a collection that refuses searches for its first 0.3 s, and the default patience
    server = waking(0.3)

    # When searching
    hits = _real_index(server.url).keyword_search("pears", k=1)

    # Then the search is answered once it is awake
    assert hits == [("a:v1:00000", 2.0)]
    assert server.requests > 4  # more than the transport's own immediate retries


def test_opensearch_index_search_gives_up_when_its_wait_is_spent(
    waking: Callable[[float], WakingCollection],
) -> None:
    server = waking(60.0)
    index = _real_index(server.url, wake_s=0.3, wake_pause_s=0.05)

    started = time.monotonic()
    with pytest.raises(SearchIndexUnavailableError, match="503"):
        index.vector_search(np.ones(4, dtype=np.float32), k=1)

    assert 0.3 <= time.monotonic() - started < 2.0


def test_opensearch_index_search_attempt_may_take_the_whole_wait() -> None:
    server = FakeOpenSearch().reply(200, _hits()).reply(200, _hits())
    index = _index(server, serverless=True)

    index.keyword_search("pears", k=1)
    index.vector_search(np.ones(4, dtype=np.float32), k=1)

    # A request held 10-30 s while the collection wakes is answered, not cut off.
    assert all(r.timeout is not None and 59 < r.timeout <= 60 for r in server.requests)


def test_opensearch_index_search_of_an_unreachable_endpoint_fails_at_once() -> None:
    index = _real_index("http://127.0.0.1:9")

    started = time.monotonic()
    with pytest.raises(SearchIndexUnavailableError, match="could not reach OpenSearch"):
        index.keyword_search("pears", k=1)

    assert time.monotonic() - started < 5.0


# --- client ------------------------------------------------------------------------------------


def test_client_for_plain_http_has_no_auth() -> None:
    client = client_for("http://127.0.0.1:9200", region="eu-west-1", service="es")

    connection = client.transport.get_connection()
    assert isinstance(connection, Urllib3HttpConnection)
    assert connection.host == "http://127.0.0.1:9200"
    assert connection.http_auth is None
    # A collection waking from zero answers after 10-30 s: an attempt may take 60 s, and is
    # not repeated when it times out (searches retry within their own deadline).
    assert connection.timeout == 60
    assert client.transport.max_retries == 3
    assert tuple(client.transport.retry_on_status) == (429, 502, 503, 504)
    assert client.transport.retry_on_timeout is False


def test_client_for_https_signs_with_sigv4_for_the_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")

    client = client_for(
        "https://abc.eu-west-1.aoss.amazonaws.com", region="eu-west-1", service="aoss"
    )

    connection = client.transport.get_connection()
    assert connection.host == "https://abc.eu-west-1.aoss.amazonaws.com:443"
    assert connection.use_ssl is True
    assert isinstance(connection.http_auth, Urllib3AWSV4SignerAuth)
    headers = connection.http_auth("GET", "https://abc.eu-west-1.aoss.amazonaws.com/", None)
    assert "/eu-west-1/aoss/aws4_request" in headers["Authorization"]


def test_client_for_rejects_an_unknown_service() -> None:
    with pytest.raises(ConfigError, match="'aos'"):
        client_for("search-docs.eu-west-1.es.amazonaws.com", region="eu-west-1", service="aos")


def test_document_chunks_lists_a_documents_chunks_in_order() -> None:
    """Reading pages needs every chunk of one document, found by doc_id, in reading order."""
    from docchat.adapters.opensearch_index import OpenSearchIndex

    class Client:
        def __init__(self) -> None:
            self.bodies: list[dict[str, object]] = []

        def search(
            self, *, index: str, body: dict[str, object], request_timeout: float = 0
        ) -> dict[str, object]:
            self.bodies.append(body)
            if "sort" in body:
                ids = ["d:v:00001", "d:v:00000"]
                return {
                    "hits": {
                        "hits": [
                            {"_id": str(n), "_source": {"chunk_id": c, "version": "v"}, "sort": [c]}
                            for n, c in enumerate(ids)
                        ]
                    }
                }
            return {
                "hits": {
                    "hits": [
                        {
                            "_id": "x",
                            "_source": {
                                "chunk_id": c,
                                "doc_id": "d",
                                "version": "v",
                                "source": "b/d.pdf",
                                "title": "D",
                                "headings": [],
                                "page_start": n + 1,
                                "page_end": n + 1,
                                "page_breaks": [],
                                "text": f"page {n + 1}",
                                "embedding_model": "m",
                            },
                        }
                        for n, c in enumerate(["d:v:00000", "d:v:00001"])
                    ]
                }
            }

    client = Client()
    index = OpenSearchIndex(
        client=client,
        embedding_model="m",
        dimension=8,  # type: ignore[arg-type]
        serverless=True,
    )

    chunks = index.document_chunks("d")

    assert [c.text for c in chunks] == ["page 1", "page 2"]
    assert client.bodies[0]["query"] == {"term": {"doc_id": "d"}}
    assert client.bodies[1]["query"] == {"terms": {"chunk_id": ["d:v:00000", "d:v:00001"]}}


def test_opensearch_index_written_before_contextual_text_takes_new_chunks_and_finds_both() -> None:
    # Given an index made before chunks carried their contextual text (its strict mapping
    # lacks the field), holding a chunk written then
    from docchat.adapters.opensearch_index import CONTEXTUAL_FIELD, index_body
    from tests.lambda_layout.opensearch_stub import OpenSearchStub

    old_body = index_body(4)
    del old_body["mappings"]["properties"][CONTEXTUAL_FIELD]
    with OpenSearchStub() as stub:
        client = client_for(stub.endpoint, region="us-east-1", service="es")
        client.indices.create(index=INDEX, body=old_body)
        old = _chunk(0, doc_id="old", text="capital expenditures of the year")
        stub.indexes[INDEX].docs["old-id"] = old.model_dump() | {"vector": [0.5] * 4}
        index = OpenSearchIndex(
            client=client, embedding_model="test-words", dimension=4, serverless=True
        )

        # When a chunk of amazon-10k-2017.pdf is written now
        new = _chunk(0, doc_id="new", text="capital expenditures of the year").model_copy(
            update={"source": "bucket/reports/amazon-10k-2017.pdf"}
        )
        index.write_chunks([new], VECTORS[:1])

        # Then the file name finds the new chunk, and the old one is still found by its text
        assert [c for c, _ in index.keyword_search("amazon", k=5)] == [new.chunk_id]
        found = [c for c, _ in index.keyword_search("capital expenditures", k=5)]
        assert sorted(found) == sorted([new.chunk_id, old.chunk_id])
        assert index.chunks([new.chunk_id])[new.chunk_id].text == new.text


def test_opensearch_index_made_before_file_names_finds_a_synced_files_chunk_by_its_name() -> None:
    # Given an index made before chunks carried a file name their source does not end in
    from docchat.adapters.opensearch_index import index_body
    from tests.lambda_layout.opensearch_stub import OpenSearchStub

    old_body = index_body(4)
    del old_body["mappings"]["properties"]["file_name"]
    with OpenSearchStub() as stub:
        client = client_for(stub.endpoint, region="us-east-1", service="es")
        client.indices.create(index=INDEX, body=old_body)
        index = OpenSearchIndex(
            client=client, embedding_model="test-words", dimension=4, serverless=False
        )

        # When a chunk of a Drive file (its link ends in "view") named "Q3 figures.xlsx" is
        # written, beside an uploaded file's
        drive = "https://drive.google.com/file/d/1fIgUrEsQ3/view?usp=drivesdk"
        synced = _chunk(0, doc_id="synced").model_copy(
            update={"source": drive, "file_name": "Q3 figures.xlsx"}
        )
        index.write_chunks([synced, _chunk(1)], VECTORS)

        # Then its name finds it, "view" does not, and it is read back with its name
        assert [c for c, _ in index.keyword_search("figures", k=5)] == [synced.chunk_id]
        assert index.keyword_search("view", k=5) == []
        assert index.chunks([synced.chunk_id])[synced.chunk_id].file_name == "Q3 figures.xlsx"
        # an uploaded file's chunk is stored as before, without the field
        assert "file_name" not in stub.indexes[INDEX].docs[_chunk(1).chunk_id]
