"""The embedded index: SQLite for documents and chunks, numpy for exact k-NN and for BM25."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from docchat.adapters.bm25 import FIELD_WEIGHTS, Fields, Postings, Tokenizer, best_rows
from docchat.adapters.sqlite_errors import StorageKind, storage_error, write_transaction
from docchat.errors import (
    DocumentNotFoundError,
    EmbedderMismatchError,
    IndexMissingError,
    IndexSchemaError,
    ReadOnlyStorageError,
    StorageError,
)
from docchat.models import Chunk, DocStatus, DocumentRecord, Page, file_label
from docchat.ports import Vectors

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, source TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL,
    status TEXT NOT NULL, pages INTEGER NOT NULL, pages_without_text INTEGER NOT NULL,
    chunks INTEGER NOT NULL, error_code TEXT NOT NULL, error TEXT NOT NULL,
    updated_at REAL NOT NULL, revision INTEGER NOT NULL DEFAULT 1,
    pages_ocr INTEGER NOT NULL DEFAULT 0,
    collections TEXT NOT NULL DEFAULT '["default"]'
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, chunk_id TEXT UNIQUE NOT NULL, doc_id TEXT NOT NULL,
    version TEXT NOT NULL, source TEXT NOT NULL, title TEXT NOT NULL, headings TEXT NOT NULL,
    page_start INTEGER NOT NULL, page_end INTEGER NOT NULL, page_breaks TEXT NOT NULL,
    text TEXT NOT NULL,
    vector BLOB NOT NULL,
    length INTEGER NOT NULL, term_ids BLOB NOT NULL, term_freqs BLOB NOT NULL,
    note TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id);
CREATE TABLE IF NOT EXISTS terms (id INTEGER PRIMARY KEY, term TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS aliases (
    source TEXT PRIMARY KEY, doc_id TEXT NOT NULL, version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunk_notes (key TEXT PRIMARY KEY, note TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (
    version TEXT NOT NULL, number INTEGER NOT NULL, page TEXT NOT NULL,
    PRIMARY KEY (version, number)
);
"""
SCHEMA_VERSION = "5"
# What the stored BM25 term frequencies were computed from: the fields and their weights. A
# file whose chunks were analysed otherwise (before file names joined a chunk's context) is
# analysed again when opened writable; the schema stays, so older versions still read it.
BM25_FIELDS = json.dumps(FIELD_WEIGHTS)


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
        # One connection shared by the threads of a server or a test harness; the lock keeps
        # each transaction and each read whole.
        self._lock = threading.RLock()
        if not path.exists() and not create:
            raise IndexMissingError(
                f"there is no index at {path}: check --data-dir (or DOCCHAT_DATA_DIR), "
                "or add documents first with `docchat ingest`"
            )
        self.read_only = path.exists() and not (
            os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
        )
        if self.read_only:
            self._db = self._open_read_only()
        else:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(
                    f"cannot create the data directory {path.parent} ({exc.strerror or exc}): "
                    "choose a writable --data-dir"
                ) from exc
            with self._storage():
                self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
                self._db.row_factory = sqlite3.Row
                self._db.execute("PRAGMA busy_timeout = 10000")
                self._db.execute("PRAGMA journal_mode = WAL")
                self._db.executescript(_SCHEMA)
        self._tokenizer = Tokenizer()
        try:
            self._check_model()
        except BaseException:
            self.close()
            raise
        self._loaded: tuple[int, int] | None = None
        # Bumped by this connection's chunk writes only: registry writes keep the vector cache.
        self._chunk_generation = 0
        self._ids = np.zeros(0, dtype=object)
        # doc_id -> version -> positions of its chunks in the loaded arrays
        self._doc_rows: dict[str, dict[str, NDArray[np.intp]]] = {}
        self._pairs = 0  # how many (doc_id, version) pairs _doc_rows holds
        # doc_id -> version, when every document has chunks of one version only
        self._versions: dict[str, str] | None = {}
        self._matrix = np.zeros((0, dimension), dtype=np.float32)
        self._postings = Postings.build({}, [], [])

    @property
    def location(self) -> str:
        """The index file (what the cloud pipeline's Register compares; see ports.ChunkIndex)."""
        return str(self.path)

    def close(self) -> None:
        self._db.close()
        self._tokenizer.close()

    def _open_read_only(self) -> sqlite3.Connection:
        """A read-only connection; `immutable` where SQLite cannot even make its WAL index
        file (a read-only file system or folder): nobody can be writing there then."""
        uri = self.path.resolve().as_uri()
        with self._storage():
            db = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
            try:
                db.execute("SELECT COUNT(*) FROM meta").fetchone()
            except sqlite3.OperationalError:
                db.close()
                db = sqlite3.connect(
                    f"{uri}?mode=ro&immutable=1", uri=True, check_same_thread=False
                )
            db.isolation_level = None
            db.row_factory = sqlite3.Row
        return db

    @contextmanager
    def _storage(self) -> Iterator[None]:
        """SQLite's own errors (a full disk, a damaged file, ...) as errors that say what to do."""
        try:
            yield
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
            if isinstance(exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError)):
                raise
            raise storage_error(exc, self.path, _INDEX_SAYS) from exc

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if self.read_only:
            raise ReadOnlyStorageError(
                f"the index at {self.path} is read-only: searching and reading work, but adding "
                "or removing documents needs a writable --data-dir"
            )
        with self._lock, self._storage():
            try:
                with write_transaction(self._db):
                    yield
            except BaseException:
                self._chunk_generation += 1  # the vector cache reloads from what was kept
                raise

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock, self._storage():
            return self._db.execute(sql, params).fetchall()

    def _check_model(self) -> None:
        self._chunk_generation = 0
        if self.read_only:
            meta = {str(k): str(v) for k, v in self._rows("SELECT key, value FROM meta")}
            if not meta:
                raise IndexMissingError(
                    f"{self.path} holds no docchat index, and it is read-only: check --data-dir"
                )
            if meta.get("schema") != SCHEMA_VERSION:
                raise IndexSchemaError(
                    f"the read-only index at {self.path} was written by another docchat version "
                    f"(schema {meta.get('schema', '1')}, this one reads {SCHEMA_VERSION}): open "
                    "it once where it is writable to upgrade it, or ingest the documents again"
                )
            self._check_embedder(meta)
            return
        with self._transaction():
            meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
            if not meta:
                self._db.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [
                        ("embedding_model", self.embedding_model),
                        ("dimension", str(self.dimension)),
                        ("schema", SCHEMA_VERSION),
                        ("bm25_fields", BM25_FIELDS),
                    ],
                )
                return
        if meta.get("schema") not in ("2", "3", "4", SCHEMA_VERSION):
            raise IndexSchemaError(
                f"the index at {self.path} was written by another docchat version "
                f"(schema {meta.get('schema', '1')}, this one reads {SCHEMA_VERSION}): "
                "delete that file or use another --data-dir, and ingest the documents again"
            )
        self._add_columns()
        if meta.get("schema") == "2":
            self._upgrade_from_2()
            self._upgrade_from_3()
        elif meta.get("schema") in ("3", "4"):
            self._upgrade_from_3()
        self._check_embedder(meta)
        if meta.get("bm25_fields") != BM25_FIELDS:
            self._analyse_again()

    def _add_columns(self) -> None:
        """Files written before OCR lack the OCR'd page count, and files written before
        model-written notes lack a chunk's note: columns with defaults, which older docchat
        versions ignore, so the schema version stays."""
        with self._transaction():
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(documents)")}
            if "pages_ocr" not in columns:
                self._db.execute(
                    "ALTER TABLE documents ADD COLUMN pages_ocr INTEGER NOT NULL DEFAULT 0"
                )
            if "collections" not in columns:  # before collections: all in the default one
                self._db.execute(
                    "ALTER TABLE documents ADD COLUMN collections TEXT NOT NULL "
                    """DEFAULT '["default"]'"""
                )
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(chunks)")}
            if "note" not in columns:
                self._db.execute("ALTER TABLE chunks ADD COLUMN note TEXT NOT NULL DEFAULT ''")

    def _check_embedder(self, meta: dict[str, str]) -> None:
        if (meta["embedding_model"], int(meta["dimension"])) != (
            self.embedding_model,
            self.dimension,
        ):
            raise EmbedderMismatchError(
                f"the index at {self.path} was built with {meta['embedding_model']} "
                f"({meta['dimension']} dims), not {self.embedding_model} ({self.dimension} dims): "
                "use the same embedder, or another --data-dir and ingest the documents again"
            )

    def _upgrade_from_2(self) -> None:
        """Schema 2 ranked with an FTS5 table; give each chunk its terms instead (same scores)."""
        with self._transaction():
            for column in ("length INTEGER", "term_ids BLOB", "term_freqs BLOB"):
                self._db.execute(f"ALTER TABLE chunks ADD COLUMN {column} NOT NULL DEFAULT 0")
            self._store_terms()
            self._db.execute("DROP TABLE chunks_fts")
            self._db.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")

    def _analyse_again(self) -> None:
        """Compute every chunk's BM25 terms again from its stored fields (see BM25_FIELDS).
        Its vector stays: it is the same model's, and the file is re-embedded with its context
        when its content changes or it is ingested again after `docchat rm`."""
        with self._transaction():
            self._store_terms()
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('bm25_fields', ?)", (BM25_FIELDS,)
            )

    def _store_terms(self) -> None:
        self._chunk_generation += 1
        rows = self._db.execute(
            "SELECT id, source, title, headings, text, note FROM chunks"
        ).fetchall()
        for start in range(0, len(rows), 500):
            batch = rows[start : start + 500]
            fields = [
                _row_fields(
                    r["source"], r["title"], json.loads(r["headings"]), r["text"], r["note"]
                )
                for r in batch
            ]
            self._db.executemany(
                "UPDATE chunks SET length = ?, term_ids = ?, term_freqs = ? WHERE id = ?",
                [(*terms, r["id"]) for terms, r in zip(self._terms(fields), batch, strict=True)],
            )

    def _upgrade_from_3(self) -> None:
        """Schema 4 counts a document's revisions (its `aliases` table the schema script made);
        schema 5 keeps the text of each page (its `pages` table the schema script made, empty:
        the documents indexed before show their page text once ingested again)."""
        with self._transaction():
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(documents)")}
            if "revision" not in columns:
                self._db.execute(
                    "ALTER TABLE documents ADD COLUMN revision INTEGER NOT NULL DEFAULT 1"
                )
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))

    # --- documents ---------------------------------------------------------------------------

    def document(self, doc_id: str) -> DocumentRecord | None:
        rows = self._rows("SELECT * FROM documents WHERE doc_id = ?", (doc_id,))
        return DocumentRecord(**dict(rows[0])) if rows else None

    def documents(self) -> list[DocumentRecord]:
        rows = self._rows("SELECT * FROM documents ORDER BY source")
        return [DocumentRecord(**dict(row)) for row in rows]

    def unfinished(self) -> list[DocumentRecord]:
        """Documents whose indexing started and has not ended (INDEXED or FAILED)."""
        done = (DocStatus.INDEXED, DocStatus.FAILED)
        return [d for d in self.documents() if d.status not in done]

    def find_document(self, ref: str, *, path: str | None = None) -> DocumentRecord:
        """The one document `ref` names exactly: its id, its source, `path` (`ref` resolved by
        the caller), or its file name; an alias names the document it shares content with."""
        return self.find_source(ref, path=path)[0]

    def find_source(self, ref: str, *, path: str | None = None) -> tuple[DocumentRecord, str]:
        """Like find_document, with the source `ref` named: the document's own, or an alias."""
        named = {ref, path} - {None}
        found: dict[str, tuple[DocumentRecord, str]] = {}
        for record in self.documents():
            if record.doc_id == ref or record.source in named:
                return record, record.source
            if _name(record.source) == ref:
                found[record.source] = (record, record.source)
        for source, doc_id in self._rows("SELECT source, doc_id FROM aliases ORDER BY source"):
            owner = self.document(doc_id)
            if owner is None:
                continue
            if source in named:
                return owner, source
            if _name(source) == ref:
                found[source] = (owner, source)
        if len(found) == 1:
            return next(iter(found.values()))
        if found:
            candidates = "; ".join(f"{r.doc_id} ({source})" for source, (r, _) in found.items())
            raise DocumentNotFoundError(
                f"{ref!r} names {len(found)} files: give the document id or the full path of "
                f"one of them: {candidates}"
            )
        raise DocumentNotFoundError(
            f"{ref!r} is not in the index: give a document id, path or file name "
            "(`docchat status` lists them)"
        )

    # --- identical content under several names ----------------------------------------------

    def indexed_version(self, version: str) -> DocumentRecord | None:
        """An indexed document whose content is exactly this version, if there is one."""
        rows = self._rows(
            "SELECT * FROM documents WHERE version = ? AND status = ? ORDER BY source LIMIT 1",
            (version, DocStatus.INDEXED.value),
        )
        return DocumentRecord(**dict(rows[0])) if rows else None

    # --- model-written notes (docchat.ingest.notes.NoteCache) ------------------------------------

    def notes(self, keys: Sequence[str]) -> dict[str, str]:
        if not keys:
            return {}
        rows = self._rows(
            "SELECT key, note FROM chunk_notes WHERE key IN (SELECT value FROM json_each(?))",
            (json.dumps(list(keys)),),
        )
        return {str(key): str(note) for key, note in rows}

    def save_notes(self, notes: Mapping[str, str]) -> None:
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO chunk_notes (key, note) VALUES (?, ?)", notes.items()
            )

    def add_alias(self, source: str, doc_id: str, version: str) -> None:
        """Record that `source` holds the same bytes as the indexed document `doc_id`; a
        document of its own that `source` had (other content, before) is replaced."""
        with self._transaction():
            for row in self._db.execute(
                "SELECT doc_id FROM documents WHERE source = ? AND doc_id != ?", (source, doc_id)
            ).fetchall():
                self._hand_over(row[0], keep=None)
                self._delete_chunks(row[0])
                self._db.execute("DELETE FROM documents WHERE doc_id = ?", (row[0],))
            self._db.execute(
                "INSERT OR REPLACE INTO aliases (source, doc_id, version) VALUES (?, ?, ?)",
                (source, doc_id, version),
            )

    def remove_alias(self, source: str) -> bool:
        """Forget that `source` was an alias; whether it was one."""
        if self.read_only or not self._rows("SELECT 1 FROM aliases WHERE source = ?", (source,)):
            return False
        with self._transaction():
            self._db.execute("DELETE FROM aliases WHERE source = ?", (source,))
        return True

    def aliases(self) -> dict[str, list[str]]:
        """doc id -> the other sources that hold the same bytes as that document."""
        found: dict[str, list[str]] = {}
        for source, doc_id in self._rows("SELECT source, doc_id FROM aliases ORDER BY source"):
            found.setdefault(str(doc_id), []).append(str(source))
        return found

    def _hand_over(self, doc_id: str, *, keep: str | None) -> DocumentRecord | None:
        """Before a document's chunks go (deleted, or a new version), the first of its aliases
        whose content they still are becomes a document of its own and takes them: identical
        files indexed once must not be lost with the one that happened to be indexed first."""
        from docchat.ingest.decision import doc_id_for  # the pipeline modules are heavy; only here

        heirs = self._db.execute(
            "SELECT source, version FROM aliases WHERE doc_id = ? AND version != ? ORDER BY source",
            (doc_id, keep or ""),
        ).fetchall()
        rows = self._db.execute("SELECT * FROM documents WHERE doc_id = ?", (doc_id,)).fetchall()
        if not heirs or not rows:
            return None
        old = DocumentRecord(**dict(rows[0]))
        heir, version = str(heirs[0][0]), str(heirs[0][1])
        new_id = doc_id_for(heir)
        self._chunk_generation += 1
        self._db.execute(
            "UPDATE chunks SET doc_id = ?, source = ?, chunk_id = ? || substr(chunk_id, ?)"
            " WHERE doc_id = ? AND version = ?",
            (new_id, heir, new_id, len(doc_id) + 1, doc_id, version),
        )
        self._db.execute("DELETE FROM aliases WHERE source = ?", (heir,))
        self._db.execute(
            "UPDATE aliases SET doc_id = ? WHERE doc_id = ? AND version = ?",
            (new_id, doc_id, version),
        )
        record = old.model_copy(update={"doc_id": new_id, "source": heir, "revision": 1})
        self._write_record(record)
        return record

    def set_record(self, record: DocumentRecord) -> None:
        """Write a document's registry entry, leaving its chunks as they are."""
        with self._transaction():
            self._write_record(record)

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
        with self._transaction():
            self._hand_over(record.doc_id, keep=record.version)
            self._delete_chunks(record.doc_id)
            self._insert(chunks, vectors)
            self._write_record(
                record.model_copy(update={"status": DocStatus.INDEXED, "chunks": len(chunks)})
            )
            if pages:
                self._db.execute("DELETE FROM pages WHERE version = ?", (record.version,))
                self._db.executemany(
                    "INSERT INTO pages (version, number, page) VALUES (?, ?, ?)",
                    [(record.version, p.number, p.model_dump_json()) for p in pages],
                )
            self._drop_unused_pages()

    def stored_pages(self, doc_id: str, version: str) -> list[Page] | None:
        """The pages kept for this content (identical files share them); None without any."""
        rows = self._rows("SELECT page FROM pages WHERE version = ? ORDER BY number", (version,))
        return [Page.model_validate_json(row[0]) for row in rows] or None

    def _drop_unused_pages(self) -> None:
        """Forget the pages of content that no document or alias has any more."""
        self._db.execute(
            "DELETE FROM pages WHERE version NOT IN "
            "(SELECT version FROM documents UNION SELECT version FROM aliases)"
        )

    def write_chunks(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        """Add chunks (a retried batch replaces its own earlier copy): the pipeline's write."""
        with self._transaction():
            ids = [c.chunk_id for c in chunks]
            marks = ", ".join("?" for _ in ids)
            self._db.execute(f"DELETE FROM chunks WHERE chunk_id IN ({marks})", ids)
            self._insert(chunks, vectors)

    def finalize_document(self, doc_id: str, version: str) -> dict[str, int]:
        """Remove the document's chunks of every version but `version`."""
        self._chunk_generation += 1
        with self._transaction():
            old = self._db.execute(
                "DELETE FROM chunks WHERE doc_id = ? AND version != ?", (doc_id, version)
            ).rowcount
        return {"old": old, "duplicates": 0}

    def count(self, doc_id: str | None = None) -> int:
        if doc_id is None:
            return int(self._rows("SELECT COUNT(*) FROM chunks")[0][0])
        return int(self._rows("SELECT COUNT(*) FROM chunks WHERE doc_id = ?", (doc_id,))[0][0])

    def _insert(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        self._chunk_generation += 1
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if vectors.size and vectors.shape[1] != self.dimension:
            raise EmbedderMismatchError(
                f"vectors have {vectors.shape[1]} dims; this index holds {self.dimension}"
            )
        rows = [
            (
                chunk.chunk_id,
                chunk.doc_id,
                chunk.version,
                chunk.source,
                chunk.title,
                json.dumps(chunk.headings),
                chunk.page_start,
                chunk.page_end,
                json.dumps(chunk.page_breaks),
                chunk.text,
                np.asarray(vector, dtype=np.float32).tobytes(),
                *terms,
                chunk.note,
            )
            for chunk, vector, terms in zip(
                chunks, vectors, self._terms([_fields(chunk) for chunk in chunks]), strict=True
            )
        ]
        self._db.executemany(
            "INSERT INTO chunks (chunk_id, doc_id, version, source, title, headings, page_start,"
            " page_end, page_breaks, text, vector, length, term_ids, term_freqs, note)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )

    def _terms(self, chunks: Sequence[Fields]) -> list[tuple[int, bytes, bytes]]:
        """Per chunk: its number of tokens, term ids and weighted term frequencies, as stored."""
        analysed = self._tokenizer.analyse(chunks)
        vocabulary = sorted(set().union(*(frequencies for frequencies, _ in analysed)))
        self._db.executemany(
            "INSERT OR IGNORE INTO terms (term) VALUES (?)", [(term,) for term in vocabulary]
        )
        term_ids = dict(
            self._db.execute(
                "SELECT term, id FROM terms WHERE term IN (SELECT value FROM json_each(?))",
                (json.dumps(vocabulary),),
            ).fetchall()
        )
        return [
            (
                length,
                np.array([term_ids[term] for term in frequencies], dtype=np.int32).tobytes(),
                np.array(list(frequencies.values()), dtype=np.float32).tobytes(),
            )
            for frequencies, length in analysed
        ]

    def delete_document(self, doc_id: str) -> None:
        """Forget a document under every name it has (its aliases too)."""
        with self._transaction():
            self._delete_chunks(doc_id)
            self._db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
            self._db.execute("DELETE FROM aliases WHERE doc_id = ?", (doc_id,))
            self._drop_unused_pages()
            self._drop_unused_notes()

    def remove_source(self, source: str) -> DocumentRecord | None:
        """Forget one name: an alias goes alone; a document's own source hands the document to
        its first alias. The document that is left under other names, if any."""
        with self._transaction():
            alias = self._db.execute(
                "SELECT doc_id FROM aliases WHERE source = ?", (source,)
            ).fetchone()
            if alias is not None:
                self._db.execute("DELETE FROM aliases WHERE source = ?", (source,))
                rows = self._db.execute(
                    "SELECT * FROM documents WHERE doc_id = ?", (alias[0],)
                ).fetchall()
                return DocumentRecord(**dict(rows[0])) if rows else None
            heir: DocumentRecord | None = None
            for (doc_id,) in self._db.execute(
                "SELECT doc_id FROM documents WHERE source = ?", (source,)
            ).fetchall():
                heir = self._hand_over(doc_id, keep=None)
                self._delete_chunks(doc_id)
                self._db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
            self._drop_unused_pages()
            self._drop_unused_notes()
            return heir

    def clear_chunks(self, doc_id: str) -> None:
        with self._transaction():
            self._hand_over(doc_id, keep=None)
            self._delete_chunks(doc_id)
            self._drop_unused_pages()

    def _drop_unused_notes(self) -> None:
        """A removed document's notes go with it: those no chunk carries any more (a note
        written for an ingestion that failed half way is kept until something is removed)."""
        self._db.execute(
            "DELETE FROM chunk_notes WHERE note NOT IN (SELECT note FROM chunks WHERE note != '')"
        )

    def _delete_chunks(self, doc_id: str) -> None:
        self._chunk_generation += 1
        self._db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))

    def _write_record(self, record: DocumentRecord) -> None:
        values = record.model_dump(mode="json")
        values["updated_at"] = time.time()
        values["collections"] = json.dumps(record.collections)
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        self._db.execute(
            f"INSERT OR REPLACE INTO documents ({columns}) VALUES ({marks})",
            tuple(values.values()),
        )

    def stats(self) -> dict[str, Any]:
        by_status: dict[str, int] = {
            str(row[0]): int(row[1])
            for row in self._rows("SELECT status, COUNT(*) FROM documents GROUP BY status")
        }
        totals = self._rows(
            "SELECT COUNT(*), COALESCE(SUM(pages), 0) FROM documents WHERE status = ?",
            (DocStatus.INDEXED.value,),
        )[0]
        chunks = self.count()
        return {
            "documents": sum(by_status.values()),
            "by_status": by_status,
            "indexed_pages": totals[1],
            "chunks": chunks,
            "embedding_model": self.embedding_model,
            "dimension": self.dimension,
            "path": str(self.path),
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
        }

    # --- search ------------------------------------------------------------------------------

    def vector_search(
        self,
        query: Vectors,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """Exact cosine top-k as (chunk id, similarity), best first."""
        with self._lock:
            self._load()
            ids, matrix, rows = self._ids, self._matrix, self._rows_of(doc_ids, versions)
        scores = matrix @ np.asarray(query, dtype=np.float32)
        if rows is None:
            rows = np.arange(len(ids))
        return [(str(ids[row]), float(scores[row])) for row in best_rows(scores, rows, k)]

    def keyword_search(
        self,
        query: str,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 top-k as (chunk id, score where higher is better), best first."""
        terms = self._tokenizer.query_terms(query)
        if not terms:
            return []
        with self._lock:
            self._load()
            ids, postings = self._ids, self._postings
            rows = self._rows_of(doc_ids, versions)
        return [(str(ids[row]), score) for row, score in postings.search(terms, k=k, within=rows)]

    def _rows_of(
        self, doc_ids: Sequence[str] | None, versions: Mapping[str, str] | None
    ) -> NDArray[np.intp] | None:
        """The positions of the wanted chunks in the loaded arrays (None: every chunk)."""
        if doc_ids is None and versions in (None, self._versions):
            return None  # the usual case: the index holds just the registry's versions
        wanted = None if doc_ids is None else set(doc_ids)
        parts: list[NDArray[np.intp]] = []
        if versions is None:
            for doc_id in wanted or ():
                parts.extend(self._doc_rows.get(doc_id, {}).values())
        else:
            for doc_id, version in versions.items():
                rows = self._doc_rows.get(doc_id, {}).get(version)
                if rows is not None and (wanted is None or doc_id in wanted):
                    parts.append(rows)
        if len(parts) == self._pairs:
            return None  # every (document, version) loaded is wanted: search them all
        return np.sort(np.concatenate([np.zeros(0, dtype=np.intp), *parts]))

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by id."""
        if not chunk_ids:
            return {}
        rows = self._rows(
            f"SELECT * FROM chunks WHERE chunk_id IN ({', '.join('?' for _ in chunk_ids)})",
            list(chunk_ids),
        )
        return {row["chunk_id"]: self._chunk(row) for row in rows}

    def document_chunks(self, doc_id: str, *, version: str | None = None) -> list[Chunk]:
        """A document's chunks in reading order, of one version when `version` is given."""
        if version is None:
            rows = self._rows("SELECT * FROM chunks WHERE doc_id = ? ORDER BY id", (doc_id,))
        else:
            rows = self._rows(
                "SELECT * FROM chunks WHERE doc_id = ? AND version = ? ORDER BY id",
                (doc_id, version),
            )
        return [self._chunk(row) for row in rows]

    def _chunk(self, row: sqlite3.Row) -> Chunk:
        return Chunk(
            chunk_id=row["chunk_id"],
            doc_id=row["doc_id"],
            version=row["version"],
            source=row["source"],
            title=row["title"],
            headings=json.loads(row["headings"]),
            page_start=row["page_start"],
            page_end=row["page_end"],
            page_breaks=json.loads(row["page_breaks"]),
            text=row["text"],
            embedding_model=self.embedding_model,
            # A read-only file from before notes has no such column.
            note=row["note"] if "note" in row.keys() else "",  # noqa: SIM118 (Row: values)
        )

    def _load(self) -> None:
        """Keep every vector in a numpy matrix and every term in postings, reloaded only after
        the data changed."""
        with self._lock, self._storage():
            self._db.execute("BEGIN")  # one snapshot of chunks and terms
            try:
                version = self._db.execute("PRAGMA data_version").fetchone()[0]
                if (version, self._chunk_generation) == self._loaded:
                    return
                rows = self._db.execute(
                    "SELECT chunk_id, doc_id, vector, length, term_ids, term_freqs, version"
                    " FROM chunks ORDER BY id"
                ).fetchall()
                term_ids = dict(self._db.execute("SELECT term, id FROM terms").fetchall())
            finally:
                self._db.execute("COMMIT")
            self._ids = np.array([r[0] for r in rows], dtype=object)
            by_doc: dict[str, dict[str, list[int]]] = {}
            for row, r in enumerate(rows):
                by_doc.setdefault(r[1], {}).setdefault(r[6], []).append(row)
            self._doc_rows = {
                doc: {kept: np.array(at, dtype=np.intp) for kept, at in by_version.items()}
                for doc, by_version in by_doc.items()
            }
            self._pairs = sum(len(by_version) for by_version in by_doc.values())
            self._versions = (
                {doc: next(iter(vs)) for doc, vs in by_doc.items()}
                if self._pairs == len(by_doc)
                else None
            )
            blob = b"".join(r[2] for r in rows)
            self._matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), self.dimension)
            self._postings = Postings.build(
                term_ids, [(r[4], r[5]) for r in rows], [r[3] for r in rows]
            )
            self._loaded = (version, self._chunk_generation)


def _fields(chunk: Chunk) -> Fields:
    return _row_fields(chunk.source, chunk.title, chunk.headings, chunk.text, chunk.note)


def _row_fields(source: str, title: str, headings: Sequence[str], text: str, note: str) -> Fields:
    """What BM25 reads of a chunk: its context (`Chunk.context`), field by field, and its text;
    a model-written note counts as text (weight 1)."""
    return (
        file_label(source, title),
        title,
        " ".join(headings),
        f"{note}\n{text}" if note else text,
    )


def _name(source: str) -> str:
    return source.replace("\\", "/").rsplit("/", 1)[-1]


# What each kind of failure means for a user of the index, and what to do.
_INDEX_SAYS: dict[StorageKind, str] = {
    "full": "the disk holding {folder} is full ({error}): free some space and try again; the "
    "index keeps what it had before",
    "damaged": "the index {path} is damaged ({error}): move it aside (or delete it) and ingest "
    "your PDFs again with `docchat ingest`; files uploaded through the web page are kept in "
    "{folder}/uploads",
    "read-only": "the index {path} is read-only ({error}): searching works, but adding or "
    "removing documents needs a writable --data-dir",
    "busy": "the index {path} is busy ({error}): another docchat is writing; retry",
    "unusable": "the index {path} cannot be used ({error}): check the disk and the file's "
    "permissions",
}
