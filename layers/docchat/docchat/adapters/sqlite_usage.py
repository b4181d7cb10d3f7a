"""What each answer used, in the data directory's usage.sqlite3 (answer/usage.py): a row per
answer, summed by `docchat usage` per day, user or collection. A file of its own, as the saved
conversations are: deleting a damaged index must not take it along."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Literal

from docchat.adapters.sqlite_errors import (
    StorageKind,
    storage_error,
    writable,
    write_transaction,
)
from docchat.answer.usage import Spent

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    at TEXT NOT NULL, day TEXT NOT NULL, user_id TEXT NOT NULL, collection TEXT NOT NULL,
    model TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL, cost_usd REAL,
    rerank_search_units INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS answers_by_day ON answers (day);
"""
_SAYS: dict[StorageKind, str] = {
    "full": "the disk holding {folder} is full: the answer's usage was not kept ({error})",
    "damaged": "the usage file {path} is damaged ({error}): move it aside to start a new one",
    "read-only": "the usage file {path} is read-only ({error}): usage is not kept",
    "busy": "the usage file {path} is busy ({error}): try again",
    "unusable": "the usage file {path} cannot be used ({error})",
}
By = Literal["day", "user", "collection", "model"]
_COLUMN: dict[By, str] = {
    "day": "day",
    "user": "user_id",
    "collection": "collection",
    "model": "model",
}


@dataclass(frozen=True)
class Total:
    """One group's sums. `cost_usd` sums the answers whose cost is known; `unpriced` counts
    those it is not (a model no price names)."""

    key: str
    answers: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cost_usd: float
    unpriced: int
    rerank_search_units: int = 0


class SqliteUsage:
    """The data directory's usage file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        with self._storage():
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = writable(path)
            self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(answers)")}
            if "rerank_search_units" not in columns:  # a file from before search units
                self._db.execute(
                    "ALTER TABLE answers ADD COLUMN rerank_search_units INTEGER NOT NULL DEFAULT 0"
                )

    def close(self) -> None:
        self._db.close()

    def record(self, spent: Spent) -> None:
        usage = spent.usage
        row = (
            spent.at.isoformat(),
            spent.at.date().isoformat(),
            spent.user,
            spent.collection,
            spent.model,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.cost_usd,
            usage.rerank_search_units,
        )
        with self._lock, self._storage(), write_transaction(self._db):
            self._db.execute(
                "INSERT INTO answers (at, day, user_id, collection, model, input_tokens,"
                " output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,"
                " rerank_search_units) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )

    def totals(self, by: By, *, since: date | None = None, user: str | None = None) -> list[Total]:
        """The sums per `by` (days in order, else the costliest first), of the answers from
        `since` on and of `user` when given."""
        column = _COLUMN[by]
        where, params = ["1"], []
        if since is not None:
            where.append("day >= ?")
            params.append(since.isoformat())
        if user is not None:
            where.append("user_id = ?")
            params.append(user)
        order = "key" if by == "day" else "cost DESC, key"
        sql = (
            f"SELECT {column} AS key, COUNT(*), SUM(input_tokens), SUM(output_tokens),"
            " SUM(cache_read_tokens), COALESCE(SUM(cost_usd), 0) AS cost,"
            " SUM(cost_usd IS NULL), SUM(rerank_search_units) FROM answers"
            f" WHERE {' AND '.join(where)} GROUP BY key ORDER BY {order}"
        )
        with self._lock, self._storage():
            rows = self._db.execute(sql, params).fetchall()
        return [
            Total(str(k), int(n), int(i), int(o), int(c), round(float(d), 6), int(u), int(r))
            for k, n, i, o, c, d, u, r in rows
        ]

    @contextmanager
    def _storage(self) -> Iterator[None]:
        try:
            yield
        except (sqlite3.Error, OSError) as exc:
            raise storage_error(exc, self.path, _SAYS) from exc
