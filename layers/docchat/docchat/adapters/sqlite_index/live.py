"""What one open index holds in memory, kept up to date by reading only what changed.

The chunks' search columns: segments saved under `<index>.segments/` (mapped, not read, when
opened), and the rows written since the last flush as small segments in memory; rows removed
since a segment was written are masked out. Before a search, `view()` applies the writes made
since (by this connection or any other on the file; see changes.py): the new rows, the
removed ones, the documents whose records changed. A search uses the `View` of its moment:
catching up builds a new one and never blocks a search already running.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from docchat.adapters.sqlite_index.catalog import record_from_row
from docchat.adapters.sqlite_index.changes import changed_documents, meta_int, removed_rows
from docchat.adapters.sqlite_index.search import Part, View
from docchat.adapters.sqlite_index.segment import Segment
from docchat.adapters.sqlite_index.store import Database
from docchat.errors import SegmentsDamagedError
from docchat.models import DocumentRecord

# Small in-memory segments merged into one when there are more.
MEMORY_PARTS = 8
_META = ("seq", "last_row", "flushed", "segments")


class LiveIndex:
    """The current `View` of the chunks, and the documents' records and chunk counts."""

    def __init__(self, db: Database, folder: Path, *, dimension: int) -> None:
        self.db = db
        self.folder = folder
        self.dimension = dimension
        self._lock = threading.Lock()
        self._view = View.of([])
        self._seen: dict[str, int] = dict.fromkeys(_META, -1)
        self._data_version = -1
        self._dirty = True
        self._saved: dict[str, Segment] = {}  # segment folders' names -> segments mapped
        self._records: dict[str, DocumentRecord] | None = None
        self._pairs: dict[str, dict[str, int]] | None = None
        # What catching up read (tests count them): the set of segments again, and chunk rows.
        self.loads = 0
        self.rows_read = 0

    def changed(self) -> None:
        """This connection wrote: catch up before the next search."""
        self._dirty = True

    def revision(self) -> int:
        """The number of the last write, once applied: it changes with every write."""
        self._catch_up()
        return self._seen["seq"]

    def view(self) -> View:
        """The chunks as they are now."""
        self._catch_up()
        return self._view

    def state(self) -> tuple[View, int, int]:
        """The current view, the number of the last write applied to it, and the generation
        of the segments it holds (see maintenance.py), taken together."""
        self._catch_up()
        with self._lock:
            return self._view, self._seen["seq"], self._seen["segments"]

    def records(self) -> dict[str, DocumentRecord]:
        """Every document's record, by id (kept, updated as writes are applied)."""
        self._catch_up()
        with self._lock:
            if self._records is None:
                rows = self.db.rows("SELECT * FROM documents")
                self._records = {row["doc_id"]: record_from_row(row) for row in rows}
            return self._records

    def pairs(self) -> dict[str, dict[str, int]]:
        """doc_id -> version -> how many chunks of that version the index holds."""
        self._catch_up()
        with self._lock:
            if self._pairs is None:
                self._pairs = {}
                for doc_id, version, count in self.db.rows("SELECT * FROM doc_chunks"):
                    self._pairs.setdefault(str(doc_id), {})[str(version)] = int(count)
            return self._pairs

    # --- catching up ------------------------------------------------------------------------

    def _catch_up(self) -> None:
        with self._lock, self.db.snapshot() as db:
            version = int(db.execute("PRAGMA data_version").fetchone()[0])
            if version == self._data_version and not self._dirty:
                return
            self._dirty, self._data_version = False, version
            meta = {key: meta_int(db, key) for key in _META}
            if meta == self._seen:
                return
            if meta["segments"] != self._seen["segments"]:
                parts = self._reloaded(db, meta)
            else:
                parts = self._advanced(db, meta)
            self._catalog_caught_up(db)
            self._seen = meta
            self._view = View.of(parts)

    def _reloaded(self, db: sqlite3.Connection, meta: dict[str, int]) -> list[Part]:
        """Every segment listed (mapped again only if new), its removed rows masked, and the
        rows after the last flush read into memory."""
        self.loads += 1
        names = [str(row[0]) for row in db.execute("SELECT name FROM segments ORDER BY first_row")]
        self._saved = {name: self._saved.get(name) or self._mapped(name) for name in names}
        removed = np.array(
            [
                row
                for (row,) in db.execute(
                    "SELECT row FROM removed WHERE row <= ?", (meta["flushed"],)
                )
            ],
            dtype=np.int64,
        )
        parts = [_masked(Part(segment), np.sort(removed)) for segment in self._saved.values()]
        tail = self._rows_after(db, meta["flushed"])
        return [*parts, Part(tail)] if len(tail) else parts

    def _mapped(self, name: str) -> Segment:
        try:
            return Segment.load(self.folder / name)
        except (OSError, ValueError, KeyError) as exc:
            raise SegmentsDamagedError(
                f"the segment {name} of the index in {self.folder} cannot be read ({exc}): "
                "open the index where it is writable (any docchat command does) to write its "
                "segments again from the index file"
            ) from exc

    def _advanced(self, db: sqlite3.Connection, meta: dict[str, int]) -> list[Part]:
        """The current parts with the rows removed since masked and the new rows added."""
        removed = removed_rows(db, self._seen["seq"])
        parts = [_masked(part, removed) for part in self._view.parts]
        parts = [part for part in parts if part.count or part.segment.folder is not None]
        if meta["last_row"] > self._seen["last_row"]:
            new = self._rows_after(db, self._seen["last_row"])
            if len(new):
                parts.append(Part(new))
        in_memory = [part for part in parts if part.segment.folder is None]
        if len(in_memory) > MEMORY_PARTS:
            merged = Segment.merged([(part.segment, part.live) for part in in_memory])
            parts = [part for part in parts if part.segment.folder is not None] + [Part(merged)]
        return parts

    def _rows_after(self, db: sqlite3.Connection, after: int) -> Segment:
        """The chunk rows with ids above `after`, as an in-memory segment."""
        rows = db.execute(
            "SELECT id, vector, length, term_ids, term_freqs FROM chunks WHERE id > ? ORDER BY id",
            (after,),
        ).fetchall()
        self.rows_read += len(rows)
        return segment_of(rows, self.dimension)

    def _catalog_caught_up(self, db: sqlite3.Connection) -> None:
        """Read again the records and chunk counts of the documents changed since."""
        if self._records is None and self._pairs is None:
            return
        changed = changed_documents(db, self._seen["seq"])
        if changed is None:
            self._records = self._pairs = None
            return
        marks = ", ".join("?" for _ in changed)
        if self._records is not None:
            records = dict(self._records)
            for doc_id in changed:
                records.pop(doc_id, None)
            for row in db.execute(f"SELECT * FROM documents WHERE doc_id IN ({marks})", changed):
                records[row["doc_id"]] = record_from_row(row)
            self._records = records
        if self._pairs is not None:
            pairs = {d: v for d, v in self._pairs.items() if d not in set(changed)}
            query = f"SELECT doc_id, version, chunks FROM doc_chunks WHERE doc_id IN ({marks})"
            for doc_id, version, count in db.execute(query, changed):
                pairs.setdefault(str(doc_id), {})[str(version)] = int(count)
            self._pairs = pairs


def _masked(part: Part, removed: NDArray[np.int64]) -> Part:
    """`part` with those of `removed` (ascending row ids) that it holds masked out."""
    if not len(removed) or not len(part.segment):
        return part
    at = part.segment.positions(removed)
    if not len(at):
        return part
    live = np.ones(len(part.segment), bool) if part.live is None else part.live.copy()
    live[at] = False
    return replace(part, live=live)


def segment_of(rows: Sequence[sqlite3.Row], dimension: int) -> Segment:
    """An in-memory segment of chunk rows read as (id, vector, length, term_ids, term_freqs)."""
    vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
    return Segment.of_rows(
        np.array([r[0] for r in rows], dtype=np.int64),
        vectors.reshape(len(rows), dimension),
        np.array([r[2] for r in rows], dtype=np.int32),
        [r[3] for r in rows],
        [r[4] for r in rows],
    )
