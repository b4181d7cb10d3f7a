"""The index file's tables, and how a file an earlier docchat wrote is brought up to date.

`meta.schema` says which tables and columns a file has. Opened writable, a file of an earlier
schema goes through each `MIGRATIONS` step after its own, in order, each in one transaction
with the new number; a read-only file must already be current. `ADDED_COLUMNS` are columns with
defaults that files of schema 5 or later may lack (docchat versions of those ignore them, so
they came without a new number); they are added before the steps run. `BM25_FIELDS` records
what the stored BM25 terms were computed from; a file whose terms were computed otherwise has
them computed again (and its segments written again).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from docchat.adapters.sqlite_index.bm25 import FIELD_WEIGHTS
from docchat.adapters.sqlite_index.catalog import aliases_to_copies
from docchat.adapters.sqlite_index.chunks import ChunkRows
from docchat.adapters.sqlite_index.store import Database
from docchat.errors import EmbedderMismatchError, IndexMissingError, IndexSchemaError

TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, source TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL,
    status TEXT NOT NULL, pages INTEGER NOT NULL, pages_without_text INTEGER NOT NULL,
    chunks INTEGER NOT NULL, error_code TEXT NOT NULL, error TEXT NOT NULL,
    updated_at REAL NOT NULL, revision INTEGER NOT NULL DEFAULT 1,
    pages_ocr INTEGER NOT NULL DEFAULT 0, collections TEXT NOT NULL DEFAULT '["default"]',
    file_name TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, chunk_id TEXT UNIQUE NOT NULL, doc_id TEXT NOT NULL,
    version TEXT NOT NULL, source TEXT NOT NULL, title TEXT NOT NULL, headings TEXT NOT NULL,
    page_start INTEGER NOT NULL, page_end INTEGER NOT NULL, page_breaks TEXT NOT NULL,
    text TEXT NOT NULL,
    vector BLOB NOT NULL,
    length INTEGER NOT NULL, term_ids BLOB NOT NULL, term_freqs BLOB NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    page_labels TEXT NOT NULL DEFAULT '[]',
    file_name TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id);
CREATE TABLE IF NOT EXISTS terms (id INTEGER PRIMARY KEY, term TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS chunk_notes (key TEXT PRIMARY KEY, note TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (
    version TEXT NOT NULL, number INTEGER NOT NULL, page TEXT NOT NULL,
    PRIMARY KEY (version, number)
);
CREATE TABLE IF NOT EXISTS segments (
    name TEXT PRIMARY KEY, first_row INTEGER NOT NULL, last_row INTEGER NOT NULL,
    rows INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS removed (row INTEGER PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER NOT NULL, doc_id TEXT NOT NULL, PRIMARY KEY (seq, doc_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS doc_chunks (
    doc_id TEXT NOT NULL, version TEXT NOT NULL, chunks INTEGER NOT NULL,
    PRIMARY KEY (doc_id, version)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sentences (
    row INTEGER PRIMARY KEY, starts BLOB NOT NULL, vectors BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS cluster_sentences (
    chunk_id TEXT PRIMARY KEY, starts BLOB NOT NULL, vectors BLOB NOT NULL
) WITHOUT ROWID;
"""
SCHEMA_VERSION = 7
# The oldest schema a step below starts from: schema 1 kept no meta worth converting.
OLDEST = 2
BM25_FIELDS = json.dumps(FIELD_WEIGHTS)
# (table, column, definition): see the module's docstring.
ADDED_COLUMNS = (
    ("documents", "pages_ocr", "INTEGER NOT NULL DEFAULT 0"),  # pages read by OCR
    ("documents", "file_name", "TEXT NOT NULL DEFAULT ''"),  # '' for the source's name
    ("chunks", "note", "TEXT NOT NULL DEFAULT ''"),  # a model-written note
    ("chunks", "page_labels", "TEXT NOT NULL DEFAULT '[]'"),  # a non-PDF's location labels
    ("chunks", "file_name", "TEXT NOT NULL DEFAULT ''"),  # '' for the source's name
)


@dataclass(frozen=True)
class Migration:
    """One step: what `apply` changes to bring a file to schema `version`."""

    version: int
    says: str
    apply: Callable[[sqlite3.Connection, ChunkRows], None]


def _terms_per_chunk(db: sqlite3.Connection, rows: ChunkRows) -> None:
    for column in ("length INTEGER", "term_ids BLOB", "term_freqs BLOB"):
        db.execute(f"ALTER TABLE chunks ADD COLUMN {column} NOT NULL DEFAULT 0")
    rows.analyse_all(db)
    db.execute("DROP TABLE chunks_fts")


def _revisions(db: sqlite3.Connection, rows: ChunkRows) -> None:
    if "revision" not in _columns(db, "documents"):
        db.execute("ALTER TABLE documents ADD COLUMN revision INTEGER NOT NULL DEFAULT 1")


def _tables_only(db: sqlite3.Connection, rows: ChunkRows) -> None:
    """Nothing to convert: TABLES made what the step adds."""


def _changes_and_segments(db: sqlite3.Connection, rows: ChunkRows) -> None:
    last_row = db.execute("SELECT COALESCE(MAX(id), 0) FROM chunks").fetchone()[0]
    db.executemany(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)", [*_COUNTERS, ("last_row", str(last_row))]
    )
    db.execute(
        "INSERT OR REPLACE INTO doc_chunks SELECT doc_id, version, COUNT(*) FROM chunks"
        " GROUP BY doc_id, version"
    )


def _copies_and_collections(db: sqlite3.Connection, rows: ChunkRows) -> None:
    if "collections" not in _columns(db, "documents"):
        db.execute(f"ALTER TABLE documents ADD COLUMN collections {_COLLECTIONS}")
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'aliases'").fetchone():
        aliases_to_copies(db)
        db.execute("DROP TABLE aliases")


# Which collections (issue #31) a document is in: a JSON list of names (see catalog.py).
_COLLECTIONS = """TEXT NOT NULL DEFAULT '["default"]'"""
# The counters of changes.py and maintenance.py, as a new file starts them.
_COUNTERS = (("seq", "0"), ("last_row", "0"), ("flushed", "0"), ("segments", "0"))


MIGRATIONS = (
    Migration(3, "BM25 from terms stored with each chunk, not an FTS5 table", _terms_per_chunk),
    # The `aliases` table came from TABLES then (schema 7 turns its names into copies).
    Migration(4, "documents count their revisions; identical files share one", _revisions),
    # The `pages` table comes from TABLES, empty: documents indexed before show their page
    # text once ingested again.
    Migration(5, "the text of each page is kept", _tables_only),
    # The `segments`, `removed`, `changes`, `doc_chunks` and `sentences` tables come from
    # TABLES. Every chunk is written after the last flush (0): the first writable open saves
    # them as segments.
    Migration(6, "writes are logged; chunks are searched in segments", _changes_and_segments),
    Migration(
        7,
        "another name of the same bytes is a copied document, not an alias; documents have "
        "collections",
        _copies_and_collections,
    ),
)


def prepare(db: Database, rows: ChunkRows, *, embedding_model: str, dimension: int) -> None:
    """Make a new file's tables, or bring an existing file up to date (writable), and check
    that it holds vectors of this embedder."""
    if db.read_only:
        _check_read_only(db, embedding_model=embedding_model, dimension=dimension)
        return
    with db.lock, db.storage():
        db.connection.executescript(TABLES)  # it commits first: never inside a transaction
    with db.transaction() as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if not meta:
            conn.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [
                    ("embedding_model", embedding_model),
                    ("dimension", str(dimension)),
                    ("schema", str(SCHEMA_VERSION)),
                    ("bm25_fields", BM25_FIELDS),
                    *_COUNTERS,
                ],
            )
            return
    schema = _schema(meta)
    if not OLDEST <= schema <= SCHEMA_VERSION:
        raise IndexSchemaError(
            f"the index at {db.path} was written by another docchat version "
            f"(schema {schema}, this one reads {SCHEMA_VERSION}): "
            "delete that file or use another --data-dir, and ingest the documents again"
        )
    with db.transaction() as conn:
        for table, column, definition in ADDED_COLUMNS:
            if column not in _columns(conn, table):
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
    for step in MIGRATIONS:
        if step.version > schema:
            with db.transaction() as conn:
                step.apply(conn, rows)
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(step.version),))
    _check_embedder(db, meta, embedding_model=embedding_model, dimension=dimension)
    if meta.get("bm25_fields") != BM25_FIELDS:
        # Each vector stays: it is the same model's, and a file is embedded again with its
        # context when its content changes or it is ingested again after `docchat rm`.
        with db.transaction() as conn:
            rows.analyse_all(conn)
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('bm25_fields', ?)", (BM25_FIELDS,))
            # The segments hold the terms as they were: every row is flushed again.
            segments = conn.execute("SELECT value FROM meta WHERE key = 'segments'").fetchone()
            conn.execute("DELETE FROM segments")
            conn.execute("DELETE FROM removed")
            conn.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [("flushed", "0"), ("segments", str(int(segments[0]) + 1))],
            )


def _check_read_only(db: Database, *, embedding_model: str, dimension: int) -> None:
    meta = {str(k): str(v) for k, v in db.rows("SELECT key, value FROM meta")}
    if not meta:
        raise IndexMissingError(
            f"{db.path} holds no docchat index, and it is read-only: check --data-dir"
        )
    if _schema(meta) != SCHEMA_VERSION:
        raise IndexSchemaError(
            f"the read-only index at {db.path} was written by another docchat version "
            f"(schema {_schema(meta)}, this one reads {SCHEMA_VERSION}): open "
            "it once where it is writable to upgrade it, or ingest the documents again"
        )
    _check_embedder(db, meta, embedding_model=embedding_model, dimension=dimension)


def _schema(meta: dict[str, str]) -> int:
    value = meta.get("schema", "1")
    return int(value) if value.isdigit() else 0


def _check_embedder(
    db: Database, meta: dict[str, str], *, embedding_model: str, dimension: int
) -> None:
    if (meta["embedding_model"], int(meta["dimension"])) != (embedding_model, dimension):
        raise EmbedderMismatchError(
            f"the index at {db.path} was built with {meta['embedding_model']} "
            f"({meta['dimension']} dims), not {embedding_model} ({dimension} dims): "
            "use the same embedder, or another --data-dir and ingest the documents again"
        )


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}
