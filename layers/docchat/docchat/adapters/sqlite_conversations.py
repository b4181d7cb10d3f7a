"""Saved conversations in the data directory, in their own SQLite file (conversations.sqlite3).

A sibling of index.sqlite3 rather than a table in it: the index is rebuildable and the advice
for a damaged, foreign-schema or other-embedder index is to delete it and ingest again, which
must not take the user's conversations with it; and a read-only, shared index (a team's
published one) must not stop each reader from keeping conversations. One row per conversation,
its messages as JSON (the same shape DynamoDB keeps in the cloud), an answer's feedback in it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from docchat.adapters.sqlite_errors import (
    StorageKind,
    storage_error,
    writable,
    write_transaction,
)
from docchat.answer.conversations import decoded_messages, extended, now, rated, ratings_of
from docchat.errors import (
    IndexSchemaError,
)
from docchat.limits import MAX_CONVERSATIONS_LISTED
from docchat.models import (
    Conversation,
    ConversationSummary,
    Feedback,
    RatedAnswer,
    StoredMessage,
)

SCHEMA_VERSION = "1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations (
    user_id TEXT NOT NULL, id TEXT NOT NULL, title TEXT NOT NULL,
    created REAL NOT NULL, updated REAL NOT NULL, messages TEXT NOT NULL,
    PRIMARY KEY (user_id, id)
);
CREATE INDEX IF NOT EXISTS conversations_newest ON conversations (user_id, updated DESC);
"""


class SqliteConversations:
    """Conversations of the data directory's users (locally: one, `local`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        with self._storage():
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = writable(path)
            self._db.executescript(_SCHEMA)
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            (schema,) = self._db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if schema != SCHEMA_VERSION:
            self.close()
            raise IndexSchemaError(
                f"the conversations file {path} was written by another docchat version "
                f"(schema {schema}, this one reads {SCHEMA_VERSION}): use that version, or move "
                "the file aside to start with no saved conversations"
            )

    def close(self) -> None:
        self._db.close()

    def conversations(self, user: str) -> list[ConversationSummary]:
        rows = self._rows(
            "SELECT id, title, updated FROM conversations WHERE user_id = ? "
            "ORDER BY updated DESC, id LIMIT ?",
            (user, MAX_CONVERSATIONS_LISTED),
        )
        return [ConversationSummary(**dict(row)) for row in rows]

    def conversation(self, user: str, conversation_id: str) -> Conversation | None:
        rows = self._rows(
            "SELECT * FROM conversations WHERE user_id = ? AND id = ?", (user, conversation_id)
        )
        return _conversation(rows[0]) if rows else None

    def start(self, user: str, conversation_id: str, *, title: str) -> Conversation:
        stamp = now()
        with self._transaction():
            self._db.execute(
                "INSERT OR IGNORE INTO conversations VALUES (?, ?, ?, ?, ?, '[]')",
                (user, conversation_id, title, stamp, stamp),
            )
        found = self.conversation(user, conversation_id)
        assert found is not None  # made above, or there already
        return found

    def append(
        self,
        user: str,
        conversation_id: str,
        messages: Sequence[StoredMessage],
        *,
        after: int | None = None,
    ) -> Conversation | None:
        return self._rewritten(
            user, conversation_id, lambda saved: extended(saved, messages, after=after)
        )

    def rename(self, user: str, conversation_id: str, *, title: str) -> ConversationSummary | None:
        with self._transaction():
            changed = self._db.execute(
                "UPDATE conversations SET title = ?, updated = ? WHERE user_id = ? AND id = ?",
                (title, now(), user, conversation_id),
            ).rowcount
        found = self.conversation(user, conversation_id) if changed else None
        return found.summary() if found else None

    def delete(self, user: str, conversation_id: str) -> bool:
        with self._transaction():
            deleted = self._db.execute(
                "DELETE FROM conversations WHERE user_id = ? AND id = ?", (user, conversation_id)
            ).rowcount
        return bool(deleted)

    def rate(
        self, user: str, conversation_id: str, position: int, feedback: Feedback | None
    ) -> Conversation | None:
        return self._rewritten(
            user, conversation_id, lambda saved: rated(saved, position, feedback)
        )

    def ratings(self, user: str, conversation_id: str) -> list[RatedAnswer] | None:
        found = self.conversation(user, conversation_id)
        return None if found is None else ratings_of(found)

    def every_conversation(self) -> Iterator[tuple[str, Conversation]]:
        rows = self._rows("SELECT * FROM conversations ORDER BY user_id, id", ())
        for row in rows:
            yield row["user_id"], _conversation(row)

    def _rewritten(
        self, user: str, conversation_id: str, change: Callable[[list[StoredMessage]], str]
    ) -> Conversation | None:
        """The conversation with its messages replaced by `change` of them (encoded), in one
        transaction; None if the user has no such conversation."""
        with self._transaction():
            row = self._db.execute(
                "SELECT messages FROM conversations WHERE user_id = ? AND id = ?",
                (user, conversation_id),
            ).fetchone()
            if row is None:
                return None
            text = change(decoded_messages(row["messages"]))
            self._db.execute(
                "UPDATE conversations SET messages = ?, updated = ? WHERE user_id = ? AND id = ?",
                (text, now(), user, conversation_id),
            )
        return self.conversation(user, conversation_id)

    def _rows(self, sql: str, params: Sequence[object]) -> list[sqlite3.Row]:
        with self._lock, self._storage():
            return self._db.execute(sql, params).fetchall()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._lock, self._storage(), write_transaction(self._db):
            yield

    @contextmanager
    def _storage(self) -> Iterator[None]:
        """SQLite's and the file system's errors as errors that say what to do."""
        try:
            yield
        except sqlite3.IntegrityError:
            raise
        except (sqlite3.Error, OSError) as exc:
            raise storage_error(exc, self.path, _SAYS) from exc


def _conversation(row: sqlite3.Row) -> Conversation:
    return Conversation(
        id=row["id"],
        title=row["title"],
        created=row["created"],
        updated=row["updated"],
        messages=decoded_messages(row["messages"]),
    )


# What each kind of failure (`storage_kind`) means for saved conversations, and what to do.
_SAYS: dict[StorageKind, str] = {
    "full": "the disk holding {folder} is full ({error}): free some space and try again",
    "damaged": "the conversations file {path} is damaged ({error}): move it aside to start "
    "with no saved conversations",
    "read-only": "the conversations file {path} is read-only ({error}): conversations are "
    "saved only in a writable --data-dir",
    "busy": "the conversations file {path} is busy ({error}): another docchat is writing; retry",
    "unusable": "the conversations file {path} cannot be used ({error}): check the disk and "
    "the file's permissions",
}
