"""`SqliteIndex`: the ports local mode needs (search index, registry, ingestion's writes, page
and note store) over one SQLite file, each write one transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from docchat.adapters.sqlite_index import pages as texts
from docchat.adapters.sqlite_index.catalog import Records, hand_over, record_of, write_record
from docchat.adapters.sqlite_index.chunks import ChunkRows
from docchat.adapters.sqlite_index.schema import prepare
from docchat.adapters.sqlite_index.search import Searcher
from docchat.adapters.sqlite_index.store import Database
from docchat.models import Chunk, DocStatus, DocumentRecord, Page
from docchat.ports import Vectors


class SqliteIndex:
    """Documents, chunks and vectors of one embedding model in a single SQLite file."""

    def __init__(
        self, path: Path, *, embedding_model: str, dimension: int, create: bool = True
    ) -> None:
        """Open (or with `create`, make) the index at `path`. Where the file or its folder is
        not writable the index opens read-only: searching works, writes raise
        ReadOnlyStorageError (a team can share a published index)."""
        self.path = path
        self.embedding_model = embedding_model
        self.dimension = dimension
        self._db = Database(path, create=create)
        self._rows = ChunkRows(embedding_model=embedding_model, dimension=dimension)
        try:
            prepare(self._db, self._rows, embedding_model=embedding_model, dimension=dimension)
        except BaseException:
            self.close()
            raise
        self._records = Records(self._db)
        self._searcher = Searcher(self._db, self._rows.tokenizer, dimension=dimension)

    @property
    def location(self) -> str:
        """The index file (what the cloud pipeline's Register compares; see ports.ChunkIndex)."""
        return str(self.path)

    @property
    def read_only(self) -> bool:
        return self._db.read_only

    def close(self) -> None:
        self._db.close()
        self._rows.close()

    # --- documents ---------------------------------------------------------------------------

    def document(self, doc_id: str) -> DocumentRecord | None:
        return self._records.document(doc_id)

    def documents(self) -> list[DocumentRecord]:
        return self._records.documents()

    def unfinished(self) -> list[DocumentRecord]:
        """Documents whose indexing started and has not ended (INDEXED or FAILED)."""
        done = (DocStatus.INDEXED, DocStatus.FAILED)
        return [d for d in self.documents() if d.status not in done]

    def find_document(self, ref: str, *, path: str | None = None) -> DocumentRecord:
        """The one document `ref` names exactly: its id, its source, `path` (`ref` resolved by
        the caller), or its file name; an alias names the document it shares content with."""
        return self._records.find_source(ref, path=path)[0]

    def find_source(self, ref: str, *, path: str | None = None) -> tuple[DocumentRecord, str]:
        """Like find_document, with the source `ref` named: the document's own, or an alias."""
        return self._records.find_source(ref, path=path)

    def indexed_version(self, version: str) -> DocumentRecord | None:
        """An indexed document whose content is exactly this version, if there is one."""
        return self._records.indexed_version(version)

    def aliases(self) -> dict[str, list[str]]:
        """doc id -> the other sources that hold the same bytes as that document."""
        return self._records.aliases()

    def set_record(self, record: DocumentRecord) -> None:
        """Write a document's registry entry, leaving its chunks as they are."""
        with self._db.transaction() as db:
            write_record(db, record)

    def add_alias(self, source: str, doc_id: str, version: str) -> None:
        """Record that `source` holds the same bytes as the indexed document `doc_id`; a
        document of its own that `source` had (other content, before) is replaced."""
        with self._chunk_transaction() as db:
            for row in db.execute(
                "SELECT doc_id FROM documents WHERE source = ? AND doc_id != ?", (source, doc_id)
            ).fetchall():
                hand_over(db, row[0], keep=None)
                self._drop_document(db, row[0])
            db.execute(
                "INSERT OR REPLACE INTO aliases (source, doc_id, version) VALUES (?, ?, ?)",
                (source, doc_id, version),
            )

    def remove_alias(self, source: str) -> bool:
        """Forget that `source` was an alias; whether it was one."""
        if self.read_only or not self._db.rows("SELECT 1 FROM aliases WHERE source = ?", (source,)):
            return False
        with self._db.transaction() as db:
            db.execute("DELETE FROM aliases WHERE source = ?", (source,))
        return True

    # --- writes of chunks --------------------------------------------------------------------

    @contextmanager
    def _chunk_transaction(self) -> Iterator[sqlite3.Connection]:
        """A transaction that may change chunks: the searcher reads them again afterwards,
        from what was kept, whether the write went through or not."""
        try:
            with self._db.transaction() as db:
                yield db
        finally:
            self._searcher.changed()

    def replace_document(
        self,
        record: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: Vectors,
        *,
        pages: Sequence[Page] = (),
    ) -> None:
        """Atomically swap a document's chunks (and the text of its pages, when given) for a
        new version's and mark it indexed."""
        with self._chunk_transaction() as db:
            hand_over(db, record.doc_id, keep=record.version)
            db.execute("DELETE FROM chunks WHERE doc_id = ?", (record.doc_id,))
            self._rows.insert(db, chunks, vectors)
            write_record(
                db, record.model_copy(update={"status": DocStatus.INDEXED, "chunks": len(chunks)})
            )
            if pages:
                texts.write_pages(db, record.version, pages)
            texts.drop_unused_pages(db)

    def write_chunks(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        """Add chunks (a retried batch replaces its own earlier copy): the pipeline's write."""
        with self._chunk_transaction() as db:
            ids = [c.chunk_id for c in chunks]
            marks = ", ".join("?" for _ in ids)
            db.execute(f"DELETE FROM chunks WHERE chunk_id IN ({marks})", ids)
            self._rows.insert(db, chunks, vectors)

    def finalize_document(self, doc_id: str, version: str) -> dict[str, int]:
        """Remove the document's chunks of every version but `version`."""
        with self._chunk_transaction() as db:
            old = db.execute(
                "DELETE FROM chunks WHERE doc_id = ? AND version != ?", (doc_id, version)
            ).rowcount
        return {"old": old, "duplicates": 0}

    def delete_document(self, doc_id: str) -> None:
        """Forget a document under every name it has (its aliases too)."""
        with self._chunk_transaction() as db:
            self._drop_document(db, doc_id)
            db.execute("DELETE FROM aliases WHERE doc_id = ?", (doc_id,))
            texts.drop_unused_pages(db)
            texts.drop_unused_notes(db)

    def remove_source(self, source: str) -> DocumentRecord | None:
        """Forget one name: an alias goes alone; a document's own source hands the document to
        its first alias. The document that is left under other names, if any."""
        with self._chunk_transaction() as db:
            alias = db.execute("SELECT doc_id FROM aliases WHERE source = ?", (source,)).fetchone()
            if alias is not None:
                db.execute("DELETE FROM aliases WHERE source = ?", (source,))
                return record_of(db, alias[0])
            heir: DocumentRecord | None = None
            for (doc_id,) in db.execute(
                "SELECT doc_id FROM documents WHERE source = ?", (source,)
            ).fetchall():
                heir = hand_over(db, doc_id, keep=None)
                self._drop_document(db, doc_id)
            texts.drop_unused_pages(db)
            texts.drop_unused_notes(db)
            return heir

    def clear_chunks(self, doc_id: str) -> None:
        with self._chunk_transaction() as db:
            hand_over(db, doc_id, keep=None)
            db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            texts.drop_unused_pages(db)

    @staticmethod
    def _drop_document(db: sqlite3.Connection, doc_id: str) -> None:
        db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
        db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))

    # --- page text and notes -----------------------------------------------------------------

    def stored_pages(self, doc_id: str, version: str) -> list[Page] | None:
        """The pages kept for this content (identical files share them); None without any."""
        return texts.stored_pages(self._db, version)

    def notes(self, keys: Sequence[str]) -> dict[str, str]:
        return texts.notes(self._db, keys)

    def save_notes(self, notes: Mapping[str, str]) -> None:
        with self._db.transaction() as db:
            texts.save_notes(db, notes)

    # --- reading chunks and searching --------------------------------------------------------

    def count(self, doc_id: str | None = None) -> int:
        if doc_id is None:
            return int(self._db.rows("SELECT COUNT(*) FROM chunks")[0][0])
        return int(self._db.rows("SELECT COUNT(*) FROM chunks WHERE doc_id = ?", (doc_id,))[0][0])

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by id."""
        if not chunk_ids:
            return {}
        rows = self._db.rows(
            f"SELECT * FROM chunks WHERE chunk_id IN ({', '.join('?' for _ in chunk_ids)})",
            list(chunk_ids),
        )
        return {row["chunk_id"]: self._rows.chunk(row) for row in rows}

    def document_chunks(self, doc_id: str, *, version: str | None = None) -> list[Chunk]:
        """A document's chunks in reading order, of one version when `version` is given."""
        if version is None:
            rows = self._db.rows("SELECT * FROM chunks WHERE doc_id = ? ORDER BY id", (doc_id,))
        else:
            rows = self._db.rows(
                "SELECT * FROM chunks WHERE doc_id = ? AND version = ? ORDER BY id",
                (doc_id, version),
            )
        return [self._rows.chunk(row) for row in rows]

    def vector_search(
        self,
        query: Vectors,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """Exact cosine top-k as (chunk id, similarity), best first."""
        return self._searcher.vector_search(query, k=k, doc_ids=doc_ids, versions=versions)

    def keyword_search(
        self,
        query: str,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 top-k as (chunk id, score where higher is better), best first."""
        return self._searcher.keyword_search(query, k=k, doc_ids=doc_ids, versions=versions)

    def stats(self) -> dict[str, Any]:
        by_status: dict[str, int] = {
            str(row[0]): int(row[1])
            for row in self._db.rows("SELECT status, COUNT(*) FROM documents GROUP BY status")
        }
        totals = self._db.rows(
            "SELECT COUNT(*), COALESCE(SUM(pages), 0) FROM documents WHERE status = ?",
            (DocStatus.INDEXED.value,),
        )[0]
        return {
            "documents": sum(by_status.values()),
            "by_status": by_status,
            "indexed_pages": totals[1],
            "chunks": self.count(),
            "embedding_model": self.embedding_model,
            "dimension": self.dimension,
            "path": str(self.path),
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
        }
