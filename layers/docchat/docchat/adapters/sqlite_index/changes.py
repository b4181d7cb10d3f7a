"""What every write records, so that each open index (this process's, or another's on the same
file) catches up by reading only what changed.

A write transaction takes the next number of `meta.seq`. Chunk rows get ids from
`meta.last_row` (never reused: a new row's id is above every row an index has seen); a removed
row goes into `removed` with the write's number; a document whose record or chunks
changed goes into `changes`, and its chunk count per version into `doc_chunks`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

import numpy as np

from docchat.adapters.sqlite_index.chunks import ChunkRows
from docchat.models import Chunk
from docchat.ports import Vectors

# Change entries kept: an index further behind reads the registry whole again.
KEPT_CHANGES = 100_000


def meta_int(db: sqlite3.Connection, key: str) -> int:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else 0


def set_meta(db: sqlite3.Connection, key: str, value: int) -> None:
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(value)))


class Write:
    """One write transaction's changes: chunk rows added and removed, documents touched."""

    def __init__(self, db: sqlite3.Connection, rows: ChunkRows) -> None:
        self.db = db
        self._rows = rows
        self.seq = meta_int(db, "seq") + 1
        self._touched: set[str] = set()

    def touched(self, *doc_ids: str) -> None:
        """These documents' records or chunks changed."""
        self._touched.update(doc_ids)

    def add_chunks(self, chunks: Sequence[Chunk], vectors: Vectors) -> int:
        """Insert `chunks` with their vectors under new row ids; the first one's."""
        first = meta_int(self.db, "last_row") + 1
        self._rows.insert(self.db, chunks, vectors, first_id=first)
        set_meta(self.db, "last_row", first + len(chunks) - 1)
        self.touched(*(chunk.doc_id for chunk in chunks))
        return first

    def remove_chunks(self, where: str, params: Sequence[object]) -> int:
        """Delete the chunks `where` selects (with their sentence vectors); how many."""
        found = self.db.execute(f"SELECT id, doc_id FROM chunks WHERE {where}", params).fetchall()
        if not found:
            return 0
        rows = [(int(row), self.seq) for row, _ in found]
        self.db.executemany("INSERT OR REPLACE INTO removed (row, seq) VALUES (?, ?)", rows)
        marks = ", ".join("?" for _ in rows)
        ids = [row for row, _ in rows]
        self.db.execute(f"DELETE FROM sentences WHERE row IN ({marks})", ids)
        self.db.execute(f"DELETE FROM chunks WHERE id IN ({marks})", ids)
        self.touched(*(str(doc_id) for _, doc_id in found))
        return len(found)

    def finish(self) -> bool:
        """Record what changed under this write's number; whether anything did."""
        if not self._touched:
            return False
        doc_ids = sorted(self._touched)
        self.db.executemany(
            "INSERT OR IGNORE INTO changes (seq, doc_id) VALUES (?, ?)",
            [(self.seq, doc_id) for doc_id in doc_ids],
        )
        recount(self.db, doc_ids)
        set_meta(self.db, "seq", self.seq)
        if self.seq % 1000 == 0:
            forget_old_changes(self.db, self.seq)
        return True


def recount(db: sqlite3.Connection, doc_ids: Iterable[str]) -> None:
    """Count these documents' chunks per version again (`doc_chunks`)."""
    ids = list(doc_ids)
    marks = ", ".join("?" for _ in ids)
    db.execute(f"DELETE FROM doc_chunks WHERE doc_id IN ({marks})", ids)
    db.execute(
        "INSERT INTO doc_chunks (doc_id, version, chunks) SELECT doc_id, version, COUNT(*)"
        f" FROM chunks WHERE doc_id IN ({marks}) GROUP BY doc_id, version",
        ids,
    )


def forget_old_changes(db: sqlite3.Connection, seq: int) -> None:
    """Drop change entries older than KEPT_CHANGES writes (see `changes_from`)."""
    oldest = seq - KEPT_CHANGES
    if oldest > meta_int(db, "changes_from"):
        db.execute("DELETE FROM changes WHERE seq < ?", (oldest,))
        set_meta(db, "changes_from", oldest)


def changed_documents(db: sqlite3.Connection, after: int) -> list[str] | None:
    """The documents changed by writes after number `after`; None when the entries that
    would say so are forgotten (read every document again)."""
    if after < meta_int(db, "changes_from"):
        return None
    rows = db.execute("SELECT DISTINCT doc_id FROM changes WHERE seq > ?", (after,)).fetchall()
    return [str(row[0]) for row in rows]


def removed_rows(db: sqlite3.Connection, after: int) -> np.ndarray:
    """Chunk rows removed by writes after number `after`, ascending."""
    rows = db.execute("SELECT row FROM removed WHERE seq > ? ORDER BY row", (after,)).fetchall()
    return np.array([int(row[0]) for row in rows], dtype=np.int64)
