"""BM25 for the embedded index: FTS5's analysis and scores, computed over numpy postings.

SQLite FTS5 ranks an OR query by scoring every row that contains any query word, so a query
with a word found in a third of the chunks costs a third of the index (50-90 ms at 100k chunks).
Here FTS5 only tokenizes (porter stemming, unicode61, no diacritics); each chunk's weighted term
frequencies are stored with it, and a query adds up the postings of its terms with numpy. The
scores are those of FTS5's bm25() with the same column weights (k1 = 1.2, b = 0.75).
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

K1 = 1.2
B = 0.75
# Column weights of bm25(): a word in a heading, the title or the file name says more than one
# in the text. The first three are a chunk's context (`Chunk.context`): contextual BM25.
FIELD_WEIGHTS = {"file": 2.0, "title": 2.0, "headings": 3.0, "text": 1.0}
TOKENIZE = "porter unicode61 remove_diacritics 2"
# Function words match nearly every chunk and carry almost no BM25 weight; a query keeps them
# only when it has nothing else.
_FUNCTION_WORDS = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves
"""
STOPWORDS = frozenset(_FUNCTION_WORDS.split())
_WORD = re.compile(r"\w+", re.UNICODE)

Fields = tuple[str, str, str, str]  # file label, title, headings, text
TermFrequencies = dict[str, float]


class Tokenizer:
    """FTS5's tokenizer, run through a table in an in-memory database."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        columns = ", ".join(FIELD_WEIGHTS)
        self._db.execute(
            f"CREATE VIRTUAL TABLE fields USING fts5 ({columns}, tokenize = '{TOKENIZE}')"
        )
        self._db.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab (fields, instance)")

    def analyse(self, documents: Sequence[Fields]) -> list[tuple[TermFrequencies, int]]:
        """Per document: its terms with their weighted frequencies, and its number of tokens."""
        frequencies: list[TermFrequencies] = [{} for _ in documents]
        lengths = [0] * len(documents)
        with self._lock, self._emptied():
            self._db.executemany(
                f"INSERT INTO fields (rowid, {', '.join(FIELD_WEIGHTS)}) VALUES (?, ?, ?, ?, ?)",
                [(n, *fields) for n, fields in enumerate(documents)],
            )
            rows = self._db.execute(
                "SELECT doc, col, term, count(*) FROM tokens GROUP BY doc, col, term"
            ).fetchall()
        for doc, column, term, count in rows:
            terms = frequencies[doc]
            terms[term] = terms.get(term, 0.0) + FIELD_WEIGHTS[column] * count
            lengths[doc] += count
        return list(zip(frequencies, lengths, strict=True))

    def query_terms(self, query: str) -> list[str]:
        """The terms of the query's distinct content words, in order (FTS5's OR of words)."""
        words = _WORD.findall(query)
        content = [w for w in words if w.casefold() not in STOPWORDS] or words
        with self._lock, self._emptied():
            self._db.executemany(
                "INSERT INTO fields (rowid, text) VALUES (?, ?)",
                enumerate(dict.fromkeys(content)),
            )
            rows = self._db.execute("SELECT term FROM tokens ORDER BY doc, offset").fetchall()
        return [term for (term,) in rows]

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _emptied(self) -> Iterator[None]:
        """Leave the table empty afterwards, also when a call fails half way."""
        try:
            yield
        finally:
            self._db.execute("DELETE FROM fields")


def best_rows(
    scores: NDArray[np.floating[Any]], rows: NDArray[np.intp], k: int
) -> NDArray[np.intp]:
    """The `k` of `rows` (ascending) with the highest scores, best first, ties to the lower row."""
    if k <= 0:
        return rows[:0]
    values = scores[rows]
    if len(rows) > k:
        floor = -np.partition(-values, k - 1)[k - 1]
        keep = values > floor
        keep[np.flatnonzero(values == floor)[: k - int(keep.sum())]] = True
        rows, values = rows[keep], values[keep]
    return rows[np.lexsort((rows, -values))]


@dataclass(frozen=True)
class Postings:
    """Every row's weighted term frequencies grouped by term, and each row's length norm."""

    term_ids: Mapping[str, int]
    starts: NDArray[np.intp]  # the postings of term id t are [starts[t], starts[t + 1])
    rows: NDArray[np.int32]
    frequencies: NDArray[np.float32]
    norms: NDArray[np.float64]  # k1 * (1 - b + b * length / average length), per row

    @classmethod
    def build(
        cls,
        term_ids: Mapping[str, int],
        rows: Sequence[tuple[bytes, bytes]],
        lengths: Sequence[int],
    ) -> Postings:
        """From each row's (int32 term ids, float32 frequencies) as stored, and its length."""
        terms = np.frombuffer(b"".join(ids for ids, _ in rows), dtype=np.int32)
        frequencies = np.frombuffer(b"".join(f for _, f in rows), dtype=np.float32)
        sizes = np.fromiter((len(ids) // 4 for ids, _ in rows), dtype=np.intp, count=len(rows))
        owners = np.repeat(np.arange(len(rows), dtype=np.int32), sizes)
        order = np.argsort(terms, kind="stable")  # timsort: twice as fast as quicksort here
        size = max(term_ids.values(), default=0) + 2
        starts = np.searchsorted(terms[order], np.arange(size)).astype(np.intp)
        length = np.asarray(lengths, dtype=np.float64)
        average = float(length.mean()) if length.size and length.mean() > 0 else 1.0
        return cls(
            term_ids=term_ids,
            starts=starts,
            rows=owners[order],
            frequencies=frequencies[order],
            norms=K1 * (1 - B + B * length / average),
        )

    def search(
        self, terms: Sequence[str], *, k: int, within: NDArray[np.intp] | None = None
    ) -> list[tuple[int, float]]:
        """The `k` best rows for `terms` as (row, BM25 score), optionally only rows `within`."""
        count = len(self.norms)
        scores = np.zeros(count)
        for term in terms:
            term_id = self.term_ids.get(term)
            if term_id is None:
                continue
            low, high = self.starts[term_id], self.starts[term_id + 1]
            hits = int(high - low)
            if not hits:
                continue
            rows, frequencies = self.rows[low:high], self.frequencies[low:high]
            idf = max(math.log((count - hits + 0.5) / (hits + 0.5)), 1e-6)
            scores[rows] += idf * frequencies * (K1 + 1) / (frequencies + self.norms[rows])
        # `within` is ascending, as best_rows wants its rows.
        matched = np.flatnonzero(scores) if within is None else within[scores[within] != 0]
        return [(int(row), float(scores[row])) for row in best_rows(scores, matched, k)]
