"""What every ports.ChunkStore does, as a mixin: a test class runs it by inheriting it and
defining the `store` fixture (an empty store holding DIMENSION-dimensional vectors of model
MODEL). The assertions are on what a caller sees, never on how the store keeps it.

Where adapters differ as the port allows, the class says how its adapter behaves and the
contract tests that, not a guess:

- `KEEPS_SENTENCES`: whether sentence vectors saved are read back (SQLite) or kept nowhere.
- `STEMS`: whether a keyword matches another form of the word. OpenSearch's mapping asks for
  the `english` analyzer (it stems) and SQLite's FTS5 uses porter; the repository's stand-in
  only lower-cases. Every other keyword test uses the exact word forms, so it holds for all.
- `settle`: a live cluster shows writes to searches after a refresh; the others at once.
"""

from __future__ import annotations

import numpy as np

from docchat.models import Chunk, DocumentRecord
from docchat.ports import ChunkStore, SentenceVectors

DIMENSION = 4
MODEL = "contract-words"


def chunks_of(doc_id: str, version: str, texts: list[str]) -> list[Chunk]:
    """One chunk per text, in reading order (chunk ids end in their ordinal)."""
    return [
        Chunk(
            chunk_id=f"{doc_id}:{version}:{n:05d}",
            doc_id=doc_id,
            version=version,
            source=f"/docs/{doc_id}.pdf",
            title=doc_id.title(),
            headings=["Harbour"],
            page_start=n + 1,
            page_end=n + 1,
            text=text,
            embedding_model=MODEL,
        )
        for n, text in enumerate(texts)
    ]


def along(*axes: int) -> np.ndarray:
    """One unit vector per chunk, along the given axes: exact and normalised."""
    return np.eye(DIMENSION, dtype=np.float32)[list(axes)]


def record_of(doc_id: str, version: str, **fields: object) -> DocumentRecord:
    return DocumentRecord(
        doc_id=doc_id,
        source=f"/docs/{doc_id}.pdf",
        title=doc_id.title(),
        version=version,
        **fields,  # type: ignore[arg-type]
    )


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [chunk_id for chunk_id, _ in hits]


class ChunkStoreContract:
    KEEPS_SENTENCES: bool
    STEMS: bool

    def settle(self, store: ChunkStore) -> None:
        """Make the writes so far visible to searches (nothing to do where they are at once)."""

    def put(self, store: ChunkStore, doc_id: str, version: str, texts: list[str]) -> list[Chunk]:
        """Index a version of a document as ingestion does (ingest/shelf.py, the pipeline's
        Index and Register): its chunks, then the other versions' removed."""
        chunks = chunks_of(doc_id, version, texts)
        store.write_chunks(chunks, along(*range(len(chunks))))
        store.finalize_document(doc_id, version)
        self.settle(store)
        return chunks

    # --- writing and reading ------------------------------------------------------------------

    def test_store_reads_back_chunks_by_id(self, store: ChunkStore) -> None:
        written = chunks_of("ferry", "v1", ["the ferry leaves hourly", "tickets at the pier"])
        store.write_chunks(written, along(0, 1))
        self.settle(store)

        found = store.chunks([c.chunk_id for c in written] + ["ferry:v1:99999"])

        assert found == {c.chunk_id: c for c in written}

    def test_store_reads_a_documents_chunks_in_order_of_one_version(
        self, store: ChunkStore
    ) -> None:
        old = chunks_of("ferry", "v1", ["old timetable"])
        new = chunks_of("ferry", "v2", ["new timetable", "new fares", "new pier"])
        store.write_chunks(old + new, along(0, 1, 2, 3))
        self.settle(store)

        assert store.document_chunks("ferry", version="v2") == new
        assert store.document_chunks("ferry") == sorted(old + new, key=lambda c: c.chunk_id)
        assert store.document_chunks("bridge") == []

    def test_store_writes_a_retried_batch_once(self, store: ChunkStore) -> None:
        written = chunks_of("ferry", "v1", ["the ferry leaves hourly"])
        store.write_chunks(written, along(0))
        store.write_chunks(written, along(0))
        store.finalize_document("ferry", "v1")
        self.settle(store)

        assert store.document_chunks("ferry") == written
        assert ids(store.vector_search(along(0)[0], k=5)) == [written[0].chunk_id]

    # --- searching ----------------------------------------------------------------------------

    def test_store_ranks_the_nearest_vector_first(self, store: ChunkStore) -> None:
        chunks = self.put(store, "ferry", "v1", ["north", "east", "south"])
        query = np.array([0.1, 0.0, 0.9, 0.0], dtype=np.float32)

        hits = store.vector_search(query / np.linalg.norm(query), k=2)

        assert ids(hits) == [chunks[2].chunk_id, chunks[0].chunk_id]
        assert hits[0][1] > hits[1][1]

    def test_store_finds_a_word_whatever_its_case(self, store: ChunkStore) -> None:
        chunks = self.put(store, "ferry", "v1", ["Lighthouse keepers", "harbour master"])

        assert ids(store.keyword_search("LIGHTHOUSE", k=5)) == [chunks[0].chunk_id]
        assert ids(store.keyword_search("lighthouse", k=5)) == [chunks[0].chunk_id]
        assert store.keyword_search("zeppelin", k=5) == []

    def test_store_stems_as_its_analyzer_does(self, store: ChunkStore) -> None:
        chunks = self.put(store, "crossing", "v1", ["the harbour ferries", "a quiet lane"])

        found = ids(store.keyword_search("ferry", k=5))

        assert found == ([chunks[0].chunk_id] if self.STEMS else [])

    def test_store_searches_only_the_allowed_versions(self, store: ChunkStore) -> None:
        # Given a stale version still in the store, and a document the reader may not read
        stale = chunks_of("ferry", "v1", ["ferry timetable stale"])
        store.write_chunks(stale, along(0))
        current = self.put(store, "ferry", "v2", ["ferry timetable current"])
        self.put(store, "secret", "s1", ["ferry timetable secret"])
        store.write_chunks(stale, along(0))  # as a late retry, or a Serverless delay, leaves it
        self.settle(store)
        allowed = {"ferry": "v2"}

        # When either search runs under the allowed versions, then only those chunks come back
        everything = np.ones(DIMENSION, dtype=np.float32) / 2
        assert ids(store.vector_search(everything, k=10, versions=allowed)) == [current[0].chunk_id]
        assert ids(store.keyword_search("timetable", k=10, versions=allowed)) == [
            current[0].chunk_id
        ]

    def test_store_applies_doc_ids_and_versions_together(self, store: ChunkStore) -> None:
        self.put(store, "ferry", "v1", ["timetable for the ferry"])
        bridge = self.put(store, "bridge", "b1", ["timetable for the bridge"])
        versions = {"ferry": "v1", "bridge": "b1"}
        everything = np.ones(DIMENSION, dtype=np.float32) / 2

        assert ids(
            store.keyword_search("timetable", k=5, doc_ids=["bridge"], versions=versions)
        ) == [bridge[0].chunk_id]
        assert (
            store.keyword_search("timetable", k=5, doc_ids=["bridge"], versions={"ferry": "v1"})
            == []
        )
        assert ids(store.vector_search(everything, k=5, doc_ids=["bridge"])) == [bridge[0].chunk_id]

    def test_store_finds_nothing_when_no_version_is_allowed(self, store: ChunkStore) -> None:
        self.put(store, "ferry", "v1", ["timetable"])

        assert store.keyword_search("timetable", k=5, versions={}) == []
        assert store.vector_search(along(0)[0], k=5, versions={}) == []
        assert store.vector_search(along(0)[0], k=5, doc_ids=[]) == []

    # --- replacing, copying, removing ---------------------------------------------------------

    def test_store_replaces_a_documents_chunks_with_a_new_versions(self, store: ChunkStore) -> None:
        self.put(store, "ferry", "v1", ["old timetable", "old fares"])
        new = self.put(store, "ferry", "v2", ["new timetable"])

        assert store.document_chunks("ferry") == new
        assert ids(store.keyword_search("timetable", k=5)) == [new[0].chunk_id]

    def test_store_finalize_keeps_one_version(self, store: ChunkStore) -> None:
        old = chunks_of("ferry", "v1", ["old timetable"])
        new = chunks_of("ferry", "v2", ["new timetable"])
        store.write_chunks(old + new, along(0, 1))
        self.settle(store)

        removed = store.finalize_document("ferry", "v2")
        self.settle(store)

        assert removed["old"] == 1
        assert store.document_chunks("ferry") == new

    def test_store_copies_a_document_under_another_name(self, store: ChunkStore) -> None:
        original = self.put(store, "ferry", "v1", ["timetable", "fares"])
        copy = record_of("ferry-copy", "v1")
        self.put(store, "ferry-copy", "v0", ["what the name held before"])

        assert store.copy_document("ferry", copy) == 2
        self.settle(store)

        assert store.document_chunks("ferry-copy", version="v0") == []
        copied = store.document_chunks("ferry-copy", version="v1")
        assert [c.text for c in copied] == [c.text for c in original]
        assert {c.doc_id for c in copied} == {"ferry-copy"}
        assert (
            store.vector_search(along(1)[0], k=1, doc_ids=["ferry-copy"])[0][0]
            == copied[1].chunk_id
        )
        assert store.document_chunks("ferry") == original

    def test_store_delete_removes_every_version(self, store: ChunkStore) -> None:
        store.write_chunks(chunks_of("ferry", "v1", ["old timetable"]), along(0))
        self.put(store, "ferry", "v2", ["new timetable"])
        bridge = self.put(store, "bridge", "b1", ["bridge timetable"])
        store.write_chunks(chunks_of("ferry", "v1", ["old timetable"]), along(0))
        self.settle(store)

        store.delete_document("ferry")
        self.settle(store)

        assert store.document_chunks("ferry") == []
        assert ids(store.keyword_search("timetable", k=5)) == [bridge[0].chunk_id]

    # --- kept per chunk -----------------------------------------------------------------------

    def test_store_keeps_sentence_vectors_where_it_can(self, store: ChunkStore) -> None:
        chunks = self.put(store, "ferry", "v1", ["One sentence. Another one."])
        kept = SentenceVectors(starts=(0, 14), vectors=along(0, 1))

        store.save_sentence_vectors({chunks[0].chunk_id: kept})
        found = store.sentence_vectors([chunks[0].chunk_id, "ferry:v1:99999"])

        if not self.KEEPS_SENTENCES:
            assert found == {}
            return
        assert list(found) == [chunks[0].chunk_id]
        assert found[chunks[0].chunk_id].starts == kept.starts
        # Kept in half precision: the reranker only compares them.
        np.testing.assert_allclose(found[chunks[0].chunk_id].vectors, kept.vectors, atol=1e-3)
