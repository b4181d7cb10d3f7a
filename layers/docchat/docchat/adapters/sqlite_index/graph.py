"""An HNSW graph over a large segment's vectors (usearch), searched through a memory map.

The graph keeps each vector as 8-bit integers: it only proposes candidates, which the segment
scores again exactly with its float32 vectors. usearch rather than our own code: a file it wrote
opens as a view (memory-mapped), and a search takes about 1 ms. bench/index.py's vectors are
clustered (a document's chunks share a topic), where a graph needs a longer search list as it
grows: at 1M chunks (three 320,000-row graphs and two of 20,000) the re-scored top 10 held 0.958
of the exact one with ef = 0.25 sqrt(rows), 0.972 with 0.5, 0.981 with 1, 0.987 with 1.5 and
0.991 with 2, at 0.06x, 0.07x, 0.11x, 0.15x and 0.17x an exact numpy scan. Opening a view still
does work per node (usearch 2.26's view counts removed keys by reading every node and calls its
progress callback per node, taking the GIL: about 18 ms per 320,000 rows), the one cost of
opening that grows with the rows.
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

# HNSW's own parameters: edges per node, and the candidate list kept while building.
CONNECTIVITY = 16
EXPANSION_ADD = 64
# Threads that add vectors to a graph (0: one per core). Several threads build a slightly
# different graph each time; one builds the same graph from the same vectors.
BUILD_THREADS = 0
# The candidate list kept while searching ("ef") grows with the square root of the graph's
# rows: among clustered vectors a larger graph needs a longer list for the same recall.
EXPANSION_PER_ROOT = 1.5
EXPANSION_SEARCH = 64  # and never shorter than this


class Graph:
    """Proposes the nearest rows of a segment to a query vector (positions in the segment)."""

    def __init__(self, index: Any) -> None:
        self._index = index
        self._expansion = max(EXPANSION_SEARCH, round(EXPANSION_PER_ROOT * math.sqrt(len(index))))

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
            index.add(np.arange(at, at + len(block), dtype=np.uint64), block, threads=BUILD_THREADS)
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
        self._index.expansion_search = max(self._expansion, count)
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
