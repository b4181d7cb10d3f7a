"""A slice of COVID-QA answered extractively: fails when answer recall drops or a quote is not
verbatim on its page."""

from __future__ import annotations

from pathlib import Path

import pytest

from docchat.answer.extractive import QuoteWeights
from docchat.config import Settings
from docchat.evaluate.corpus import RERANKED, Chunking, Retrieval
from docchat.evaluate.qa import evaluate_qa, extractive_quoter, load_squad
from docchat.wiring import reranker

COVID = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "covid-qa"
QUESTIONS = 60
# Extractive answer recall of this slice with the tuned settings and the default reranker,
# recorded Nov 2026 (0.8167 before reranking, 0.8333 before quotes weighed their sentence's
# cosine with the question; main's extractive answers at d21c21e: MAIN_RECALL). The margin
# absorbs float differences between machines.
RECORDED = 0.85
MAIN_RECALL = 0.6833  # and quote fidelity 0.941
MARGIN = 0.02
# hit@1 of the same slice: the fused order, and reranked as the chat reranks by default (on
# these 60 questions hit@5 is 0.933 either way; over the test half see docs/performance.md).
RECORDED_HIT1 = 0.6667
RECORDED_RERANKED_HIT1 = 0.7833


@pytest.fixture(scope="module")
def scores() -> dict[str, dict[str, float]]:
    path = COVID / "200423_covidQA.json"
    if not path.is_file():
        pytest.skip(f"COVID-QA not available: {path} is absent")
    pytest.importorskip("onnxruntime", reason="the local embedder is not installed")
    from docchat.adapters.local_embedder import LocalEmbedder

    settings = Settings()
    embedder = LocalEmbedder()
    chat_reranker = reranker(settings, embedder)  # the chat's default: DOCCHAT_RERANKER=sentences
    return evaluate_qa(
        load_squad(path, limit=QUESTIONS),
        embedder=embedder,
        chunking=Chunking(settings.chunk_size, settings.chunk_overlap),
        retrieval=Retrieval.of(settings),
        reranker=chat_reranker,
        quoters={
            "extractive": extractive_quoter(
                threshold=settings.answer_threshold,
                weights=QuoteWeights.of(settings),
                reranker=chat_reranker,
            )
        },
        answer_passages=settings.top_k,
    )


def test_covid_slice_extractive_recall_holds(scores: dict[str, dict[str, float]]) -> None:
    assert scores["extractive"]["answer recall"] >= RECORDED - MARGIN, scores


def test_covid_slice_extractive_recall_beats_main(scores: dict[str, dict[str, float]]) -> None:
    assert scores["extractive"]["answer recall"] > MAIN_RECALL + 0.1, scores


def test_covid_slice_quotes_are_verbatim(scores: dict[str, dict[str, float]]) -> None:
    assert scores["extractive"]["quote fidelity"] == 1.0, scores


def test_covid_slice_reranking_puts_the_answer_first_more_often(
    scores: dict[str, dict[str, float]],
) -> None:
    assert scores["hybrid"]["hit@1"] >= RECORDED_HIT1 - MARGIN, scores
    assert scores[RERANKED]["hit@1"] >= RECORDED_RERANKED_HIT1 - MARGIN, scores
    assert scores[RERANKED]["hit@1"] > scores["hybrid"]["hit@1"] + 0.05, scores
