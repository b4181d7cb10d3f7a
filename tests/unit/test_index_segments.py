"""The embedded index in segments: flushed, merged, with graphs, removed rows masked; searches
answer as one table of every chunk would; another connection follows each write incrementally."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from docchat.adapters.sqlite_index import SqliteIndex, graph, maintenance
from docchat.adapters.sqlite_index.graph import Graph
from docchat.adapters.sqlite_index.search import Part, View
from docchat.adapters.sqlite_index.segment import Segment
from docchat.errors import DocumentNotFoundError
from docchat.ingest.shelf import Shelf
from docchat.models import Chunk, DocStatus, DocumentRecord, Page
from tests.conftest import WordEmbedder

WORDS = [
    "apple",
    "pear",
    "plum",
    "cherry",
    "river",
    "bridge",
    "ferry",
    "harbour",
    "tunnel",
    "train",
    "station",
    "island",
]
QUERIES = ["apple river", "ferry to the island", "cherry", "train station bridge", "plum pear"]


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments of a few rows: flushes, merges and graphs happen within a test's writes."""
    monkeypatch.setattr(maintenance, "FLUSH_ROWS", 3)
    monkeypatch.setattr(maintenance, "FLUSH_PAGE", 5)
    monkeypatch.setattr(maintenance, "MERGE_FACTOR", 2)
    monkeypatch.setattr(maintenance, "GRAPH_ROWS", 6)
    monkeypatch.setattr(maintenance, "MAX_ROWS", 1_000)


def _texts(doc: int) -> list[str]:
    return [" ".join(WORDS[(doc * 3 + n + k) % len(WORDS)] for k in range(4)) for n in range(2)]


def _put(index: SqliteIndex, doc_id: str, texts: list[str], version: str = "v1") -> None:
    chunks = [
        Chunk(
            chunk_id=f"{doc_id}:{version}:{n:05d}",
            doc_id=doc_id,
            version=version,
            source=f"/docs/{doc_id}.pdf",
            title=doc_id.title(),
            headings=["H"],
            page_start=n + 1,
            page_end=n + 1,
            text=text,
        )
        for n, text in enumerate(texts)
    ]
    record = DocumentRecord(doc_id=doc_id, source=f"/docs/{doc_id}.pdf", version=version)
    pages = [Page(number=n + 1, markdown=t, chars=len(t)) for n, t in enumerate(texts)]
    vectors = WordEmbedder().embed_documents([c.embed_text for c in chunks])
    index.replace_document(record, chunks, vectors, pages=pages)


def _fill(index: SqliteIndex) -> None:
    for doc in range(12):
        _put(index, f"d{doc:02d}", _texts(doc))
    _put(index, "d03", ["a new version about the harbour ferry"], version="v2")
    index.delete_document("d05")
    index.delete_document("d06")


def _results(index: SqliteIndex, **filters: object) -> list[object]:
    found: list[object] = []
    for query in QUERIES:
        vector = WordEmbedder().embed_query(query)
        found.append([(c, round(s, 5)) for c, s in index.vector_search(vector, k=6, **filters)])  # type: ignore[arg-type]
        found.append([(c, round(s, 5)) for c, s in index.keyword_search(query, k=6, **filters)])  # type: ignore[arg-type]
    return found


def _segment_files(index: SqliteIndex) -> list[Path]:
    folder = index.path.with_suffix(".segments")
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_segments_answer_as_one_table_of_every_chunk(tmp_path: Path, small_segments: None) -> None:
    # Given the same writes in an index of small segments and one that holds all in memory
    segmented = SqliteIndex(tmp_path / "s.sqlite3", embedding_model="test-words", dimension=64)
    _fill(segmented)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(maintenance, "FLUSH_ROWS", 10_000)
        whole = SqliteIndex(tmp_path / "w.sqlite3", embedding_model="test-words", dimension=64)
        _fill(whole)

    # Then the segmented one saved segments (some with graphs) and keeps few in memory
    parts = segmented._live.view().parts
    saved = [p for p in parts if p.segment.folder is not None]
    assert saved and any(p.segment.graph is not None for p in saved)
    assert sum(p.count for p in parts) == segmented.count() == whole.count() == 19
    assert not _segment_files(whole)
    # And both find the same chunks with the same scores, filtered or not
    assert _results(segmented) == _results(whole)
    versions = {"d03": "v2", "d04": "v1", "d09": "v1"}
    assert _results(segmented, versions=versions) == _results(whole, versions=versions)
    assert _results(segmented, doc_ids=["d01", "d03"]) == _results(whole, doc_ids=["d01", "d03"])
    segmented.close()
    whole.close()


def test_another_connection_follows_writes_flushes_and_merges(
    tmp_path: Path, small_segments: None
) -> None:
    path = tmp_path / "index.sqlite3"
    writer = SqliteIndex(path, embedding_model="test-words", dimension=64)
    reader = SqliteIndex(path, embedding_model="test-words", dimension=64)
    query = WordEmbedder().embed_query("aqueduct")
    assert reader.vector_search(query, k=3) == []
    loads, read = reader._live.loads, reader._live.rows_read

    # A document written by the other connection is found, reading only its rows
    _put(writer, "t", ["the aqueduct over the river"])
    assert [c for c, _ in reader.keyword_search("aqueduct", k=3)] == ["t:v1:00000"]
    assert (reader._live.loads, reader._live.rows_read) == (loads, read + 1)

    # Flushes and merges by the other connection: the segments are mapped again, not read
    for doc in range(8):
        _put(writer, f"d{doc}", _texts(doc))
    writer.delete_document("t")
    assert reader.keyword_search("aqueduct", k=3) == []
    assert reader._live.loads > loads
    assert _results(reader) == _results(writer)
    writer.close()
    reader.close()


def test_a_segment_is_written_again_without_its_removed_rows(
    tmp_path: Path, small_segments: None
) -> None:
    index = SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)
    for doc in range(4):
        _put(index, f"d{doc}", _texts(doc))
    before = {p.segment.folder for p in index._live.view().parts if p.segment.folder}

    for doc in range(3):
        index.delete_document(f"d{doc}")

    parts = index._live.view().parts
    assert all(p.live is None or p.count >= 0.75 * len(p.segment) for p in parts)
    assert sum(p.count for p in parts) == 2
    assert {p.segment.folder for p in parts if p.segment.folder}.isdisjoint(before)
    listed = {p.segment.folder.name for p in parts if p.segment.folder}
    assert {f.name for f in _segment_files(index)} == listed  # the old folders are gone
    index.close()


def test_closing_flushes_the_rows_written_since_the_last_flush(tmp_path: Path) -> None:
    # Given an index closed with fewer new rows than a flush waits for (FLUSH_ROWS)
    path = tmp_path / "index.sqlite3"
    index = SqliteIndex(path, embedding_model="test-words", dimension=64)
    for doc in range(5):
        _put(index, f"d{doc}", _texts(doc))
    index.delete_document("d1")
    before = _results(index)
    assert all(p.segment.folder is None for p in index._live.view().parts)
    index.close()

    # When it is opened again
    reopened = SqliteIndex(path, embedding_model="test-words", dimension=64)

    # Then every row is in a saved segment: opening read none from the index file
    parts = reopened._live.view().parts
    assert reopened._live.rows_read == 0
    assert [p.segment.folder is not None for p in parts] == [True]
    assert sum(p.count for p in parts) == reopened.count() == 8
    assert _results(reopened) == before
    # And closing with nothing new writes nothing
    folders = _segment_files(reopened)
    reopened.close()
    assert _segment_files(reopened) == folders


def test_a_leftover_folder_of_the_next_generation_does_not_stop_flushes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given an index whose next flush's folder name is taken: a crash between writing a segment
    # and listing it, or (as an index of schema 4 upgraded) segments reset beside their folders
    path = tmp_path / "index.sqlite3"
    index = SqliteIndex(path, embedding_model="test-words", dimension=64)
    _put(index, "d0", _texts(0))
    index.close()
    [folder] = _segment_files(index)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM segments")
        db.execute("UPDATE meta SET value = '0' WHERE key IN ('segments', 'flushed')")

    # When rows are written and the index closes
    index = SqliteIndex(path, embedding_model="test-words", dimension=64)
    _put(index, "d1", _texts(1))
    before = _results(index)
    index.close()

    # Then they were flushed (the close said nothing), and the next open reads none of them
    assert "unflushed" not in caplog.text
    reopened = SqliteIndex(path, embedding_model="test-words", dimension=64)
    assert reopened._live.rows_read == 0
    assert reopened.count() == 4 and _results(reopened) == before
    reopened.close()
    assert folder.name not in [f.name for f in _segment_files(reopened)]  # the leftover went


def test_a_graph_keeps_the_nearest_rows_of_an_exact_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One thread builds the same graph every run (several made recall 0.978 once in many runs)
    monkeypatch.setattr(graph, "BUILD_THREADS", 1)
    # Given clustered vectors, as embeddings are: 3,000 rows around 60 centres
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((60, 32))
    vectors = centres[rng.integers(0, 60, 3_000)] + 0.3 * rng.standard_normal((3_000, 32))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    empty = [b""] * 3_000
    rows = np.arange(1, 3_001, dtype=np.int64)
    segment = Segment.of_rows(rows, vectors, np.ones(3_000, np.int32), empty, empty)
    saved = segment.save(tmp_path / "segment", graph=True)
    assert isinstance(saved.graph, Graph) and saved.graph is not None
    queries = vectors[rng.integers(0, 3_000, 50)] + 0.2 * rng.standard_normal((50, 32))

    # When each query is answered through the graph and by an exact scan
    exact, graphed = View.of([Part(segment)]), View.of([Part(saved)])
    recall = []
    for query in queries.astype(np.float32):
        want = exact.vector_search(query, k=10, masks=[None])
        got = graphed.vector_search(query, k=10, masks=[None])
        # Then the graph's rows are scored exactly, and nearly always the same rows
        assert all(score == pytest.approx(dict(want).get(row, score)) for row, score in got)
        recall.append(len({r for r, _ in want} & {r for r, _ in got}) / 10)
    assert np.mean(recall) >= 0.98
    # And a filter that keeps few rows is answered exactly, graph or not
    keep = rows[::97]
    masks = graphed.masks(keep, keep=True)
    assert graphed.vector_search(queries[0], k=5, masks=masks) == exact.vector_search(
        queries[0], k=5, masks=exact.masks(keep, keep=True)
    )


def test_copy_document_copies_chunks_vectors_and_pages_without_embedding(tmp_path: Path) -> None:
    index = SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)
    _put(index, "ferry", ["The ferry leaves at noon.", "Tickets are sold on board."])
    original = index.document("ferry")
    assert original is not None
    copy = DocumentRecord(
        doc_id="ferry-copy", source="/copies/ferry.pdf", title="Ferry", version=original.version
    )

    shelf = Shelf(index, index, index)
    shelf.copy("ferry", copy)

    record = index.document("ferry-copy")
    assert record is not None and (record.status, record.chunks) == (DocStatus.INDEXED, 2)
    chunks = index.document_chunks("ferry-copy")
    assert [c.chunk_id for c in chunks] == ["ferry-copy:v1:00000", "ferry-copy:v1:00001"]
    assert [(c.source, c.text) for c in chunks] == [
        ("/copies/ferry.pdf", "The ferry leaves at noon."),
        ("/copies/ferry.pdf", "Tickets are sold on board."),
    ]
    query = WordEmbedder().embed_query("ferry noon")
    hits = dict(index.vector_search(query, k=4))
    assert hits["ferry-copy:v1:00000"] == pytest.approx(hits["ferry:v1:00000"])
    assert index.stored_pages("ferry-copy", copy.version) == index.stored_pages("ferry", "v1")
    # The original is untouched, and removing it leaves the copy whole
    shelf.remove("ferry")
    assert [c for c, _ in index.keyword_search("tickets", k=3)] == ["ferry-copy:v1:00001"]
    assert index.stored_pages("ferry-copy", copy.version) is not None
    with pytest.raises(DocumentNotFoundError, match="not an indexed document"):
        shelf.copy("ferry", copy)
    index.close()


def test_search_leaves_out_chunks_the_registry_does_not_list_as_indexed(tmp_path: Path) -> None:
    index = SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)
    _put(index, "a", ["red apples"])
    _put(index, "b", ["red berries"])
    # b is being ingested again: its record says QUEUED, its old chunks are still there
    queued = index.document("b")
    assert queued is not None
    index.set_record(queued.model_copy(update={"status": DocStatus.QUEUED, "version": "v2"}))
    indexed = {d.doc_id: d.version for d in index.documents() if d.status == DocStatus.INDEXED}

    found = index.keyword_search("red", k=5, versions=indexed)

    assert [c for c, _ in found] == ["a:v1:00000"]
    assert len(index.keyword_search("red", k=5)) == 2
    index.close()
