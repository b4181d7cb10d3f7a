"""Which chunk rows a search may return (`ChunkStore`: `doc_ids`, and `versions` per
document): every live row, only some, or all but some; worked out from each document's chunk
count per version, so that the usual request (the indexed version of every document, which
is what the index holds) costs a comparison and no read."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from docchat.adapters.sqlite_index.store import Database

Pairs = Mapping[str, Mapping[str, int]]  # doc_id -> version -> chunks


@dataclass(frozen=True)
class Wanted:
    """All rows (`rows` None), none, only `rows` (`keep`) or all but `rows`."""

    rows: NDArray[np.int64] | None = None
    keep: bool = False
    nothing: bool = False


EVERY_ROW = Wanted()
NO_ROW = Wanted(nothing=True)


def wanted_rows(
    db: Database,
    pairs: Pairs,
    *,
    doc_ids: Sequence[str] | None,
    versions: Mapping[str, str] | None,
) -> Wanted:
    """The rows a search with these filters may return, given the index's `pairs`."""
    if doc_ids is None and versions is None:
        return EVERY_ROW
    named = None if doc_ids is None else set(doc_ids)
    if versions is None:
        chosen = [(d, v) for d in named or () for v in pairs.get(d, {})]
    else:
        chosen = [
            (d, v)
            for d, v in versions.items()
            if v in pairs.get(d, {}) and (named is None or d in named)
        ]
    count = sum(pairs[d][v] for d, v in chosen)
    total = sum(sum(by_version.values()) for by_version in pairs.values())
    if count == total:
        return EVERY_ROW
    if count == 0:
        return NO_ROW
    if count <= total - count:
        return Wanted(rows=_rows_of(db, chosen), keep=True)
    left_out = set(_all(pairs)) - set(chosen)
    return Wanted(rows=_rows_of(db, left_out), keep=False)


def _all(pairs: Pairs) -> Iterable[tuple[str, str]]:
    return ((d, v) for d, by_version in pairs.items() for v in by_version)


def _rows_of(db: Database, chosen: Iterable[tuple[str, str]]) -> NDArray[np.int64]:
    """The row ids of these (doc_id, version) pairs' chunks, ascending."""
    wanted = set(chosen)
    doc_ids = sorted({d for d, _ in wanted})
    found = db.rows(
        "SELECT id, doc_id, version FROM chunks WHERE doc_id IN (SELECT value FROM json_each(?))",
        (json.dumps(doc_ids),),
    )
    rows = [int(r[0]) for r in found if (r[1], r[2]) in wanted]
    return np.array(sorted(rows), dtype=np.int64)
