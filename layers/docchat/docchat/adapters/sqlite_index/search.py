"""The two searches over a `View`: the segments that hold the chunks at one moment, each with
the rows removed since it was written masked out.

k-NN is exact cosine over a segment's vectors, except in a segment with an HNSW graph, whose
candidates are scored again exactly (float32) before the best are kept; when the graph
proposes too few wanted rows (a filter keeps few of them) the segment is scanned exactly.
BM25 adds up the postings of the query's terms with FTS5's bm25() formula over every live
row, so scores are those of one table holding them all. Ties go to the lower row id (the
earlier written chunk), as they did when all chunks were one matrix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from docchat.adapters.sqlite_index.bm25 import K1, B, best_rows
from docchat.adapters.sqlite_index.segment import Mask, Segment
from docchat.ports import Vectors
from docchat.vectors import cosines

# Candidates asked of a graph beyond the k wanted, and how many times the request may grow
# (x4) when removed or filtered rows leave fewer than k, before the segment is scanned instead.
# 16 extra found 0.85 of the exact top 10 at 387k clustered chunks, 90 found 0.92 for 1 ms
# more (bench/index.py), with a search list of 100; what bounds recall is that list's length
# (graph.EXPANSION_PER_ROOT), not the graph's 8-bit vectors.
EXTRA_CANDIDATES = 90
GROWTHS = 2
# A filter that keeps this many rows of a segment or fewer is scanned exactly: a graph walk
# finds few of them among its candidates (a collection, a named document), and an exact scan of
# 20,000 rows costs about a millisecond.
EXACT_ROWS = 20_000
Hit = tuple[int, float]  # (chunk row id, score)


@dataclass(frozen=True)
class Part:
    """A segment and which of its rows are live (None: all of them)."""

    segment: Segment
    live: Mask | None = None

    @property
    def count(self) -> int:
        return len(self.segment) if self.live is None else int(self.live.sum())

    @property
    def length(self) -> int:
        lengths = self.segment.lengths
        return int(lengths.sum() if self.live is None else lengths[self.live].sum())


@dataclass(frozen=True)
class View:
    """The live rows at one moment, in segments of ascending, disjoint row ranges."""

    parts: tuple[Part, ...]
    count: int  # live rows
    length: int  # their tokens, for BM25's average length

    @classmethod
    def of(cls, parts: Sequence[Part]) -> View:
        ordered = tuple(
            sorted(parts, key=lambda p: int(p.segment.rows[0]) if len(p.segment) else 0)
        )
        return cls(ordered, sum(p.count for p in ordered), sum(p.length for p in ordered))

    def masks(self, rows: NDArray[np.int64] | None, *, keep: bool) -> list[Mask | None]:
        """Per part, its wanted live rows: all (None), only `rows` (`keep`), or all but `rows`."""
        if rows is None:
            return [part.live for part in self.parts]
        masks: list[Mask | None] = []
        for part in self.parts:
            mask = np.full(len(part.segment), not keep)
            mask[part.segment.positions(rows)] = keep
            masks.append(mask if part.live is None else mask & part.live)
        return masks

    def vector_search(self, query: Vectors, *, k: int, masks: Sequence[Mask | None]) -> list[Hit]:
        """The `k` rows most similar to `query` among the wanted ones, best first."""
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        hits = [
            hit
            for part, mask in zip(self.parts, masks, strict=True)
            for hit in _nearest(part.segment, query, k=k, mask=mask)
        ]
        return _best(hits, k)

    def keyword_search(
        self, term_ids: Sequence[int], *, k: int, masks: Sequence[Mask | None]
    ) -> list[Hit]:
        """The `k` wanted rows with the highest BM25 score for `term_ids`, best first."""
        if not self.count or k <= 0:
            return []
        average = self.length / self.count if self.length > 0 else 1.0
        scores: list[NDArray[np.float64] | None] = [None] * len(self.parts)
        for term_id in term_ids:
            found = [self._live_postings(part, term_id) for part in self.parts]
            hits = sum(len(rows) for rows, _ in found)
            if not hits:
                continue
            idf = max(math.log((self.count - hits + 0.5) / (hits + 0.5)), 1e-6)
            for at, (rows, frequencies) in enumerate(found):
                if not len(rows):
                    continue
                lengths = np.asarray(self.parts[at].segment.lengths[rows], dtype=np.float64)
                norms = K1 * (1 - B + B * lengths / average)
                part_scores = scores[at]
                if part_scores is None:
                    part_scores = scores[at] = np.zeros(len(self.parts[at].segment))
                part_scores[rows] += idf * frequencies * (K1 + 1) / (frequencies + norms)
        hits_found: list[Hit] = []
        for part, found_scores, mask in zip(self.parts, scores, masks, strict=True):
            if found_scores is None:
                continue
            matched = np.flatnonzero(found_scores if mask is None else found_scores * mask)
            ids = part.segment.rows
            hits_found.extend(
                (int(ids[at]), float(found_scores[at]))
                for at in best_rows(found_scores, matched, k)
            )
        return _best(hits_found, k)

    @staticmethod
    def _live_postings(part: Part, term_id: int) -> tuple[NDArray[np.int32], NDArray[np.float32]]:
        rows, frequencies = part.segment.postings(term_id)
        if part.live is None or not len(rows):
            return rows, frequencies
        keep = part.live[rows]
        return rows[keep], frequencies[keep]


def _nearest(segment: Segment, query: Vectors, *, k: int, mask: Mask | None) -> list[Hit]:
    """A segment's `k` wanted rows nearest to `query` (unit vectors: cosine)."""
    if not len(segment) or k <= 0:
        return []
    wanted = len(segment) if mask is None else int(mask.sum())
    if segment.graph is not None and wanted > k and (mask is None or wanted > EXACT_ROWS):
        count = k + EXTRA_CANDIDATES
        for _ in range(GROWTHS + 1):
            found = segment.graph.candidates(query, min(count, len(segment)))
            if mask is not None:
                found = found[mask[found]]
            if len(found) >= k:
                # A graph's keys are distinct: sorting is all `_scored` needs (np.unique
                # imports numpy.ma on first use, 30 ms of a fresh process's first search).
                return _scored(segment, query, np.sort(found), k)
            count *= 4
    positions = np.arange(len(segment)) if mask is None else np.flatnonzero(mask)
    return _scored(segment, query, positions, k)


def _scored(segment: Segment, query: Vectors, positions: NDArray[np.intp], k: int) -> list[Hit]:
    """The best `k` of `positions` (ascending), scored exactly against `query`."""
    if len(positions) == len(segment):
        scores = cosines(segment.vectors, query)
        best = best_rows(scores, positions, k)
        return [(int(segment.rows[at]), float(scores[at])) for at in best]
    scores = cosines(segment.vectors_at(positions), query)
    best = best_rows(scores, np.arange(len(positions)), k)
    return [(int(segment.rows[positions[at]]), float(scores[at])) for at in best]


def _best(hits: Sequence[Hit], k: int) -> list[Hit]:
    """The `k` best hits of several segments, ties to the lower row id."""
    return sorted(hits, key=lambda hit: (-hit[1], hit[0]))[:k]
