"""Document records (local mode's registry) and aliases: the other names of identical files,
which are indexed once."""

from __future__ import annotations

import sqlite3
import time

from docchat.adapters.sqlite_index.store import Database
from docchat.errors import DocumentNotFoundError
from docchat.models import DocStatus, DocumentRecord


class Records:
    """Reads and writes the `documents` and `aliases` tables."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def document(self, doc_id: str) -> DocumentRecord | None:
        rows = self.db.rows("SELECT * FROM documents WHERE doc_id = ?", (doc_id,))
        return DocumentRecord(**dict(rows[0])) if rows else None

    def documents(self) -> list[DocumentRecord]:
        rows = self.db.rows("SELECT * FROM documents ORDER BY source")
        return [DocumentRecord(**dict(row)) for row in rows]

    def find_source(self, ref: str, *, path: str | None = None) -> tuple[DocumentRecord, str]:
        """The one document `ref` names exactly (its id, its source, `path`, or its file name;
        an alias names the document it shares content with), and the source it named."""
        named = {ref, path} - {None}
        found: dict[str, tuple[DocumentRecord, str]] = {}
        for record in self.documents():
            if record.doc_id == ref or record.source in named:
                return record, record.source
            if _name(record.source) == ref:
                found[record.source] = (record, record.source)
        for source, doc_id in self.db.rows("SELECT source, doc_id FROM aliases ORDER BY source"):
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

    def indexed_version(self, version: str) -> DocumentRecord | None:
        """An indexed document whose content is exactly this version, if there is one."""
        rows = self.db.rows(
            "SELECT * FROM documents WHERE version = ? AND status = ? ORDER BY source LIMIT 1",
            (version, DocStatus.INDEXED.value),
        )
        return DocumentRecord(**dict(rows[0])) if rows else None

    def aliases(self) -> dict[str, list[str]]:
        """doc id -> the other sources that hold the same bytes as that document."""
        found: dict[str, list[str]] = {}
        for source, doc_id in self.db.rows("SELECT source, doc_id FROM aliases ORDER BY source"):
            found.setdefault(str(doc_id), []).append(str(source))
        return found


def write_record(db: sqlite3.Connection, record: DocumentRecord) -> None:
    """Insert or replace a document's record, stamped with the time."""
    values = record.model_dump(mode="json")
    values["updated_at"] = time.time()
    columns = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    db.execute(
        f"INSERT OR REPLACE INTO documents ({columns}) VALUES ({marks})", tuple(values.values())
    )


def record_of(db: sqlite3.Connection, doc_id: str) -> DocumentRecord | None:
    """A document's record, read inside the caller's transaction."""
    rows = db.execute("SELECT * FROM documents WHERE doc_id = ?", (doc_id,)).fetchall()
    return DocumentRecord(**dict(rows[0])) if rows else None


def hand_over(db: sqlite3.Connection, doc_id: str, *, keep: str | None) -> DocumentRecord | None:
    """Before a document's chunks go (deleted, or a new version), the first of its aliases
    whose content they still are becomes a document of its own and takes them: identical
    files indexed once must not be lost with the one that happened to be indexed first. The
    heir's record, if there is one."""
    from docchat.ingest.decision import doc_id_for  # the pipeline modules are heavy; only here

    heirs = db.execute(
        "SELECT source, version FROM aliases WHERE doc_id = ? AND version != ? ORDER BY source",
        (doc_id, keep or ""),
    ).fetchall()
    old = record_of(db, doc_id)
    if not heirs or old is None:
        return None
    heir, version = str(heirs[0][0]), str(heirs[0][1])
    new_id = doc_id_for(heir)
    db.execute(
        "UPDATE chunks SET doc_id = ?, source = ?, chunk_id = ? || substr(chunk_id, ?)"
        " WHERE doc_id = ? AND version = ?",
        (new_id, heir, new_id, len(doc_id) + 1, doc_id, version),
    )
    db.execute("DELETE FROM aliases WHERE source = ?", (heir,))
    db.execute(
        "UPDATE aliases SET doc_id = ? WHERE doc_id = ? AND version = ?",
        (new_id, doc_id, version),
    )
    record = old.model_copy(update={"doc_id": new_id, "source": heir, "revision": 1})
    write_record(db, record)
    return record


def _name(source: str) -> str:
    return source.replace("\\", "/").rsplit("/", 1)[-1]
