"""The embedded index: SQLite for documents and chunks, FTS5 for BM25, numpy for exact k-NN."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

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
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5 (
    title, headings, text, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""
_WORD = re.compile(r"\w+", re.UNICODE)
SCHEMA_VERSION = "2"
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)


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
        self._check_model()
        self._matrix_version: tuple[int, int] | None = None
        # Bumped by this connection's chunk writes only: registry writes keep the vector cache.
        self._chunk_generation = 0
        self._ids = np.zeros(0, dtype=object)
        self._docs = np.zeros(0, dtype=object)
        self._matrix = np.zeros((0, dimension), dtype=np.float32)

    def close(self) -> None:
        self._db.close()

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
        if meta.get("schema") != SCHEMA_VERSION:
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
            self._db.execute(
                "DELETE FROM chunks_fts WHERE rowid IN"
                f" (SELECT id FROM chunks WHERE chunk_id IN ({marks}))",
                ids,
            )
            self._db.execute(f"DELETE FROM chunks WHERE chunk_id IN ({marks})", ids)
            self._insert(chunks, vectors)

    def finalize_document(self, doc_id: str, version: str) -> dict[str, int]:
        """Remove the document's chunks of every version but `version`."""
        self._chunk_generation += 1
        with self._transaction():
            self._db.execute(
                "DELETE FROM chunks_fts WHERE rowid IN"
                " (SELECT id FROM chunks WHERE doc_id = ? AND version != ?)",
                (doc_id, version),
            )
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
        for chunk, vector in zip(chunks, vectors, strict=True):
            rowid = self._db.execute(
                "INSERT INTO chunks (chunk_id, doc_id, version, source, title, headings,"
                " page_start, page_end, page_breaks, text, vector)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                ),
            ).lastrowid
            self._db.execute(
                "INSERT INTO chunks_fts (rowid, title, headings, text) VALUES (?, ?, ?, ?)",
                (rowid, chunk.title, " ".join(chunk.headings), chunk.text),
            )

    def delete_document(self, doc_id: str) -> None:
        with self._transaction():
            self._delete_chunks(doc_id)
            self._db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))

    def clear_chunks(self, doc_id: str) -> None:
        with self._transaction():
            self._delete_chunks(doc_id)

    def _delete_chunks(self, doc_id: str) -> None:
        self._chunk_generation += 1
        self._db.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE doc_id = ?)",
            (doc_id,),
        )
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
        chunks = self._rows("SELECT COUNT(*) FROM chunks")[0][0]
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
        self, query: Vectors, *, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """Exact cosine top-k as (chunk id, similarity), best first."""
        with self._lock:
            self._load_vectors()
            ids, docs, matrix = self._ids, self._docs, self._matrix
        scores = matrix @ np.asarray(query, dtype=np.float32)
        if doc_ids is not None:
            scores = np.where(np.isin(docs, list(doc_ids)), scores, -np.inf)
        k = min(k, int(np.isfinite(scores).sum()))
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(str(ids[i]), float(scores[i])) for i in top]

    def keyword_search(
        self, query: str, *, k: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 top-k as (chunk id, score where higher is better), best first."""
        words = _WORD.findall(query)
        # Function words match nearly every chunk and make FTS5 score them all; they carry
        # almost no BM25 weight, so they are left out (unless the query has nothing else).
        content = [w for w in words if w.casefold() not in STOPWORDS] or words
        if not content:
            return []
        match = " OR ".join('"' + w.replace('"', "") + '"' for w in dict.fromkeys(content))
        where = "chunks_fts MATCH ?"
        params: list[Any] = [match]
        if doc_ids is not None:
            marks = ", ".join("?" for _ in doc_ids)
            where += f" AND rowid IN (SELECT id FROM chunks WHERE doc_id IN ({marks}))"
            params += list(doc_ids)
        # Rank inside FTS5 first and join only the top k to the chunks table.
        sql = (
            "SELECT c.chunk_id, r.rank FROM (SELECT rowid, bm25(chunks_fts, 2.0, 3.0, 1.0)"
            f" AS rank FROM chunks_fts WHERE {where} ORDER BY rank LIMIT ?) AS r"
            " JOIN chunks AS c ON c.id = r.rowid ORDER BY r.rank"
        )
        rows = self._rows(sql, [*params, k])
        return [(str(chunk_id), -float(rank)) for chunk_id, rank in rows]

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by id."""
        if not chunk_ids:
            return {}
        rows = self._rows(
            f"SELECT * FROM chunks WHERE chunk_id IN ({', '.join('?' for _ in chunk_ids)})",
            list(chunk_ids),
        )
        return {row["chunk_id"]: self._chunk(row) for row in rows}

    def document_chunks(self, doc_id: str) -> list[Chunk]:
        rows = self._rows(
            "SELECT * FROM chunks WHERE doc_id = ? ORDER BY id",
            (doc_id,),
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

    def _load_vectors(self) -> None:
        """Keep every vector in one numpy matrix, reloaded only after the data changed."""
        version = self._rows("PRAGMA data_version")[0][0]
        changes = self._chunk_generation
        if (version, changes) == self._matrix_version:
            return
        rows = self._rows("SELECT chunk_id, doc_id, vector FROM chunks ORDER BY id")
        self._ids = np.array([r[0] for r in rows], dtype=object)
        self._docs = np.array([r[1] for r in rows], dtype=object)
        blob = b"".join(r[2] for r in rows)
        self._matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), self.dimension)
        self._matrix_version = (version, changes)
