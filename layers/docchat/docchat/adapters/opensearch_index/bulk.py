"""Bulk requests: NDJSON lines, batches under a byte limit."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any


def ndjson(value: dict[str, Any]) -> str:
    """One line of a bulk body."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def batches(
    entries: Sequence[tuple[str, str]], *, max_bytes: int
) -> Iterator[list[tuple[str, str]]]:
    """Consecutive entries whose NDJSON adds up to at most `max_bytes` (one alone may exceed)."""
    batch: list[tuple[str, str]] = []
    size = 0
    for entry in entries:
        length = len(entry[1].encode())
        if batch and size + length > max_bytes:
            yield batch
            batch, size = [], 0
        batch.append(entry)
        size += length
    if batch:
        yield batch
