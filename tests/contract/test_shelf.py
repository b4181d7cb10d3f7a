"""Local ingestion's writes (ingest/shelf.py) as a reader sees them, over both shelves local
mode opens: the SQLite file alone, and the file with the chunks in a cluster (here the
stand-in, tests/lambda_layout/opensearch_stub.py), as DOCCHAT_OPENSEARCH_ENDPOINT makes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from docchat.adapters.opensearch_index import client_for
from docchat.adapters.sqlite_index import SqliteIndex
from docchat.errors import DocumentNotFoundError
from docchat.ingest.shelf import Shelf
from docchat.models import DocStatus, Page
from docchat.ports import SentenceVectors
from tests.contract.chunk_store import DIMENSION, MODEL, along, chunks_of, ids, record_of
from tests.contract.test_opensearch import adapter
from tests.lambda_layout.opensearch_stub import OpenSearchStub


@pytest.fixture(params=["file", "cluster"])
def shelf(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Shelf]:
    file = SqliteIndex(tmp_path / "index.sqlite3", embedding_model=MODEL, dimension=DIMENSION)
    if request.param == "file":
        yield Shelf(catalog=file, chunks=file, pages=file)
    else:
        with OpenSearchStub() as stub:
            client = client_for(stub.endpoint, region="us-east-1", service="aoss")
            yield Shelf(catalog=file, chunks=adapter(client, serverless=True), pages=file)
            client.close()
    file.close()


def pages_of(*texts: str) -> list[Page]:
    return [Page(number=n + 1, markdown=text, chars=len(text)) for n, text in enumerate(texts)]


def put(shelf: Shelf, doc_id: str, version: str, *texts: str) -> None:
    chunks = chunks_of(doc_id, version, list(texts))
    shelf.put(
        record_of(doc_id, version), chunks, along(*range(len(chunks))), pages=pages_of(*texts)
    )


def test_a_put_document_is_indexed_with_its_chunks_and_pages(shelf: Shelf) -> None:
    put(shelf, "ferry", "v1", "old timetable", "old fares")
    put(shelf, "ferry", "v2", "new timetable")

    record = shelf.catalog.document("ferry")
    assert record is not None and (record.status, record.version, record.chunks) == (
        DocStatus.INDEXED,
        "v2",
        1,
    )
    assert [c.text for c in shelf.chunks.document_chunks("ferry")] == ["new timetable"]
    assert [p.markdown for p in shelf.pages.stored_pages("ferry", "v2") or []] == ["new timetable"]
    # The version it left goes with its page text
    assert shelf.pages.stored_pages("ferry", "v1") is None


def test_a_copy_shares_the_page_text_and_outlives_the_original(shelf: Shelf) -> None:
    put(shelf, "ferry", "v1", "timetable", "fares")

    copied = shelf.copy("ferry", record_of("ferry-copy", "v1"))
    shelf.remove("ferry")

    assert (copied.status, copied.chunks) == (DocStatus.INDEXED, 2)
    assert [r.doc_id for r in shelf.catalog.documents()] == ["ferry-copy"]
    assert [c.text for c in shelf.chunks.document_chunks("ferry-copy")] == ["timetable", "fares"]
    assert shelf.chunks.document_chunks("ferry") == []
    assert len(shelf.pages.stored_pages("ferry-copy", "v1") or []) == 2
    with pytest.raises(DocumentNotFoundError, match="not an indexed document"):
        shelf.copy("ferry", record_of("ferry-second-copy", "v1"))


def test_a_removed_document_leaves_nothing_to_find(shelf: Shelf) -> None:
    put(shelf, "ferry", "v1", "ferry timetable")
    put(shelf, "bridge", "b1", "bridge timetable")
    chunk = shelf.chunks.document_chunks("ferry")[0].chunk_id
    shelf.chunks.save_sentence_vectors({chunk: SentenceVectors((0,), along(0))})

    shelf.remove("ferry")

    assert shelf.catalog.document("ferry") is None
    assert [c.split(":")[0] for c in ids(shelf.chunks.keyword_search("timetable", k=5))] == [
        "bridge"
    ]
    assert shelf.pages.stored_pages("ferry", "v1") is None
    assert shelf.pages.stored_pages("bridge", "b1") is not None
    assert shelf.chunks.sentence_vectors([chunk]) == {}


def test_a_failed_version_leaves_no_stale_chunks(shelf: Shelf) -> None:
    put(shelf, "ferry", "v1", "old timetable")

    failed = record_of("ferry", "v2", status=DocStatus.FAILED, error="unreadable")
    shelf.fail(failed)

    kept = shelf.catalog.document("ferry")
    assert kept is not None and (kept.status, kept.version) == (DocStatus.FAILED, "v2")
    assert shelf.chunks.document_chunks("ferry") == []
    assert shelf.pages.stored_pages("ferry", "v1") is None


def test_settle_removes_what_a_killed_put_left(shelf: Shelf) -> None:
    # A put killed after the record was written: the old version's chunks are still there
    put(shelf, "ferry", "v1", "old timetable")
    new = chunks_of("ferry", "v2", ["new timetable"])
    shelf.chunks.write_chunks(new, along(0))
    record = record_of("ferry", "v2", status=DocStatus.INDEXED, chunks=1)
    shelf.catalog.set_record(record)

    shelf.settle(record)

    assert shelf.chunks.document_chunks("ferry") == new


def test_page_text_kept_before_its_record_outlives_other_documents_writes(shelf: Shelf) -> None:
    # Another process keeps a new version's pages before its record names it (ingest/shelf.py)
    shelf.pages.keep_pages("t1", pages_of("tunnel timetable"))

    put(shelf, "ferry", "v1", "old timetable")
    put(shelf, "ferry", "v2", "new timetable")
    shelf.remove("ferry")

    assert [p.markdown for p in shelf.pages.stored_pages("tunnel", "t1") or []] == [
        "tunnel timetable"
    ]
