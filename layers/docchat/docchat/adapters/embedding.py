"""What the embedder adapters share: batches of similar length, and unit-length rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from docchat.ports import Vectors


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


def unit_length(matrix: npt.NDArray[np.floating[Any]]) -> Vectors:
    """`matrix` as float32 with each row scaled to unit L2 length (all-zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    normalised: Vectors = (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
    return normalised


def cosines(matrix: npt.NDArray[np.floating[Any]], vector: Vectors) -> Vectors:
    """Each row of `matrix` times `vector` (their cosines, for unit vectors), in this thread.
    Not `matrix @ vector`: BLAS spreads a matrix-vector product over its threads, and on a
    busy 2-core machine a 5,000-row product waited 20-30 ms for them where one thread takes
    0.3 ms (bench/index.py; every search and rerank makes several)."""
    scores: Vectors = np.einsum("ij,j->i", matrix, vector)
    return scores
