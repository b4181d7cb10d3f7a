"""Arithmetic on embedding vectors that adapters and the search share."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from docchat.ports import Vectors


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
