"""Document records (local mode's registry). The same bytes under two names are two documents
(the second a copy of the first's chunks, see ingest/shelf.py's `copy`).

`collections` (a JSON list of names, issue #31) is stored and read only when DocumentRecord has
that field: `write_record` and `record_from_row` are where it crosses."""

from __future__ import annotations

import json
import sqlite3
import time

from docchat.adapters.sqlite_index.store import Database
from docchat.errors import DocumentNotFoundError
from docchat.models import DocStatus, DocumentRecord


class Records:
    """Reads the `documents` table."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def document(self, doc_id: str) -> DocumentRecord | None:
        rows = self.db.rows("SELECT * FROM documents WHERE doc_id = ?", (doc_id,))
        return record_from_row(rows[0]) if rows else None

    def documents(self) -> list[DocumentRecord]:
        rows = self.db.rows("SELECT * FROM documents ORDER BY source")
        return [record_from_row(row) for row in rows]

    def find_document(self, ref: str, *, path: str | None = None) -> DocumentRecord:
        """The one document `ref` names exactly: its id, its source, `path`, or its file name."""
        named = {ref, path} - {None}
        found: dict[str, DocumentRecord] = {}
        for record in self.documents():
            if record.doc_id == ref or record.source in named:
                return record
            if _name(record.source) == ref:
                found[record.source] = record
        if len(found) == 1:
            return next(iter(found.values()))
        if found:
            candidates = "; ".join(f"{r.doc_id} ({source})" for source, r in found.items())
            raise DocumentNotFoundError(
                f"{ref!r} names {len(found)} files: give the document id or the full path of "
                f"one of them: {candidates}"
            )
        raise DocumentNotFoundError(
            f"{ref!r} is not in the index: give a document id, path or file name "
            "(`docchat status` lists them)"
        )

    def indexed_version(self, version: str) -> DocumentRecord | None:
        """An indexed document whose content is exactly this version, if there is one."""
        rows = self.db.rows(
            "SELECT * FROM documents WHERE version = ? AND status = ? ORDER BY source LIMIT 1",
            (version, DocStatus.INDEXED.value),
        )
        return record_from_row(rows[0]) if rows else None


def write_record(db: sqlite3.Connection, record: DocumentRecord) -> None:
    """Insert or replace a document's record, stamped with the time."""
    values = record.model_dump(mode="json")
    values["updated_at"] = time.time()
    if "collections" in values:
        values["collections"] = json.dumps(values["collections"])
    columns = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    db.execute(
        f"INSERT OR REPLACE INTO documents ({columns}) VALUES ({marks})", tuple(values.values())
    )


def record_from_row(row: sqlite3.Row) -> DocumentRecord:
    """The record a `documents` row holds."""
    values = dict(row)
    collections = values.pop("collections", None)
    if "collections" in DocumentRecord.model_fields and collections is not None:
        values["collections"] = json.loads(collections)
    return DocumentRecord(**values)


def record_of(db: sqlite3.Connection, doc_id: str) -> DocumentRecord | None:
    """A document's record, read inside the caller's transaction."""
    rows = db.execute("SELECT * FROM documents WHERE doc_id = ?", (doc_id,)).fetchall()
    return record_from_row(rows[0]) if rows else None


def aliases_to_copies(db: sqlite3.Connection) -> None:
    """Each name of the `aliases` table (schema 6 and before: another name of an indexed
    document's bytes) becomes a document of its own holding copies of that document's chunks,
    sentence vectors and pages, as a copy (ingest/shelf.py) has them today."""
    from docchat.ingest.decision import copy_record  # light, but the ingest package is not

    columns = [
        str(row[1])
        for row in db.execute("PRAGMA table_info(chunks)")
        if row[1] not in ("id", "chunk_id", "doc_id", "source")
    ]
    kept = ", ".join(columns)
    found = db.execute("SELECT source, doc_id, version FROM aliases ORDER BY source").fetchall()
    for source, doc_id, version in found:
        twin = record_of(db, doc_id)
        if twin is None or twin.status != DocStatus.INDEXED or twin.version != version:
            continue
        copy = copy_record(twin, source, 1)
        if record_of(db, copy.doc_id) is not None:
            continue  # the name is a document of its own already
        last = int(db.execute("SELECT value FROM meta WHERE key = 'last_row'").fetchone()[0])
        count = db.execute(
            f"INSERT INTO chunks (id, chunk_id, doc_id, source, {kept})"
            f" SELECT ? + ROW_NUMBER() OVER (ORDER BY id), ? || substr(chunk_id, ?), ?, ?, {kept}"
            " FROM chunks WHERE doc_id = ? AND version = ? ORDER BY id",
            (last, copy.doc_id, len(doc_id) + 1, copy.doc_id, source, doc_id, version),
        ).rowcount
        db.execute(
            "INSERT INTO sentences (row, starts, vectors)"
            " SELECT new.id, s.starts, s.vectors FROM chunks new"
            " JOIN chunks old ON old.chunk_id = ? || substr(new.chunk_id, ?)"
            " JOIN sentences s ON s.row = old.id WHERE new.doc_id = ?",
            (doc_id, len(copy.doc_id) + 1, copy.doc_id),
        )
        db.execute("UPDATE meta SET value = ? WHERE key = 'last_row'", (str(last + count),))
        db.execute(
            "INSERT OR REPLACE INTO doc_chunks (doc_id, version, chunks) VALUES (?, ?, ?)",
            (copy.doc_id, version, count),
        )
        write_record(db, copy.model_copy(update={"chunks": count}))


def _name(source: str) -> str:
    return source.replace("\\", "/").rsplit("/", 1)[-1]
