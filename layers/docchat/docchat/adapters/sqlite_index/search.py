"""Searching the chunks: exact cosine k-NN over every vector in a numpy matrix, and BM25 over
numpy postings, both kept in memory and read again after the chunks changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from docchat.adapters.sqlite_index.bm25 import Postings, Tokenizer, best_rows
from docchat.adapters.sqlite_index.store import Database
from docchat.ports import Vectors


class Searcher:
    """The chunks' vectors and postings, loaded from the file when its chunks changed."""

    def __init__(self, db: Database, tokenizer: Tokenizer, *, dimension: int) -> None:
        self.db = db
        self.tokenizer = tokenizer
        self.dimension = dimension
        self._loaded: tuple[int, int] | None = None
        # Bumped by this connection's chunk writes only: registry writes keep the vector cache.
        self.generation = 0
        self._ids = np.zeros(0, dtype=object)
        # doc_id -> version -> positions of its chunks in the loaded arrays
        self._doc_rows: dict[str, dict[str, NDArray[np.intp]]] = {}
        self._pairs = 0  # how many (doc_id, version) pairs _doc_rows holds
        # doc_id -> version, when every document has chunks of one version only
        self._versions: dict[str, str] | None = {}
        self.matrix = np.zeros((0, dimension), dtype=np.float32)
        self._postings = Postings.build({}, [], [])

    def changed(self) -> None:
        """This connection changed (or tried to change) chunks: load them again."""
        self.generation += 1

    def vector_search(
        self,
        query: Vectors,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """Exact cosine top-k as (chunk id, similarity), best first."""
        with self.db.lock:
            self._load()
            ids, matrix, rows = self._ids, self.matrix, self._rows_of(doc_ids, versions)
        scores = matrix @ np.asarray(query, dtype=np.float32)
        if rows is None:
            rows = np.arange(len(ids))
        return [(str(ids[row]), float(scores[row])) for row in best_rows(scores, rows, k)]

    def keyword_search(
        self,
        query: str,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 top-k as (chunk id, score where higher is better), best first."""
        terms = self.tokenizer.query_terms(query)
        if not terms:
            return []
        with self.db.lock:
            self._load()
            ids, postings = self._ids, self._postings
            rows = self._rows_of(doc_ids, versions)
        return [(str(ids[row]), score) for row, score in postings.search(terms, k=k, within=rows)]

    def _rows_of(
        self, doc_ids: Sequence[str] | None, versions: Mapping[str, str] | None
    ) -> NDArray[np.intp] | None:
        """The positions of the wanted chunks in the loaded arrays (None: every chunk)."""
        if doc_ids is None and versions in (None, self._versions):
            return None  # the usual case: the index holds just the registry's versions
        wanted = None if doc_ids is None else set(doc_ids)
        parts: list[NDArray[np.intp]] = []
        if versions is None:
            for doc_id in wanted or ():
                parts.extend(self._doc_rows.get(doc_id, {}).values())
        else:
            for doc_id, version in versions.items():
                rows = self._doc_rows.get(doc_id, {}).get(version)
                if rows is not None and (wanted is None or doc_id in wanted):
                    parts.append(rows)
        if len(parts) == self._pairs:
            return None  # every (document, version) loaded is wanted: search them all
        return np.sort(np.concatenate([np.zeros(0, dtype=np.intp), *parts]))

    def _load(self) -> None:
        """Keep every vector in a numpy matrix and every term in postings, reloaded only after
        the data changed."""
        with self.db.snapshot() as db:  # one snapshot of chunks and terms
            version = db.execute("PRAGMA data_version").fetchone()[0]
            if (version, self.generation) == self._loaded:
                return
            rows = db.execute(
                "SELECT chunk_id, doc_id, vector, length, term_ids, term_freqs, version"
                " FROM chunks ORDER BY id"
            ).fetchall()
            term_ids = dict(db.execute("SELECT term, id FROM terms").fetchall())
        self._ids = np.array([r[0] for r in rows], dtype=object)
        by_doc: dict[str, dict[str, list[int]]] = {}
        for row, r in enumerate(rows):
            by_doc.setdefault(r[1], {}).setdefault(r[6], []).append(row)
        self._doc_rows = {
            doc: {kept: np.array(at, dtype=np.intp) for kept, at in by_version.items()}
            for doc, by_version in by_doc.items()
        }
        self._pairs = sum(len(by_version) for by_version in by_doc.values())
        self._versions = (
            {doc: next(iter(vs)) for doc, vs in by_doc.items()}
            if self._pairs == len(by_doc)
            else None
        )
        blob = b"".join(r[2] for r in rows)
        self.matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), self.dimension)
        self._postings = Postings.build(
            term_ids, [(r[4], r[5]) for r in rows], [r[3] for r in rows]
        )
        self._loaded = (version, self.generation)
