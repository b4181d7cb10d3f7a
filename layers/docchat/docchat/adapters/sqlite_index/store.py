"""The index file's SQLite connection: writable (WAL) where the file and its folder may be
written, read-only otherwise; one lock for the threads that share it; SQLite's own errors as
errors that say what to do; and the write transaction every change goes through."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from docchat.adapters.sqlite_errors import (
    StorageKind,
    storage_error,
    writable,
    write_transaction,
)
from docchat.errors import IndexMissingError, ReadOnlyStorageError, StorageError

# What each kind of failure means for a user of the index, and what to do.
INDEX_SAYS: dict[StorageKind, str] = {
    "full": "the disk holding {folder} is full ({error}): free some space and try again; the "
    "index keeps what it had before",
    "damaged": "the index {path} is damaged ({error}): move it aside (or delete it) and ingest "
    "your PDFs again with `docchat ingest`; files uploaded through the web page are kept in "
    "{folder}/uploads",
    "read-only": "the index {path} is read-only ({error}): searching works, but adding or "
    "removing documents needs a writable --data-dir",
    "busy": "the index {path} is busy ({error}): another docchat is writing; retry",
    "unusable": "the index {path} cannot be used ({error}): check the disk and the file's "
    "permissions",
}


class Database:
    """One connection to the index file, shared by the threads of a server or a test harness;
    the lock keeps each transaction and each read whole."""

    def __init__(self, path: Path, *, create: bool) -> None:
        """Open the file at `path` (made when missing, with `create`). Where the file or its
        folder is not writable it opens read-only: reads work, `transaction` raises
        ReadOnlyStorageError (a team can share a published index)."""
        self.path = path
        self.lock = threading.RLock()
        if not path.exists() and not create:
            raise IndexMissingError(
                f"there is no index at {path}: check --data-dir (or DOCCHAT_DATA_DIR), "
                "or add documents first with `docchat ingest`"
            )
        self.read_only = path.exists() and not (
            os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
        )
        self.connection = self._open_read_only() if self.read_only else self._open_writable()

    def _open_writable(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(
                f"cannot create the data directory {self.path.parent} "
                f"({exc.strerror or exc}): choose a writable --data-dir"
            ) from exc
        with self.storage():
            return writable(self.path)

    def _open_read_only(self) -> sqlite3.Connection:
        """A read-only connection; `immutable` where SQLite cannot even make its WAL index
        file (a read-only file system or folder): nobody can be writing there then."""
        uri = self.path.resolve().as_uri()
        with self.storage():
            db = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
            try:
                db.execute("SELECT COUNT(*) FROM meta").fetchone()
            except sqlite3.OperationalError:
                db.close()
                db = sqlite3.connect(
                    f"{uri}?mode=ro&immutable=1", uri=True, check_same_thread=False
                )
            db.isolation_level = None
            db.row_factory = sqlite3.Row
        return db

    def close(self) -> None:
        self.connection.close()

    @contextmanager
    def storage(self) -> Iterator[None]:
        """SQLite's own errors (a full disk, a damaged file, ...) as errors that say what to do."""
        try:
            yield
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
            if isinstance(exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError)):
                raise
            raise storage_error(exc, self.path, INDEX_SAYS) from exc

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT under the lock, rolled back by any error."""
        if self.read_only:
            raise ReadOnlyStorageError(
                f"the index at {self.path} is read-only: searching and reading work, but adding "
                "or removing documents needs a writable --data-dir"
            )
        with self.lock, self.storage(), write_transaction(self.connection):
            yield self.connection

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """One read transaction under the lock: every read inside sees the same moment."""
        with self.lock, self.storage():
            self.connection.execute("BEGIN")
            try:
                yield self.connection
            finally:
                self.connection.execute("COMMIT")

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self.lock, self.storage():
            return self.connection.execute(sql, params).fetchall()
