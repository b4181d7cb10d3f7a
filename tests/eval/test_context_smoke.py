"""Contextual chunks on a slice of BEIR SciFact, cheaply: fails when a chunk's context (its
document's title) no longer reaches BM25 or the embedded text.

The test embedder (tests.conftest.WordEmbedder, hashed words) stands in for the ONNX model,
so the slice runs in seconds; tests/eval/test_scifact_smoke.py measures the real model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docchat.config import Settings
from docchat.evaluate.beir import beir_slice, evaluate_beir, load_beir
from docchat.evaluate.corpus import CONTEXTS, Retrieval
from tests.conftest import WordEmbedder

SCIFACT = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "beir-scifact"
QUERIES = 40
DISTRACTORS = 300
# nDCG@10 of this slice, plain -> contextual, recorded Nov 2026: BM25 0.850 -> 0.865, hashed
# word vectors 0.217 -> 0.253, hybrid 0.807 -> 0.839. Each gain must hold at least this much.
GAINS = {"bm25": 0.01, "vector": 0.02, "hybrid": 0.02}


@pytest.fixture(scope="module")
def scores() -> dict[str, dict[str, dict[str, float]]]:
    if not SCIFACT.is_dir():
        pytest.skip(f"BEIR SciFact not available: {SCIFACT} is absent")
    data = beir_slice(load_beir(SCIFACT, split="test"), queries=QUERIES, distractors=DISTRACTORS)
    retrieval = Retrieval.of(Settings())
    return {
        context: evaluate_beir(data, embedder=WordEmbedder(), retrieval=retrieval, context=context)
        for context in CONTEXTS
    }


@pytest.mark.parametrize("method", list(GAINS))
def test_scifact_slice_contextual_text_beats_plain_text(
    scores: dict[str, dict[str, dict[str, float]]], method: str
) -> None:
    plain = scores["plain"][method]["ndcg@10"]
    contextual = scores["contextual"][method]["ndcg@10"]

    assert contextual >= plain + GAINS[method], scores
