"""An HNSW graph over a large segment's vectors (usearch), searched through a memory map.

The graph keeps each vector as 8-bit integers: it only proposes candidates, which the segment
scores again exactly with its float32 vectors. usearch rather than our own code: a file it wrote
opens as a view (memory-mapped), and a search takes about 1 ms. On bench/index.py's clustered
vectors (thousands of near-duplicates per subtopic) the re-scored top 10 holds 0.92 of the exact
one at 387k chunks (search.EXTRA_CANDIDATES); opening a view still walks its nodes (about 60 ms
per 100k rows on the loaded machine).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

# HNSW's own parameters (not tuned to any benchmark's answers): edges per node, and the
# candidate lists kept while building and while searching.
CONNECTIVITY = 16
EXPANSION_ADD = 64
EXPANSION_SEARCH = 64


class Graph:
    """Proposes the nearest rows of a segment to a query vector (positions in the segment)."""

    def __init__(self, index: Any) -> None:
        self._index = index

    @staticmethod
    def build(vectors: NDArray[np.float32], path: Path) -> None:
        """Write the graph of `vectors` (unit length; inner product) to `path`."""
        Index = _usearch_index()
        index = Index(
            ndim=vectors.shape[1],
            metric="ip",
            dtype="i8",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
        )
        for at in range(0, len(vectors), 65_536):
            block = np.ascontiguousarray(vectors[at : at + 65_536], dtype=np.float32)
            index.add(np.arange(at, at + len(block), dtype=np.uint64), block)
        index.save(str(path))

    @classmethod
    def open(cls, path: Path) -> Graph:
        """The graph in `path`, viewed (memory-mapped), not loaded. Without key lookups: a
        search returns each node's key (its position) from the node itself, and the lookup
        table is a hash of every key, built by walking every node at open (60 of the 85 ms of
        a 200,000-row view)."""
        index = _usearch_index().restore(str(path), view=True, enable_key_lookups=False)
        if index is None:
            raise FileNotFoundError(path)
        return cls(index)

    def candidates(self, query: NDArray[np.float32], count: int) -> NDArray[np.intp]:
        """Up to `count` positions of rows near `query`, in no particular order."""
        self._index.expansion_search = max(EXPANSION_SEARCH, count)
        found = self._index.search(query, count, threads=1)
        return np.asarray(found.keys, dtype=np.intp)


def _usearch_index() -> Any:
    """usearch's Index class. onnxruntime (the local embedder) is loaded first when it is
    installed: loaded after usearch 2.26's compiled module, its import crashes the process
    (a segmentation fault, onnxruntime 1.32 here)."""
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index
