"""The embedded index: SQLite for documents and chunks, numpy for exact k-NN and for BM25."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from docchat.adapters.bm25 import Fields, Postings, Tokenizer, best_rows
from docchat.embed import Vectors
from docchat.errors import DocumentNotFoundError, EmbedderMismatchError, IndexSchemaError
from docchat.models import Chunk, DocStatus, DocumentRecord

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, source TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL,
    status TEXT NOT NULL, pages INTEGER NOT NULL, pages_without_text INTEGER NOT NULL,
    chunks INTEGER NOT NULL, error_code TEXT NOT NULL, error TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, chunk_id TEXT UNIQUE NOT NULL, doc_id TEXT NOT NULL,
    version TEXT NOT NULL, source TEXT NOT NULL, title TEXT NOT NULL, headings TEXT NOT NULL,
    page_start INTEGER NOT NULL, page_end INTEGER NOT NULL, page_breaks TEXT NOT NULL,
    text TEXT NOT NULL,
    vector BLOB NOT NULL,
    length INTEGER NOT NULL, term_ids BLOB NOT NULL, term_freqs BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id);
CREATE TABLE IF NOT EXISTS terms (id INTEGER PRIMARY KEY, term TEXT UNIQUE NOT NULL);
"""
SCHEMA_VERSION = "3"


class SqliteIndex:
    """Documents, chunks and vectors of one embedding model in a single SQLite file."""

    def __init__(self, path: Path, *, embedding_model: str, dimension: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.embedding_model = embedding_model
        self.dimension = dimension
        # One connection shared by the threads of a server or a test harness; the lock keeps
        # each transaction and each read whole.
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA busy_timeout = 10000")
        self._db.executescript(_SCHEMA)
        self._tokenizer = Tokenizer()
        self._check_model()
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

    def close(self) -> None:
        self._db.close()
        self._tokenizer.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def _check_model(self) -> None:
        with self._transaction():
            meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
            if not meta:
                self._db.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [
                        ("embedding_model", self.embedding_model),
                        ("dimension", str(self.dimension)),
                        ("schema", SCHEMA_VERSION),
                    ],
                )
                return
        if meta.get("schema") == "2":
            self._upgrade_from_2()
        elif meta.get("schema") != SCHEMA_VERSION:
            raise IndexSchemaError(
                f"the index at {self.path} was written by another docchat version "
                f"(schema {meta.get('schema', '1')}, this one reads {SCHEMA_VERSION}): "
                "delete that file or use another --data-dir, and ingest the documents again"
            )
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
            rows = self._db.execute("SELECT id, title, headings, text FROM chunks").fetchall()
            for start in range(0, len(rows), 500):
                batch = rows[start : start + 500]
                fields = [
                    (r["title"], " ".join(json.loads(r["headings"])), r["text"]) for r in batch
                ]
                self._db.executemany(
                    "UPDATE chunks SET length = ?, term_ids = ?, term_freqs = ? WHERE id = ?",
                    [
                        (*terms, r["id"])
                        for terms, r in zip(self._terms(fields), batch, strict=True)
                    ],
                )
            self._db.execute("DROP TABLE chunks_fts")
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))

    # --- documents ---------------------------------------------------------------------------

    def document(self, doc_id: str) -> DocumentRecord | None:
        rows = self._rows("SELECT * FROM documents WHERE doc_id = ?", (doc_id,))
        return DocumentRecord(**dict(rows[0])) if rows else None

    def documents(self) -> list[DocumentRecord]:
        rows = self._rows("SELECT * FROM documents ORDER BY source")
        return [DocumentRecord(**dict(row)) for row in rows]

    def find_document(self, ref: str) -> DocumentRecord:
        """A document by id, source path or file name."""
        rows = self._rows(
            "SELECT * FROM documents WHERE doc_id = ? OR source = ? OR source LIKE ? ESCAPE '\\'",
            (ref, ref, "%/" + ref.replace("%", r"\%").replace("_", r"\_")),
        )
        if len(rows) != 1:
            known = ", ".join(d.doc_id for d in self.documents()) or "none"
            why = "matches several documents" if rows else "is not in the index"
            raise DocumentNotFoundError(f"{ref!r} {why}: give a document id ({known})")
        return DocumentRecord(**dict(rows[0]))

    def set_record(self, record: DocumentRecord) -> None:
        """Write a document's registry entry, leaving its chunks as they are."""
        with self._transaction():
            self._write_record(record)

    def replace_document(
        self, record: DocumentRecord, chunks: Sequence[Chunk], vectors: Vectors
    ) -> None:
        """Atomically swap a document's chunks for a new version's and mark it indexed."""
        with self._transaction():
            self._delete_chunks(record.doc_id)
            self._insert(chunks, vectors)
            self._write_record(
                record.model_copy(update={"status": DocStatus.INDEXED, "chunks": len(chunks)})
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
            )
            for chunk, vector, terms in zip(
                chunks, vectors, self._terms([_fields(chunk) for chunk in chunks]), strict=True
            )
        ]
        self._db.executemany(
            "INSERT INTO chunks (chunk_id, doc_id, version, source, title, headings, page_start,"
            " page_end, page_breaks, text, vector, length, term_ids, term_freqs)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        with self._transaction():
            self._delete_chunks(doc_id)
            self._db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))

    def clear_chunks(self, doc_id: str) -> None:
        with self._transaction():
            self._delete_chunks(doc_id)

    def _delete_chunks(self, doc_id: str) -> None:
        self._chunk_generation += 1
        self._db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))

    def _write_record(self, record: DocumentRecord) -> None:
        values = record.model_dump(mode="json")
        values["updated_at"] = time.time()
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
        )

    def _load(self) -> None:
        """Keep every vector in a numpy matrix and every term in postings, reloaded only after
        the data changed."""
        with self._lock:
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
    return (chunk.title, " ".join(chunk.headings), chunk.text)
