"""The SQLite index (local mode) holds to both ports' contracts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from docchat.adapters.sqlite_index import SqliteIndex
from tests.contract.catalog import DocumentCatalogContract
from tests.contract.chunk_store import DIMENSION, MODEL, ChunkStoreContract


@pytest.fixture
def sqlite_index(tmp_path: Path) -> Iterator[SqliteIndex]:
    index = SqliteIndex(tmp_path / "index.sqlite3", embedding_model=MODEL, dimension=DIMENSION)
    yield index
    index.close()


class TestSqliteChunkStore(ChunkStoreContract):
    KEEPS_SENTENCES = True
    STEMS = True  # FTS5's porter tokenizer

    @pytest.fixture
    def store(self, sqlite_index: SqliteIndex) -> SqliteIndex:
        return sqlite_index


class TestSqliteCatalog(DocumentCatalogContract):
    TELLS_REVISIONS = True

    @pytest.fixture
    def catalog(self, sqlite_index: SqliteIndex) -> SqliteIndex:
        return sqlite_index
