"""What a failed SQLite call means for its file: one classification for the index and the
saved conversations, each with its own words for what the user should do; how each of them
opens its file, and the write transaction they use, which a failure leaves ended."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Literal

from docchat.errors import (
    IndexCorruptError,
    ReadOnlyStorageError,
    StorageError,
    StorageFullError,
)

StorageKind = Literal["full", "damaged", "read-only", "busy", "unusable"]
_ERRORS: dict[StorageKind, type[StorageError]] = {
    "full": StorageFullError,
    "damaged": IndexCorruptError,
    "read-only": ReadOnlyStorageError,
    "busy": StorageError,
    "unusable": StorageError,
}


def storage_kind(exc: sqlite3.Error | OSError, path: Path) -> StorageKind:
    """What went wrong with the SQLite file at `path`, for the index and the conversations."""
    kind = str(getattr(exc, "sqlite_errorname", ""))
    if kind.startswith("SQLITE_FULL") or "disk is full" in str(exc) or _disk_full(path, kind):
        return "full"
    if kind.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or type(exc) is sqlite3.DatabaseError:
        return "damaged"
    if kind.startswith("SQLITE_READONLY") or isinstance(exc, PermissionError):
        return "read-only"
    if kind.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return "busy"
    return "unusable"


def storage_error(
    exc: sqlite3.Error | OSError, path: Path, say: Mapping[StorageKind, str]
) -> StorageError:
    """The error of `storage_kind`'s kind, saying `say[kind]` and what SQLite said."""
    kind = storage_kind(exc, path)
    return _ERRORS[kind](say[kind].format(path=path, folder=path.parent, error=exc))


def _disk_full(path: Path, kind: str) -> bool:
    """Whether an I/O error is a full disk (SQLite says SQLITE_IOERR when it cannot even grow
    its WAL files)."""
    if not kind.startswith("SQLITE_IOERR"):
        return False
    try:
        return shutil.disk_usage(path.parent).free < 256 * 1024
    except OSError:
        return False


def writable(path: Path) -> sqlite3.Connection:
    """A connection to the SQLite file at `path` as every writer here opens one: autocommit
    (transactions are `write_transaction`'s), usable from the server's threads, rows by name,
    waiting up to 10 s for another writer, in WAL mode (readers do not block the writer)."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA busy_timeout = 10000")
    db.execute("PRAGMA journal_mode = WAL")
    return db


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT on `db` (opened with isolation_level=None). A failed COMMIT
    (a full disk) can leave the transaction open: it is rolled back here, so the connection
    stays usable, and the first error is the one raised."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise
