"""`docchat serve` over an OpenSearch cluster (DOCCHAT_OPENSEARCH_ENDPOINT): chunks go to the
cluster through the cloud's adapter and every search is answered there; the data directory's
SQLite index keeps the records and page text only. Against the repository's OpenSearch stand-in
(tests/lambda_layout/opensearch_stub.py), over a real uvicorn, wired as `docchat serve` wires it
(the local embedder, extractive answers)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.config import Settings
from docchat.ingest.uploads import LocalUploads
from docchat.models import Chunk
from docchat.ports import Embedder, SentenceVectors
from docchat.search import rerank
from docchat.wiring.local import guarded_local_app, local_backend, local_uploads, open_local
from tests.chatkit import ServedApp
from tests.lambda_layout.opensearch_stub import OpenSearchStub
from tests.pdfgen import make_pdf

FERRY = make_pdf([[("h1", "Ferries"), ("body", "The ferry to the island leaves every hour.")]])


class ClusterServer:
    def __init__(self, data: Path, stub: OpenSearchStub) -> None:
        self.stub = stub
        self.settings = settings = Settings(
            data_dir=data, opensearch_endpoint=stub.endpoint, opensearch_service="aoss"
        )
        self.local = local = open_local(settings)
        self.backend = local_backend(settings, local)
        self.made: list[LocalUploads] = []

        def made(live: object) -> LocalUploads:
            if not self.made:
                self.made.append(local_uploads(settings, local))
            return self.made[0]

        self.served = ServedApp(guarded_local_app(settings, lambda: self.backend, uploads=made))
        self.url = ""

    def upload(self, filename: str) -> str:
        posted = httpx.post(
            f"{self.url}/documents",
            params={"filename": filename},
            content=FERRY,
            headers={"content-type": "application/pdf"},
            timeout=60,
        )
        assert posted.status_code == 202, posted.text
        doc_id = str(posted.json()["doc_id"])
        deadline = time.monotonic() + 120
        while (status := httpx.get(f"{self.url}/documents/{doc_id}").json()["status"]) not in (
            "INDEXED",
            "FAILED",
        ):
            assert time.monotonic() < deadline, status
            time.sleep(0.1)
        assert status == "INDEXED"
        return doc_id

    def cited(self, question: str) -> set[str]:
        body = {"messages": [{"role": "user", "content": question}]}
        with (
            httpx.Client(timeout=120) as client,
            client.stream("POST", f"{self.url}/chat", json=body) as response,
        ):
            assert response.status_code == 200, response.read()
            text = "\n".join(x[6:] for x in response.iter_lines() if x.startswith("data: "))
        return {doc_id for doc_id in self.stored() if doc_id in text}

    def stored(self) -> dict[str, int]:
        """doc_id -> how many chunks the cluster holds of it."""
        found: dict[str, int] = {}
        for index in self.stub.indexes.values():
            for doc in index.docs.values():
                found[doc["doc_id"]] = found.get(doc["doc_id"], 0) + 1
        return found


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ClusterServer]:
    with OpenSearchStub() as stub:
        running = ClusterServer(tmp_path / "data", stub)
        running.served.start()
        running.url = f"http://127.0.0.1:{running.served.port}"
        try:
            yield running
        finally:
            running.served.stop()
            for made in running.made:
                made.close()
            running.backend.library.registry.close()  # type: ignore[attr-defined]


def test_serve_over_a_cluster_writes_chunks_there_and_answers_from_there(
    server: ClusterServer,
) -> None:
    ferry = server.upload("ferry.pdf")

    # The chunks are in the cluster, not in the SQLite index, which still lists the document
    assert server.stored()[ferry] >= 1
    registry = server.backend.library.registry
    assert isinstance(registry, SqliteIndex) and registry.count() == 0
    page = httpx.get(f"{server.url}/documents/{ferry}/pages/1").json()
    assert "leaves every hour" in page["text"]
    assert ferry in server.cited("When does the ferry to the island leave?")

    # A second name for the same bytes is copied within the cluster, and outlives the first
    copy = server.upload("ferry-copy.pdf")
    assert server.stored()[copy] == server.stored()[ferry]
    assert httpx.delete(f"{server.url}/documents/{ferry}").status_code in (200, 202)
    assert ferry not in server.stored()
    cited = server.cited("When does the ferry to the island leave?")
    assert cited == {copy}
    listed = httpx.get(f"{server.url}/documents").json()["documents"]
    assert [d["doc_id"] for d in listed] == [copy]


def test_sentence_vectors_of_the_clusters_chunks_are_kept_so_a_restart_embeds_none(
    server: ClusterServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a document ingested over a cluster (the SQLite file holds none of its chunks)
    ferry = server.upload("ferry.pdf")
    registry = server.backend.library.registry
    assert isinstance(registry, SqliteIndex)
    chunk_ids = sorted(
        str(doc["chunk_id"])
        for index in server.stub.indexes.values()
        for doc in index.docs.values()
        if doc["doc_id"] == ferry
    )
    # Then ingestion kept no sentence vectors (issue 45); the first question reranking the
    # chunks embeds theirs and keeps them there, by chunk id
    assert chunk_ids and registry.sentence_vectors(chunk_ids) == {}
    assert ferry in server.cited("When does the ferry to the island leave?")
    assert sorted(registry.sentence_vectors(chunk_ids)) == chunk_ids

    # When the server starts again (nothing cached) and is asked again
    embedded: list[str] = []
    embed = rerank.sentence_vectors

    def counted(chunks: Sequence[Chunk], embedder: Embedder) -> list[SentenceVectors]:
        embedded.extend(c.chunk_id for c in chunks)
        return embed(chunks, embedder)

    monkeypatch.setattr(rerank, "sentence_vectors", counted)
    again = local_backend(server.settings)
    try:
        found = again.library.search("When does the ferry to the island leave?", top_k=3)
    finally:
        again.library.registry.close()  # type: ignore[attr-defined]

    # Then it reranks with the kept vectors: no sentence is embedded again
    assert found.reranked and found.passages[0].chunk.doc_id == ferry
    assert embedded == []

    # And deleting the document drops them
    assert httpx.delete(f"{server.url}/documents/{ferry}").status_code in (200, 202)
    assert registry.sentence_vectors(chunk_ids) == {}
