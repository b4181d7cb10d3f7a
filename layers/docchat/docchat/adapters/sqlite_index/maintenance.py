"""Keeping the segments few: after a write, the rows written since the last flush become a saved
segment once there are FLUSH_ROWS of them; segments of one size tier merge MERGE_FACTOR at a
time (their removed rows left out) until MAX_ROWS; a segment whose rows are more than
REWRITE_REMOVED removed is written again without them. Segments of GRAPH_ROWS or more get an
HNSW graph. The work runs outside any transaction; a short one registers the result, unless
another index on the same file changed the segments first (then the work is dropped).

A segment's folder is named after the generation that lists it (`meta.segments`), so a folder
of a generation already passed that no row of `segments` names is a leftover (a crash, or
work dropped) and can go. The name ends in a random part: a leftover of the next generation (a
crash between writing a folder and listing it, or a file whose segments were reset) never
stands where the next flush writes, and two writers never write into the same folder.
"""

from __future__ import annotations

import logging
import math
import secrets
import shutil
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from docchat.adapters.sqlite_index.changes import meta_int, set_meta
from docchat.adapters.sqlite_index.live import LiveIndex, segment_of
from docchat.adapters.sqlite_index.search import Part
from docchat.adapters.sqlite_index.segment import Segment
from docchat.adapters.sqlite_index.store import Database
from docchat.errors import SegmentsDamagedError

FLUSH_ROWS = 5_000
MERGE_FACTOR = 4
GRAPH_ROWS = 20_000
MAX_ROWS = 320_000
# Rows per segment when a long backlog is flushed (a file written before segments existed).
FLUSH_PAGE = 80_000
REWRITE_REMOVED = 0.25
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Expected:
    """What the file said when the work began: registration requires it unchanged."""

    segments: int
    flushed: int


class Maintenance:
    """Flushes and merges segments for one writable index."""

    def __init__(self, db: Database, live: LiveIndex) -> None:
        self.db = db
        self.live = live
        self.folder = live.folder
        self._lock = threading.Lock()

    def run(self, *, everything: bool = False) -> None:
        """Flush, then merge, while either is due (one thread at a time; others go on). With
        `everything`, any rows after the last flush are flushed however few (when the index
        closes: the next open then reads no rows from the index file)."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            while self._flush(FLUSH_ROWS) or self._merge():
                self.live.changed()
            if everything and self._flush(1):
                self.live.changed()
                while self._merge():
                    self.live.changed()
        finally:
            self._lock.release()

    def check(self) -> None:
        """Read the segments; when one cannot be read (a folder lost or damaged, or written by
        an earlier docchat), write them all again from the index file, which holds every row."""
        try:
            self.live.view()
        except SegmentsDamagedError as exc:
            logger.warning("segments written again", extra={"reason": str(exc)})
            with self.db.transaction() as db:
                db.execute("DELETE FROM segments")
                db.execute("DELETE FROM removed")
                set_meta(db, "flushed", 0)
                set_meta(db, "segments", meta_int(db, "segments") + 1)
            self.live.changed()
            self.clean()

    def clean(self) -> None:
        """Remove segment folders that no generation will list (see the module's docstring)."""
        if not self.folder.is_dir():
            return
        with self.db.transaction() as db:
            current = meta_int(db, "segments")
            listed = {str(row[0]) for row in db.execute("SELECT name FROM segments")}
            for path in self.folder.iterdir():
                generation = _generation(path.name)
                if generation is not None and generation <= current and path.name not in listed:
                    shutil.rmtree(path, ignore_errors=True)

    # --- flushing ---------------------------------------------------------------------------

    def _flush(self, least: int) -> bool:
        """Save the rows after the last flush as a segment, when there are `least` or more."""
        with self.db.snapshot() as db:
            expected = _Expected(meta_int(db, "segments"), meta_int(db, "flushed"))
            last_row, seq = meta_int(db, "last_row"), meta_int(db, "seq")
            pending = db.execute(
                "SELECT COUNT(*) FROM chunks WHERE id > ?", (expected.flushed,)
            ).fetchone()[0]
            if pending < least:
                return False
            rows = db.execute(
                "SELECT id, vector, length, term_ids, term_freqs FROM chunks WHERE id > ?"
                " ORDER BY id LIMIT ?",
                (expected.flushed, FLUSH_PAGE),
            ).fetchall()
        upto = int(rows[-1][0]) if len(rows) == FLUSH_PAGE else last_row
        segment = segment_of(rows, self.live.dimension)
        name = _name(expected.segments + 1, segment)
        saved = segment.save(self.folder / name, graph=len(segment) >= GRAPH_ROWS)

        def register(db: sqlite3.Connection) -> None:
            _list(db, name, saved)
            set_meta(db, "flushed", upto)
            # Rows removed before the flush read them are in no segment: forget them.
            db.execute(
                "DELETE FROM removed WHERE row > ? AND row <= ? AND seq <= ?",
                (expected.flushed, upto, seq),
            )

        return self._register(expected, register, made=[name])

    # --- merging ----------------------------------------------------------------------------

    def _merge(self) -> bool:
        """Merge the segments due (see the module's docstring); whether any were."""
        with self.db.snapshot() as db:
            expected = _Expected(meta_int(db, "segments"), meta_int(db, "flushed"))
        view, seq, generation = self.live.state()
        if generation != expected.segments:
            return False  # another index changed them since this one looked: look again later
        chosen = _due([p for p in view.parts if p.segment.folder is not None])
        if not chosen:
            return False
        name = _name(expected.segments + 1, chosen[0].segment)
        live_rows = sum(part.count for part in chosen)
        made = [name] if live_rows else []
        if live_rows:
            Segment.merged_into(
                self.folder / name,
                [(part.segment, part.live) for part in chosen],
                graph=live_rows >= GRAPH_ROWS,
            )
        old = [part.segment.folder.name for part in chosen if part.segment.folder is not None]
        gone = [
            (int(row), seq)
            for part in chosen
            if part.live is not None
            for row in part.segment.rows[~part.live]
        ]

        def register(db: sqlite3.Connection) -> None:
            db.executemany("DELETE FROM segments WHERE name = ?", [(name,) for name in old])
            if live_rows:
                _list(db, name, Segment.load(self.folder / name))
            # The rows left out are in no segment now: forget them.
            db.executemany("DELETE FROM removed WHERE row = ? AND seq <= ?", gone)

        if not self._register(expected, register, made=made):
            return False
        for name in old:
            shutil.rmtree(self.folder / name, ignore_errors=True)
        return True

    def _register(
        self,
        expected: _Expected,
        change: Callable[[sqlite3.Connection], None],
        *,
        made: list[str],
    ) -> bool:
        """Apply `change` and move to the next generation, if the file still says
        `expected`; else drop the folders `made`. Whether it was applied."""
        with self.db.transaction() as db:
            now = _Expected(meta_int(db, "segments"), meta_int(db, "flushed"))
            if now == expected:
                change(db)
                set_meta(db, "segments", expected.segments + 1)
                return True
        logger.info("segments changed meanwhile: work dropped", extra={"made": made})
        for name in made:
            shutil.rmtree(self.folder / name, ignore_errors=True)
        return False


def _due(parts: list[Part]) -> list[Part]:
    """The segments to merge next, in row order: one with too many rows removed, or the
    first MERGE_FACTOR of the smallest tier that has as many."""
    for part in parts:
        if part.count < (1 - REWRITE_REMOVED) * len(part.segment):
            return [part]
    tiers: dict[int, list[Part]] = {}
    for part in parts:
        if part.count < MAX_ROWS:
            tiers.setdefault(_tier(part.count), []).append(part)
    for tier in sorted(tiers):
        if len(tiers[tier]) >= MERGE_FACTOR:
            return tiers[tier][:MERGE_FACTOR]
    return []


def _tier(rows: int) -> int:
    if rows < FLUSH_ROWS * MERGE_FACTOR:
        return 0
    return int(math.log(rows / FLUSH_ROWS, MERGE_FACTOR))


def _name(generation: int, segment: Segment) -> str:
    first = int(segment.rows[0]) if len(segment) else 0
    return f"g{generation:08d}-r{first:012d}-{secrets.token_hex(4)}"


def _generation(name: str) -> int | None:
    head = name.split("-", 1)[0]
    return int(head[1:]) if head.startswith("g") and head[1:].isdigit() else None


def _list(db: sqlite3.Connection, name: str, segment: Segment) -> None:
    rows = np.asarray(segment.rows)
    db.execute(
        "INSERT INTO segments (name, first_row, last_row, rows) VALUES (?, ?, ?, ?)",
        (name, int(rows[0]) if len(rows) else 0, int(rows[-1]) if len(rows) else 0, len(rows)),
    )


def segments_folder(index_path: Path) -> Path:
    """Where the segments of the index file at `index_path` are saved."""
    return index_path.with_suffix(".segments")
