"""What the embedder adapters share: batches of similar length, unit-length rows, and the
queries they embedded last."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from docchat.ports import Vectors

# Query vectors each embedder remembers.
QUERIES_KEPT = 64


class RecentQueries:
    """The vectors of the last QUERIES_KEPT queries an embedder embedded, by text, read-only:
    a question's hybrid search, its sentence reranker and its extractive answer each ask for
    the query's vector, and a Bedrock embedder would call the model for each."""

    def __init__(self) -> None:
        self._vectors: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def vector(self, text: str, embed: Callable[[str], Vectors]) -> Vectors:
        """`text`'s vector: remembered, or `embed(text)` (outside the lock) and remembered."""
        with self._lock:
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
                return vector
        vector = embed(text)
        vector.setflags(write=False)
        with self._lock:
            self._vectors[text] = vector
            while len(self._vectors) > QUERIES_KEPT:
                self._vectors.popitem(last=False)
        return vector


def token_budget_batches(
    lengths: Sequence[int], batch_size: int, max_tokens: int
) -> list[list[int]]:
    """Indices of texts of these token `lengths`, shortest first, in batches of at most
    `batch_size` whose padded size (count x longest) stays within `max_tokens` (one text
    alone may pass it)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    for i in order:
        last = batches[-1] if batches else None
        if last and len(last) < batch_size and (len(last) + 1) * lengths[i] <= max_tokens:
            last.append(i)
        else:
            batches.append([i])
    return batches
