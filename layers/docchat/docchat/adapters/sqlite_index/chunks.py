"""Chunk rows: each chunk stored with its vector and its BM25 terms (FTS5's analysis of the
fields `Chunk.context` is made of), and read back as `Chunk`s."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import numpy as np

from docchat.adapters.sqlite_index.bm25 import Fields, Tokenizer
from docchat.errors import EmbedderMismatchError
from docchat.models import Chunk, file_label
from docchat.ports import Vectors

_COLUMNS = (
    "id, chunk_id, doc_id, version, source, title, headings, page_start, page_end, page_breaks, "
    "text, vector, length, term_ids, term_freqs, note, page_labels, file_name"
)
# Rows analysed again per statement when every chunk's terms are computed anew.
_BATCH = 500


class ChunkRows:
    """Writes and reads the `chunks` table (and the `terms` vocabulary its rows refer to)."""

    def __init__(self, *, embedding_model: str, dimension: int) -> None:
        self.embedding_model = embedding_model
        self.dimension = dimension
        self.tokenizer = Tokenizer()

    def close(self) -> None:
        self.tokenizer.close()

    def insert(
        self, db: sqlite3.Connection, chunks: Sequence[Chunk], vectors: Vectors, *, first_id: int
    ) -> None:
        """Add `chunks` with their `vectors` (one row each) under row ids from `first_id` on,
        inside the caller's transaction."""
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if vectors.size and vectors.shape[1] != self.dimension:
            raise EmbedderMismatchError(
                f"vectors have {vectors.shape[1]} dims; this index holds {self.dimension}"
            )
        terms = self.terms(db, [fields_of(chunk) for chunk in chunks])
        rows = [
            (
                first_id + n,
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
                *chunk_terms,
                chunk.note,
                json.dumps(chunk.page_labels),
                chunk.file_name,
            )
            for n, (chunk, vector, chunk_terms) in enumerate(
                zip(chunks, vectors, terms, strict=True)
            )
        ]
        marks = ", ".join("?" for _ in _COLUMNS.split(","))
        db.executemany(f"INSERT INTO chunks ({_COLUMNS}) VALUES ({marks})", rows)

    def terms(
        self, db: sqlite3.Connection, chunks: Sequence[Fields]
    ) -> list[tuple[int, bytes, bytes]]:
        """Per chunk: its number of tokens, term ids and weighted term frequencies, as stored
        (new terms join the vocabulary)."""
        analysed = self.tokenizer.analyse(chunks)
        vocabulary = sorted(set().union(*(frequencies for frequencies, _ in analysed)))
        db.executemany(
            "INSERT OR IGNORE INTO terms (term) VALUES (?)", [(term,) for term in vocabulary]
        )
        term_ids = dict(
            db.execute(
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

    def analyse_all(self, db: sqlite3.Connection) -> None:
        """Compute every chunk's BM25 terms again from its stored fields."""
        rows = db.execute(
            "SELECT id, source, file_name, title, headings, text, note FROM chunks"
        ).fetchall()
        for start in range(0, len(rows), _BATCH):
            batch = rows[start : start + _BATCH]
            fields = [
                row_fields(
                    r["file_name"] or r["source"],
                    r["title"],
                    json.loads(r["headings"]),
                    r["text"],
                    r["note"],
                )
                for r in batch
            ]
            db.executemany(
                "UPDATE chunks SET length = ?, term_ids = ?, term_freqs = ? WHERE id = ?",
                [(*terms, r["id"]) for terms, r in zip(self.terms(db, fields), batch, strict=True)],
            )

    def chunk(self, row: sqlite3.Row) -> Chunk:
        """The Chunk a `SELECT * FROM chunks` row holds."""
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
            page_labels=json.loads(row["page_labels"]) if "page_labels" in row.keys() else [],  # noqa: SIM118
            file_name=row["file_name"] if "file_name" in row.keys() else "",  # noqa: SIM118
        )


def fields_of(chunk: Chunk) -> Fields:
    """What BM25 reads of a chunk (see `row_fields`)."""
    named = chunk.file_name or chunk.source
    return row_fields(named, chunk.title, chunk.headings, chunk.text, chunk.note)


def row_fields(named: str, title: str, headings: Sequence[str], text: str, note: str) -> Fields:
    """What BM25 reads of a chunk: its context (`Chunk.context`), field by field, and its text;
    a model-written note counts as text (weight 1). `named`: the file's name, or the source
    that ends in it."""
    return (
        file_label(named, title),
        title,
        " ".join(headings),
        f"{note}\n{text}" if note else text,
    )
