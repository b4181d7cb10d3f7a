"""An index written before segments (schema 5, by docchat at 78ebf87) opens after the change: a
copy of one is upgraded in place, keeps everything it held and is searched from segments."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from docchat.adapters.sqlite_index import SqliteIndex, maintenance
from docchat.adapters.sqlite_index import store as sqlite_store
from docchat.errors import IndexSchemaError
from docchat.models import DocStatus
from tests.conftest import WordEmbedder

# Written by tests/fixtures/index-schema5/make.py with docchat at 78ebf87 (see its docstring).
SCHEMA_5 = Path(__file__).parents[1] / "fixtures" / "index-schema5" / "index.sqlite3"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    path = tmp_path / "index.sqlite3"
    shutil.copyfile(SCHEMA_5, path)
    return path


def test_a_schema_5_index_opens_upgraded_with_all_it_held(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintenance, "FLUSH_ROWS", 2)  # its five chunks make a segment

    index = SqliteIndex(copy, embedding_model="test-words", dimension=64)

    # Its documents, alias, page text and notes are all there
    assert [(d.doc_id, d.status) for d in index.documents()] == [
        ("broken", DocStatus.FAILED),
        ("ferry", DocStatus.INDEXED),
        ("harbour", DocStatus.INDEXED),
        ("train", DocStatus.INDEXED),
    ]
    assert index.aliases() == {"ferry": ["/copies/ferry.pdf"]}
    pages = index.stored_pages("ferry", "ferry-v1") or []
    assert [p.markdown for p in pages] == [
        "The ferry leaves at noon from pier 4.",
        "Tickets are sold on board.",
    ]
    assert index.notes(["note-key"]) == {"note-key": "A note from the port authority."}
    # Its chunks were saved as a segment, and both searches find them there
    parts = index._live.view().parts
    assert [p.segment.folder is not None for p in parts] == [True]
    assert index.count() == 5
    assert [c for c, _ in index.keyword_search("port authority", k=2)] == ["harbour:v1:00000"]
    query = WordEmbedder().embed_query("Train\nTimetable\nThe night train reaches Vienna at dawn.")
    assert index.vector_search(query, k=1)[0][0] == "train:v1:00000"
    # The file says schema 6, and takes new writes that the next search sees
    with sqlite3.connect(copy) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("6",)
    db.close()
    index.delete_document("harbour")
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
