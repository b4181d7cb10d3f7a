"""What the embedder adapters share: batches of similar length, and unit-length rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from docchat.ports import Vectors


def length_sorted_batches(texts: Sequence[str], batch_size: int) -> list[list[int]]:
    """Indices of `texts` in batches of similar length, so padding wastes little work."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def unit_length(matrix: npt.NDArray[np.floating[Any]]) -> Vectors:
    """`matrix` as float32 with each row scaled to unit L2 length (all-zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    normalised: Vectors = (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
    return normalised
