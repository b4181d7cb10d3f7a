"""What is kept beside the chunks: each page as conversion extracted it (per content version,
so identical files share it), model-written chunk notes (docchat.ingest.notes.NoteCache), and
each chunk's sentence vectors (ports.ChunkStore), in half precision: the reranker only
compares them with a query (a cosine moves by less than 1e-3)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence

import numpy as np

from docchat.adapters.sqlite_index.store import Database
from docchat.errors import StorageError
from docchat.models import Page
from docchat.ports import SentenceVectors

SENTENCE_DTYPE = np.float16


def stored_pages(db: Database, version: str) -> list[Page] | None:
    """The pages kept for this content; None without any."""
    rows = db.rows("SELECT page FROM pages WHERE version = ? ORDER BY number", (version,))
    return [Page.model_validate_json(row[0]) for row in rows] or None


def write_pages(db: sqlite3.Connection, version: str, pages: Sequence[Page]) -> None:
    """Keep `pages` as the text of this content, instead of any kept before."""
    db.execute("DELETE FROM pages WHERE version = ?", (version,))
    db.executemany(
        "INSERT INTO pages (version, number, page) VALUES (?, ?, ?)",
        [(version, p.number, p.model_dump_json()) for p in pages],
    )


def drop_left(db: sqlite3.Connection, doc_id: str, version: str) -> None:
    """What document `doc_id` kept of `version`, which its record no longer names: the page
    text, unless another record names that version (identical files share it), and the
    sentence vectors of its chunks in a cluster. Only these rows, so pages another process
    keeps for a version no record names yet stay. A chunk id starts with its document's id
    and a colon (ingest/chunk.py), and a document id holds no colon."""
    db.execute(
        "DELETE FROM pages WHERE version = ?"
        " AND NOT EXISTS (SELECT 1 FROM documents WHERE version = ?)",
        (version, version),
    )
    db.execute(
        "DELETE FROM cluster_sentences WHERE chunk_id >= ? AND chunk_id < ?",
        (f"{doc_id}:", f"{doc_id};"),  # ";" follows ":"
    )


def notes(db: Database, keys: Sequence[str]) -> dict[str, str]:
    """The cached notes of these keys."""
    if not keys:
        return {}
    rows = db.rows(
        "SELECT key, note FROM chunk_notes WHERE key IN (SELECT value FROM json_each(?))",
        (json.dumps(list(keys)),),
    )
    return {str(key): str(note) for key, note in rows}


def save_notes(db: sqlite3.Connection, found: Mapping[str, str]) -> None:
    db.executemany("INSERT OR REPLACE INTO chunk_notes (key, note) VALUES (?, ?)", found.items())


def drop_unused_notes(db: sqlite3.Connection) -> None:
    """A removed document's notes go with it: those no chunk carries any more (a note
    written for an ingestion that failed half way is kept until something is removed)."""
    db.execute(
        "DELETE FROM chunk_notes WHERE note NOT IN (SELECT note FROM chunks WHERE note != '')"
    )


def sentence_vectors(
    db: Database, chunk_ids: Sequence[str], *, dimension: int
) -> dict[str, SentenceVectors]:
    """The sentence vectors kept for these chunks: of the file's own, or of a cluster's."""
    kept = _kept_sentences(db, _OF_CHUNK_ROWS, chunk_ids, dimension)
    others = [c for c in chunk_ids if c not in kept]
    if not others:
        return kept
    try:
        return kept | _kept_sentences(db, _OF_CLUSTER_CHUNKS, others, dimension)
    except StorageError:  # a read-only file of an earlier docchat lacks the table
        return kept


# Each selects (chunk id, starts, vectors) for the chunk ids of a JSON list.
_OF_CHUNK_ROWS = (
    "SELECT c.chunk_id, s.starts, s.vectors FROM sentences s JOIN chunks c ON c.id = s.row"
    " WHERE c.chunk_id IN (SELECT value FROM json_each(?))"
)
_OF_CLUSTER_CHUNKS = (
    "SELECT chunk_id, starts, vectors FROM cluster_sentences"
    " WHERE chunk_id IN (SELECT value FROM json_each(?))"
)


def _kept_sentences(
    db: Database, query: str, chunk_ids: Sequence[str], dimension: int
) -> dict[str, SentenceVectors]:
    if not chunk_ids:
        return {}
    return {
        str(chunk_id): SentenceVectors(
            tuple(int(n) for n in np.frombuffer(starts, dtype=np.int32)),
            np.frombuffer(vectors, dtype=SENTENCE_DTYPE).reshape(-1, dimension).astype(np.float32),
        )
        for chunk_id, starts, vectors in db.rows(query, (json.dumps(list(chunk_ids)),))
    }


def sentence_row(found: SentenceVectors) -> tuple[bytes, bytes]:
    """(starts, vectors) as a `sentences` row stores them."""
    return (
        np.asarray(found.starts, dtype=np.int32).tobytes(),
        np.asarray(found.vectors, dtype=SENTENCE_DTYPE).tobytes(),
    )


def save_sentence_vectors(db: sqlite3.Connection, found: Mapping[str, SentenceVectors]) -> None:
    """Keep these chunks' sentence vectors (by chunk id): beside the file's own chunk rows,
    and for chunks the file does not hold (a cluster's), by chunk id alone."""
    rows = [(chunk_id, *sentence_row(vectors)) for chunk_id, vectors in found.items()]
    db.executemany(
        "INSERT OR REPLACE INTO sentences (row, starts, vectors)"
        " SELECT id, ?, ? FROM chunks WHERE chunk_id = ?",
        [(starts, vectors, chunk_id) for chunk_id, starts, vectors in rows],
    )
    db.executemany(
        "INSERT OR REPLACE INTO cluster_sentences (chunk_id, starts, vectors)"
        " SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM chunks WHERE chunk_id = ?)",
        [(*row, row[0]) for row in rows],
    )
