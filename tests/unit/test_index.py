"""The embedded SQLite index: atomic replace, no-op, delete, stats, model guard, search."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.adapters.sqlite_index import store as sqlite_store
from docchat.adapters.sqlite_index.bm25 import FIELD_WEIGHTS
from docchat.errors import DocumentNotFoundError, EmbedderMismatchError, IndexSchemaError
from docchat.ingest.shelf import Shelf
from docchat.models import Chunk, DocStatus, DocumentRecord, Page
from tests.conftest import WordEmbedder


def _chunks(doc_id: str, version: str, texts: list[str]) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=f"{doc_id}:{version}:{i:05d}",
            doc_id=doc_id,
            version=version,
            source=f"/docs/{doc_id}.pdf",
            title=doc_id.title(),
            headings=["H"],
            page_start=i + 1,
            page_end=i + 1,
            text=text,
        )
        for i, text in enumerate(texts)
    ]


def _put(index: SqliteIndex, doc_id: str, version: str, texts: list[str]) -> None:
    chunks = _chunks(doc_id, version, texts)
    record = DocumentRecord(
        doc_id=doc_id,
        source=f"/docs/{doc_id}.pdf",
        title=doc_id.title(),
        version=version,
        pages=len(texts),
    )
    index.replace_document(record, chunks, WordEmbedder().embed_documents([c.text for c in chunks]))


@pytest.fixture
def index(tmp_path: Path) -> SqliteIndex:
    return SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)


def test_index_replace_swaps_all_chunks_of_a_document(index: SqliteIndex) -> None:
    _put(index, "a", "v1", ["old apples", "old pears", "old plums"])

    _put(index, "a", "v2", ["new cherries"])

    chunks = index.document_chunks("a")
    assert [(c.version, c.text) for c in chunks] == [("v2", "new cherries")]
    assert index.keyword_search("old", k=10) == []
    record = index.document("a")
    assert record is not None
    assert (record.status, record.version, record.chunks) == (DocStatus.INDEXED, "v2", 1)


def test_index_replace_is_atomic_when_it_fails(index: SqliteIndex) -> None:
    _put(index, "a", "v1", ["old apples"])
    chunks = _chunks("a", "v2", ["new one", "new two"])

    with pytest.raises(ValueError, match="2 chunks but 1 vectors"):
        index.replace_document(
            DocumentRecord(doc_id="a", source="/docs/a.pdf", version="v2"),
            chunks,
            np.zeros((1, 64), dtype=np.float32),
        )
    duplicate = _chunks("a", "v3", ["x", "y"])
    duplicate[1] = duplicate[1].model_copy(update={"chunk_id": duplicate[0].chunk_id})
    with pytest.raises(Exception, match="UNIQUE"):
        index.replace_document(
            DocumentRecord(doc_id="a", source="/docs/a.pdf", version="v3"),
            duplicate,
            WordEmbedder().embed_documents(["x", "y"]),
        )

    assert [c.text for c in index.document_chunks("a")] == ["old apples"]
    assert index.document("a").version == "v1"  # type: ignore[union-attr]


def test_index_delete_removes_document_and_its_chunks(index: SqliteIndex) -> None:
    _put(index, "a", "v1", ["apples"])
    _put(index, "b", "v1", ["bananas"])

    Shelf(index, index, index).remove("a")

    assert index.document("a") is None
    assert [d.doc_id for d in index.documents()] == ["b"]
    assert index.keyword_search("apples", k=5) == []
    assert [
        index.chunks([r])[r].doc_id
        for r, _ in index.vector_search(WordEmbedder().embed_query("apples"), k=5)
    ] == ["b"]


def test_index_stats_count_documents_chunks_and_pages(index: SqliteIndex) -> None:
    _put(index, "a", "v1", ["one", "two"])
    _put(index, "b", "v1", ["three"])

    stats = index.stats()

    assert (stats["documents"], stats["chunks"], stats["indexed_pages"]) == (2, 3, 3)
    assert stats["by_status"] == {"INDEXED": 2}
    assert (stats["embedding_model"], stats["dimension"]) == ("test-words", 64)


def test_index_refuses_a_different_embedder(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    SqliteIndex(path, embedding_model="test-words", dimension=64).close()

    with pytest.raises(
        EmbedderMismatchError, match=r"built with test-words \(64 dims\), not other \(384 dims\)"
    ):
        SqliteIndex(path, embedding_model="other", dimension=384)


def test_index_search_can_be_limited_to_documents(index: SqliteIndex) -> None:
    _put(index, "a", "v1", ["red apples"])
    _put(index, "b", "v1", ["red bananas"])
    query = WordEmbedder().embed_query("red")

    vector = [
        index.chunks([r])[r].doc_id for r, _ in index.vector_search(query, k=5, doc_ids=["b"])
    ]
    keyword = [
        index.chunks([r])[r].doc_id for r, _ in index.keyword_search("red", k=5, doc_ids=["b"])
    ]

    assert vector == keyword == ["b"]


def test_index_search_can_be_limited_to_versions_of_documents(index: SqliteIndex) -> None:
    # Given chunks of two versions of "a" (as the pipeline writes them) and of "b" and "c"
    for doc_id, version in (("a", "v1"), ("a", "v2"), ("b", "v1"), ("c", "v1")):
        chunks = _chunks(doc_id, version, [f"red {doc_id} {version}"])
        index.write_chunks(chunks, WordEmbedder().embed_documents([c.text for c in chunks]))
    query = WordEmbedder().embed_query("red")

    def found(
        doc_ids: list[str] | None = None, versions: dict[str, str] | None = None
    ) -> tuple[set[str], set[str]]:
        vector = index.vector_search(query, k=9, doc_ids=doc_ids, versions=versions)
        keyword = index.keyword_search("red", k=9, doc_ids=doc_ids, versions=versions)
        return {r for r, _ in vector}, {r for r, _ in keyword}

    # Then only the named version of each named document is found, within doc_ids if given
    wanted = {"a:v2:00000", "b:v1:00000"}
    assert found(versions={"a": "v2", "b": "v1"}) == (wanted, wanted)
    assert found(versions={"a": "v2", "b": "v1"}, doc_ids=["b", "c"]) == ({"b:v1:00000"},) * 2
    assert found(versions={"a": "v3"}) == (set(), set())
    assert found(versions={"b": "v1", "c": "v1"}) == ({"b:v1:00000", "c:v1:00000"},) * 2
    everything = {f"{d}:{v}:00000" for d, v in (("a", "v1"), ("a", "v2"), ("b", "v1"), ("c", "v1"))}
    assert found(doc_ids=["a", "b", "c"]) == (everything, everything)


def test_index_keyword_search_survives_query_syntax(index: SqliteIndex) -> None:
    _put(index, "a", "v1", ["section 1201(a) covers circumvention"])

    hits = index.keyword_search('what does "1201(a)" AND NOT say? -- OR *', k=5)

    assert len(hits) == 1


def test_index_find_document_by_id_path_or_file_name(index: SqliteIndex) -> None:
    _put(index, "report", "v1", ["text"])

    assert index.find_document("report").doc_id == "report"
    assert index.find_document("/docs/report.pdf").doc_id == "report"
    assert index.find_document("report.pdf").doc_id == "report"
    with pytest.raises(
        DocumentNotFoundError, match="'nope' is not in the index: give a document id"
    ):
        index.find_document("nope")


def test_index_sees_writes_from_another_connection(index: SqliteIndex, tmp_path: Path) -> None:
    query = WordEmbedder().embed_query("apples")
    assert index.vector_search(query, k=5) == []

    other = SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)
    _put(other, "a", "v1", ["apples"])

    assert len(index.vector_search(query, k=5)) == 1


def test_index_refuses_a_file_of_another_schema(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    SqliteIndex(path, embedding_model="test-words", dimension=64).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")

    with pytest.raises(IndexSchemaError, match=r"schema 1, this one reads 7\): delete that file"):
        SqliteIndex(path, embedding_model="test-words", dimension=64)


# The tables of schema 2 (docchat before BM25 moved to numpy postings), as it wrote them.
SCHEMA_2_CHUNKS = """
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY, chunk_id TEXT UNIQUE NOT NULL, doc_id TEXT NOT NULL,
    version TEXT NOT NULL, source TEXT NOT NULL, title TEXT NOT NULL, headings TEXT NOT NULL,
    page_start INTEGER NOT NULL, page_end INTEGER NOT NULL, page_breaks TEXT NOT NULL,
    text TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX chunks_doc ON chunks (doc_id);
CREATE VIRTUAL TABLE chunks_fts USING fts5 (
    title, headings, text, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""


def test_index_upgrades_a_schema_2_file_in_place(index: SqliteIndex, tmp_path: Path) -> None:
    texts = ["red apples and green pears", "pears in a pie", "plums"]
    _put(index, "a", "v1", texts)
    # The same document in a file written by schema 2.
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.executescript(SCHEMA_2_CHUNKS)
        meta = [("embedding_model", "test-words"), ("dimension", "64"), ("schema", "2")]
        db.executemany("INSERT INTO meta VALUES (?, ?)", meta)
        for n, chunk in enumerate(_chunks("a", "v1", texts), start=1):
            vector = WordEmbedder().embed_documents([chunk.text])[0].tobytes()
            row = [n, chunk.chunk_id, "a", "v1", chunk.source, chunk.title, '["H"]', n, n, "[]"]
            db.execute(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [*row, chunk.text, vector],
            )
            db.execute(
                "INSERT INTO chunks_fts (rowid, title, headings, text) VALUES (?, ?, 'H', ?)",
                (n, chunk.title, chunk.text),
            )
    db.close()

    old = SqliteIndex(path, embedding_model="test-words", dimension=64)

    assert old.keyword_search("pears", k=5) == index.keyword_search("pears", k=5)
    assert len(old.keyword_search("pears", k=5)) == 2
    query = WordEmbedder().embed_query("plums")
    assert old.vector_search(query, k=1) == index.vector_search(query, k=1)
    with sqlite3.connect(path) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        assert ("schema", "7") in db.execute("SELECT key, value FROM meta").fetchall()
    db.close()
    assert not any(name.startswith("chunks_fts") for name in tables)


def test_index_applies_each_write_without_reading_the_chunks_again(index: SqliteIndex) -> None:
    # Given an index searched once (its chunks read)
    _put(index, "a", "v1", ["apples"])
    query = WordEmbedder().embed_query("apples")
    assert len(index.vector_search(query, k=5)) == 1
    loads = index._live.loads

    # When a status is written, a document added and another removed
    index.set_record(DocumentRecord(doc_id="b", source="/docs/b.pdf", status=DocStatus.QUEUED))
    _put(index, "c", "v1", ["apples and cherries"])
    assert len(index.vector_search(query, k=5)) == 2
    index.delete_document("a")

    # Then each search sees the writes, and the chunks were never read whole again
    assert [c for c, _ in index.keyword_search("apples", k=5)] == ["c:v1:00000"]
    assert index._live.loads == loads


def test_index_upgrades_a_schema_3_file_in_place(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    index = SqliteIndex(path, embedding_model="test-words", dimension=64)
    _put(index, "a", "v1", ["apples"])
    index.close()
    with sqlite3.connect(path) as db:  # back to what schema 3 wrote
        db.execute("ALTER TABLE documents DROP COLUMN revision")
        db.execute("ALTER TABLE documents DROP COLUMN collections")
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
    db.close()

    upgraded = SqliteIndex(path, embedding_model="test-words", dimension=64)

    record = upgraded.document("a")
    assert record is not None and record.revision == 1
    upgraded.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("7",)
        assert db.execute("SELECT collections FROM documents").fetchall() == [('["default"]',)]
    db.close()


def test_index_adds_the_ocr_page_count_to_a_file_written_before_ocr(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    index = SqliteIndex(path, embedding_model="test-words", dimension=64)
    _put(index, "a", "v1", ["apples"])
    index.close()
    with sqlite3.connect(path) as db:  # what docchat wrote before it counted OCR'd pages
        db.execute("ALTER TABLE documents DROP COLUMN pages_ocr")
    db.close()

    reopened = SqliteIndex(path, embedding_model="test-words", dimension=64)

    record = reopened.document("a")
    assert record is not None and record.pages_ocr == 0
    reopened.set_record(record.model_copy(update={"pages_ocr": 3}))
    stored = reopened.document("a")
    assert stored is not None and stored.pages_ocr == 3
    reopened.close()


def test_a_chunk_is_found_by_its_note_which_is_kept_in_older_files_too(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    index = SqliteIndex(path, embedding_model="test-words", dimension=64)
    _put(index, "old", "v1", ["apples"])
    index.close()
    with sqlite3.connect(path) as db:  # what docchat wrote before model-written notes
        db.execute("ALTER TABLE chunks DROP COLUMN note")
        db.execute("DROP TABLE chunk_notes")
    db.close()
    # Read-only (a published index; root may write anyway, so the index is told it may not),
    # it reads as before
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite_store.os, "access", lambda *_: False)
        shared = SqliteIndex(path, embedding_model="test-words", dimension=64)
    assert shared.read_only
    assert shared.document_chunks("old")[0].note == ""
    shared.close()

    # Reopened, the file takes notes: a chunk's note is stored, searched, and never its text
    reopened = SqliteIndex(path, embedding_model="test-words", dimension=64)
    record, chunks = _report("a", "/reports/notice.pdf", "The bridge reopens on Monday.")
    noted = [chunks[0].model_copy(update={"note": "A notice from the harbour authority."})]
    reopened.replace_document(record, noted, WordEmbedder().embed_documents([noted[0].text]))
    assert [c for c, _ in reopened.keyword_search("harbour", k=5)] == ["a:v1:00000"]
    stored = reopened.chunks(["a:v1:00000"])["a:v1:00000"]
    assert stored.note == "A notice from the harbour authority."
    assert stored.text == "The bridge reopens on Monday."
    assert reopened.document_chunks("old")[0].note == ""
    # Notes are cached by key
    reopened.save_notes({"k1": "first", "k2": "second"})
    assert reopened.notes(["k2", "k3"]) == {"k2": "second"}
    reopened.close()

    # Analysed again (as after a change of BM25 fields), the note still counts
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM meta WHERE key = 'bm25_fields'")
        db.execute("UPDATE chunks SET length = 0, term_ids = x'', term_freqs = x''")
    db.close()
    again = SqliteIndex(path, embedding_model="test-words", dimension=64)
    assert [c for c, _ in again.keyword_search("harbour", k=5)] == ["a:v1:00000"]
    again.close()


def test_identical_files_are_indexed_once_and_none_is_lost_when_one_changes(
    tmp_path: Path,
) -> None:
    from docchat.config import Settings
    from docchat.ingest.local import ingest_bytes
    from tests.pdfgen import make_pdf

    index = SqliteIndex(tmp_path / "i.sqlite3", embedding_model="test-words", dimension=64)
    settings = Settings(data_dir=tmp_path)
    old = make_pdf([[("body", "The ferry leaves at noon.")]])
    new = make_pdf([[("body", "The train leaves at midnight.")]])

    def ingest(data: bytes, source: str) -> str:
        embedder = WordEmbedder()
        result = ingest_bytes(
            data,
            source=source,
            shelf=Shelf(index, index, index),
            embedder=embedder,
            settings=settings,
        )
        return result.outcome

    # Given the same bytes at two paths: embedded once, the second path a copy of the first
    assert ingest(old, "/a/ferry.pdf") == "indexed"
    assert ingest(old, "/b/ferry.pdf") == "duplicate"
    assert [(d.source, d.status) for d in index.documents()] == [
        ("/a/ferry.pdf", DocStatus.INDEXED),
        ("/b/ferry.pdf", DocStatus.INDEXED),
    ]
    assert index.count() == 2

    # When the first file changes, the second keeps the old content as a document of its own
    assert ingest(new, "/a/ferry.pdf") == "indexed"
    by_source = {d.source: d for d in index.documents()}
    assert by_source["/a/ferry.pdf"].revision == 2
    assert by_source["/b/ferry.pdf"].status == DocStatus.INDEXED
    texts = {
        c.doc_id: c.text
        for c in index.chunks([h for h, _ in index.keyword_search("leaves", k=5)]).values()
    }
    assert sorted(texts.values()) == ["The ferry leaves at noon.", "The train leaves at midnight."]

    # And deleting a document leaves its copy under another name whole
    assert ingest(new, "/c/train.pdf") == "duplicate"
    Shelf(index, index, index).remove(index.find_document("/a/ferry.pdf").doc_id)
    assert {d.source for d in index.documents()} == {"/b/ferry.pdf", "/c/train.pdf"}
    assert index.count() == 2
    found = index.chunks([h for h, _ in index.keyword_search("midnight", k=5)]).values()
    assert [c.source for c in found] == ["/c/train.pdf"]
    index.close()


def _put_pages(index: SqliteIndex, doc_id: str, version: str, texts: list[str]) -> None:
    chunks = _chunks(doc_id, version, texts)
    record = DocumentRecord(
        doc_id=doc_id, source=f"/docs/{doc_id}.pdf", title=doc_id.title(), version=version
    )
    pages = [
        Page(number=n, markdown=text, chars=len(text), ocr=n == 2)
        for n, text in enumerate(texts, start=1)
    ]
    vectors = WordEmbedder().embed_documents([c.text for c in chunks])
    index.replace_document(record, chunks, vectors, pages=pages)


def test_index_keeps_page_text_of_each_content_until_nothing_has_it(index: SqliteIndex) -> None:
    _put_pages(index, "a", "v1", ["old apples", "old pears"])
    copy = DocumentRecord(doc_id="copy-of-a", source="/docs/copy-of-a.pdf", version="v1")
    shelf = Shelf(index, index, index)
    shelf.copy("a", copy)  # the same bytes under another name

    stored = index.stored_pages("a", "v1")
    assert [(p.number, p.markdown, p.ocr) for p in stored or []] == [
        (1, "old apples", False),
        (2, "old pears", True),
    ]

    _put_pages(index, "a", "v2", ["new cherries"])  # a's file changed; the copy keeps v1
    heir = index.find_document("copy-of-a.pdf")
    assert heir.version == "v1" and index.stored_pages(heir.doc_id, "v1") == stored
    assert [p.markdown for p in index.stored_pages("a", "v2") or []] == ["new cherries"]

    shelf.remove(heir.doc_id)
    shelf.remove("a")
    assert index.stored_pages("a", "v1") is None and index.stored_pages("a", "v2") is None
    with sqlite3.connect(index.path) as db:
        assert db.execute("SELECT COUNT(*) FROM pages").fetchone() == (0,)
    db.close()


def _report(doc_id: str, source: str, text: str) -> tuple[DocumentRecord, list[Chunk]]:
    chunk = Chunk(
        chunk_id=f"{doc_id}:v1:00000",
        doc_id=doc_id,
        version="v1",
        source=source,
        title="Annual report",
        headings=["Liquidity"],
        page_start=1,
        page_end=1,
        text=text,
    )
    record = DocumentRecord(doc_id=doc_id, source=source, title="Annual report", version="v1")
    return record, [chunk]


def test_index_keyword_search_reads_the_file_name_of_each_chunk(index: SqliteIndex) -> None:
    # Given two annual reports that say the same, told apart only by their file names
    text = "Capital expenditures were $11.9 billion."
    for doc_id, name in (("w", "walmart-10k-2017"), ("a", "amazon-10k-2017")):
        record, chunks = _report(doc_id, f"/reports/{name}.pdf", text)
        index.replace_document(record, chunks, WordEmbedder().embed_documents([text]))

    # When the question names the company, Then its report ranks first
    hits = index.keyword_search("Amazon's capital expenditures", k=2)

    assert [chunk_id for chunk_id, _ in hits] == ["a:v1:00000", "w:v1:00000"]
    assert hits[0][1] > hits[1][1]
    # The stored, shown and quoted text stays the page text
    assert index.chunks(["a:v1:00000"])["a:v1:00000"].text == text


def test_index_analyses_a_file_written_before_file_names_were_context_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "index.sqlite3"
    index = SqliteIndex(path, embedding_model="test-words", dimension=64)
    record, chunks = _report("a", "/reports/amazon-10k-2017.pdf", "Capital expenditures rose.")
    index.replace_document(record, chunks, WordEmbedder().embed_documents([chunks[0].text]))
    index.close()
    with sqlite3.connect(path) as db:  # terms as docchat stored them before: no file name
        db.execute("DELETE FROM meta WHERE key = 'bm25_fields'")
        db.execute("UPDATE chunks SET length = 0, term_ids = x'', term_freqs = x''")
    db.close()

    reopened = SqliteIndex(path, embedding_model="test-words", dimension=64)

    assert [c for c, _ in reopened.keyword_search("amazon", k=5)] == ["a:v1:00000"]
    assert [c for c, _ in reopened.keyword_search("liquidity", k=5)] == ["a:v1:00000"]
    reopened.close()
    with sqlite3.connect(path) as db:
        stored = dict(db.execute("SELECT key, value FROM meta").fetchall())
    db.close()
    assert json.loads(stored["bm25_fields"]) == FIELD_WEIGHTS
    assert stored["schema"] == "7"


def test_a_synced_files_chunks_are_found_by_its_name_in_files_written_before_such_names(
    tmp_path: Path,
) -> None:
    # Given a file written before chunks kept a name their source does not end in
    path = tmp_path / "index.sqlite3"
    index = SqliteIndex(path, embedding_model="test-words", dimension=64)
    _put(index, "old", "v1", ["apples"])
    index.close()
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE chunks DROP COLUMN file_name")
    db.close()

    # When it takes a Drive file's chunk (its link ends in "view"), named "Q3 figures.xlsx"
    reopened = SqliteIndex(path, embedding_model="test-words", dimension=64)
    drive = "https://docs.google.com/spreadsheets/d/1fIgUrEsQ3/edit?usp=drivesdk"
    record, chunks = _report("q3", drive, "Revenue grew in the third quarter.")
    named = [chunks[0].model_copy(update={"file_name": "Q3 figures.xlsx"})]
    reopened.replace_document(record, named, WordEmbedder().embed_documents([named[0].text]))

    # Then its name finds it and the end of its link does not, also once every chunk's BM25
    # terms are computed again (as after an upgrade that weighs the fields otherwise)
    def hits(query: str) -> list[str]:
        return [c for c, _ in reopened.keyword_search(query, k=5)]

    assert hits("figures") == ["q3:v1:00000"] and hits("edit") == []
    reopened.close()
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM meta WHERE key = 'bm25_fields'")
    db.close()
    reopened = SqliteIndex(path, embedding_model="test-words", dimension=64)
    assert hits("figures") == ["q3:v1:00000"] and hits("edit") == []
    assert reopened.chunks(["q3:v1:00000"])["q3:v1:00000"].file_name == "Q3 figures.xlsx"
    assert reopened.document_chunks("old")[0].file_name == ""
    reopened.close()
