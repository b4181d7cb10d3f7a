"""An index written before segments (schema 5, by main's docchat at 5a5a262) opens after the
change: a copy of one is upgraded in place, keeps everything it held (its alias a document of
its own) and is searched from segments."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from docchat.adapters.sqlite_index import SqliteIndex, maintenance
from docchat.adapters.sqlite_index import store as sqlite_store
from docchat.errors import IndexSchemaError
from docchat.ingest.decision import doc_id_for
from docchat.ingest.shelf import Shelf
from docchat.models import DocStatus
from tests.conftest import WordEmbedder

# Written by tests/fixtures/index-schema5/make.py with docchat at 5a5a262 (see its docstring).
SCHEMA_5 = Path(__file__).parents[1] / "fixtures" / "index-schema5" / "index.sqlite3"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    path = tmp_path / "index.sqlite3"
    shutil.copyfile(SCHEMA_5, path)
    return path


def test_a_schema_5_index_opens_upgraded_with_all_it_held(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintenance, "FLUSH_ROWS", 2)  # its seven chunks make a segment

    index = SqliteIndex(copy, embedding_model="test-words", dimension=64)

    # Its documents, page text and notes are all there; its alias is a copy of its document
    copy_id = doc_id_for("/copies/ferry.pdf")
    assert [(d.source, d.doc_id, d.status, d.chunks) for d in index.documents()] == [
        ("/copies/ferry.pdf", copy_id, DocStatus.INDEXED, 2),
        ("/docs/broken.pdf", "broken", DocStatus.FAILED, 0),
        ("/docs/ferry.pdf", "ferry", DocStatus.INDEXED, 2),
        ("/docs/harbour.pdf", "harbour", DocStatus.INDEXED, 1),
        ("/docs/train.pdf", "train", DocStatus.INDEXED, 2),
    ]
    assert [c.text for c in index.document_chunks(copy_id)] == [
        "The ferry leaves at noon from pier 4.",
        "Tickets are sold on board.",
    ]
    pages = index.stored_pages("ferry", "ferry-v1") or []
    assert [p.markdown for p in pages] == [
        "The ferry leaves at noon from pier 4.",
        "Tickets are sold on board.",
    ]
    assert index.notes(["note-key"]) == {"note-key": "A note from the port authority."}
    # Its chunks were saved as a segment, and both searches find them there
    parts = index._live.view().parts
    assert [p.segment.folder is not None for p in parts] == [True]
    assert index.count() == 7
    assert [c for c, _ in index.keyword_search("port authority", k=2)] == ["harbour:v1:00000"]
    query = WordEmbedder().embed_query("Train\nTimetable\nThe night train reaches Vienna at dawn.")
    assert index.vector_search(query, k=1)[0][0] == "train:v1:00000"
    # The file says schema 7, and takes new writes that the next search sees
    with sqlite3.connect(copy) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("7",)
    db.close()
    shelf = Shelf(index, index, index)
    shelf.remove("ferry")
    hits = index.keyword_search("tickets", k=3)
    assert [c for c, _ in hits] == [f"{copy_id}:v1:00001"]
    assert index.stored_pages(copy_id, "ferry-v1") == pages
    shelf.remove("harbour")
    assert index.keyword_search("port authority", k=2) == []
    assert index.document("harbour") is None
    index.close()


def test_a_schema_5_index_that_is_read_only_says_how_to_upgrade_it(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root may write anyway: the index is told it may not
    monkeypatch.setattr(sqlite_store.os, "access", lambda *_: False)

    with pytest.raises(IndexSchemaError, match="open it once where it is writable to upgrade"):
        SqliteIndex(copy, embedding_model="test-words", dimension=64)
