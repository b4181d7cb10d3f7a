"""Evaluation: metrics by hand on tiny inputs, the BEIR fixture end to end, document QA, fusion."""

from __future__ import annotations

import argparse
import json
import math
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from docchat.answer.extractive import QuoteWeights
from docchat.cli import evaluate as cli
from docchat.config import Settings
from docchat.errors import ConfigError, EvaluationDataError
from docchat.evaluate.beir import (
    beir_scores,
    beir_slice,
    evaluate_beir,
    load_beir,
    ndcg_at_k,
    recall_at_k,
)
from docchat.evaluate.corpus import Chunking, Retrieval, corpus_chunks
from docchat.evaluate.qa import (
    evaluate_qa,
    extractive_quoter,
    first_hit,
    hit_rates,
    load_squad,
    qa_split,
    verbatim,
)
from docchat.models import Chunk, Passage
from docchat.search.hybrid import fuse_by_score, hybrid_search
from tests.conftest import WordEmbedder

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "beir-tiny"
LOG3 = math.log2(3)
TUNED = Retrieval.of(Settings())  # the chat's hybrid search


# --- metrics ---------------------------------------------------------------------------------


def test_ndcg_at_k_graded_gains_against_the_ideal_order() -> None:
    # Given d1 (rel 2) and d2 (rel 1) judged, ranked as d3, d1, d2
    relevance = {"d1": 2, "d2": 1}

    # Then DCG = 0 + (2^2-1)/log2(3) + (2^1-1)/log2(4); IDCG = 3/log2(2) + 1/log2(3)
    expected = (3 / LOG3 + 1 / 2) / (3 + 1 / LOG3)
    assert ndcg_at_k(["d3", "d1", "d2"], relevance, 10) == pytest.approx(expected, abs=1e-15)
    assert ndcg_at_k(["d1", "d2"], relevance, 10) == 1.0
    assert ndcg_at_k(["d3", "d1", "d2"], relevance, 1) == 0.0


def test_ndcg_at_k_ideal_is_cut_at_k_and_ignores_zero_judgements() -> None:
    relevance = {"a": 1, "b": 1, "c": 1, "z": 0}

    # Only one slot: the ideal is one relevant document at rank 1
    assert ndcg_at_k(["a", "x"], relevance, 1) == 1.0
    assert ndcg_at_k(["z", "a"], relevance, 2) == pytest.approx(
        (1 / LOG3) / (1 + 1 / LOG3), abs=1e-15
    )
    assert ndcg_at_k(["a"], {"z": 0}, 10) == 0.0


def test_recall_at_k_counts_relevant_documents_found() -> None:
    relevance = {"a": 1, "b": 2, "c": 1, "z": 0}

    assert recall_at_k(["a", "z", "x", "b"], relevance, 3) == 1 / 3
    assert recall_at_k(["a", "z", "x", "b"], relevance, 4) == 2 / 3
    assert recall_at_k(["z"], {"z": 0}, 10) == 0.0


def test_beir_scores_averages_judged_queries_only() -> None:
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1, "d3": 1}, "q3": {"d4": 0}}
    rankings = {"q1": ["d1"], "q2": ["d9", "d3"]}

    scores = beir_scores(rankings, qrels)

    # q3 has no relevant document and does not count
    assert scores == {
        "ndcg@10": pytest.approx((1 + (1 / LOG3) / (1 + 1 / LOG3)) / 2, abs=1e-15),
        "recall@10": 0.75,
        "recall@100": 0.75,
    }


# --- BEIR data and the runner ----------------------------------------------------------------


def test_load_beir_reads_judged_queries_with_graded_qrels() -> None:
    data = load_beir(TINY)

    assert list(data.corpus) == ["d1", "d2", "d3", "d4", "d5"]
    assert data.corpus["d5"] == ("Roof repair guide", "How to repair a roof.")
    assert data.queries == {"q1": "sunlight electricity", "q2": "honey", "q3": "roof repair"}
    assert data.qrels == {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 1, "d5": 0}, "q3": {"d4": 1}}
    assert list(load_beir(TINY, split="train").queries) == ["q2"]
    assert list(load_beir(TINY, limit=2).queries) == ["q1", "q2"]


def test_load_beir_names_the_missing_file(tmp_path: Path) -> None:
    with pytest.raises(EvaluationDataError, match=r"corpus\.jsonl"):
        load_beir(tmp_path)


@pytest.mark.parametrize(
    ("corpus", "said"),
    [
        (b'{"_id": "d1", "text": "caf\xe9"}\n', r"corpus\.jsonl is not UTF-8 text"),
        (b'{"_id": "d1", "text": "a"}\n\n{"text": "no id"}\n', r"corpus\.jsonl, line 3, .*_id"),
        (b'{"_id": "d1"\n', r"corpus\.jsonl, line 1, .*not JSON"),
    ],
)
def test_load_beir_says_which_line_of_the_corpus_it_cannot_read(
    tmp_path: Path, corpus: bytes, said: str
) -> None:
    # A BEIR folder copied from the tiny one, its corpus replaced by one that is not BEIR's
    folder = tmp_path / "beir"
    shutil.copytree(TINY, folder)
    (folder / "corpus.jsonl").write_bytes(corpus)

    with pytest.raises(EvaluationDataError, match=said):
        load_beir(folder)


def test_load_beir_reads_numeric_ids_as_text(tmp_path: Path) -> None:
    folder = tmp_path / "beir"
    shutil.copytree(TINY, folder)
    (folder / "corpus.jsonl").write_text('{"_id": 4983, "title": null, "text": "Roof."}\n')

    assert load_beir(folder).corpus == {"4983": ("", "Roof.")}


def test_evaluate_beir_on_the_tiny_fixture(tmp_path: Path) -> None:
    # Given the fixture, where BM25 ranks q1 and q2 perfectly and q3's relevant d4 second
    data = load_beir(TINY)

    # When every method runs
    scores = evaluate_beir(data, embedder=WordEmbedder(), retrieval=TUNED, cache_dir=tmp_path)

    # Then BM25's numbers are the hand-computed ones, and every method ranks all five documents
    assert list(scores) == ["bm25", "vector", "hybrid"]
    assert scores["bm25"] == {
        "ndcg@10": pytest.approx((1 + 1 + 1 / LOG3) / 3, abs=1e-15),
        "recall@10": 1.0,
        "recall@100": 1.0,
    }
    assert all(s["recall@100"] == 1.0 for s in scores.values())


class ReversingReranker:
    """Puts the fused order upside down: a reranker whose effect is easy to predict."""

    def __init__(self) -> None:
        self.pools: list[int] = []

    def rerank(self, query: str, passages: Sequence[Passage], *, top_n: int) -> list[Passage]:
        self.pools.append(len(passages))
        return list(reversed(passages))[:top_n]

    def similarities(self, query: str, chunks: Sequence[Chunk]) -> dict[tuple[str, int], float]:
        return {}

    def search_units(self, passages: int) -> int:
        return 0


def test_evaluate_beir_reranks_the_fused_list_when_a_reranker_is_given(tmp_path: Path) -> None:
    reranker = ReversingReranker()

    scores = evaluate_beir(
        load_beir(TINY), embedder=WordEmbedder(), retrieval=TUNED, reranker=reranker
    )

    # Every method ranks all five documents; reversing q2's perfect list puts d3 last
    assert list(scores) == ["bm25", "vector", "hybrid", "hybrid+rerank"]
    assert reranker.pools == [5, 5, 5]
    assert scores["hybrid+rerank"]["ndcg@10"] < scores["hybrid"]["ndcg@10"]
    assert scores["hybrid+rerank"]["recall@100"] == 1.0


class CountingEmbedder(WordEmbedder):
    def __init__(self) -> None:
        self.embedded = 0

    def embed_documents(
        self, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
    ) -> np.ndarray:
        self.embedded += len(texts)
        return super().embed_documents(texts, on_batch=on_batch)


def test_evaluate_beir_reuses_cached_corpus_embeddings(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    data = load_beir(TINY)

    first = evaluate_beir(data, embedder=embedder, retrieval=TUNED, cache_dir=tmp_path)
    second = evaluate_beir(data, embedder=embedder, retrieval=TUNED, cache_dir=tmp_path)
    split = evaluate_beir(
        data, embedder=embedder, retrieval=TUNED, cache_dir=tmp_path, chunking=Chunking(100, 0)
    )

    assert first == second
    assert split["bm25"] == first["bm25"]  # each document fits one chunk of 100
    assert embedder.embedded == 5  # the same texts are never embedded twice
    assert len(list(tmp_path.glob("vectors-*.npy"))) == 1


def test_corpus_chunks_split_long_documents_and_keep_the_title() -> None:
    text = "Sentence number one is here. " * 10  # 290 characters
    chunks = corpus_chunks({"d": ("Title", text.strip())}, Chunking(120, 20), version="v")

    assert len(chunks) > 2
    assert {c.title for c in chunks} == {"Title"}
    assert all(len(c.text) <= 120 and c.doc_id == "d" for c in chunks)
    assert corpus_chunks({"d": ("Title", text)}, Chunking(), version="v")[0].text == text


def test_beir_slice_keeps_judged_documents_and_fixed_distractors() -> None:
    data = load_beir(TINY)

    sliced = beir_slice(data, queries=1, distractors=2)

    assert list(sliced.queries) == ["q1"]
    assert {"d1", "d2"} <= set(sliced.corpus)
    assert len(sliced.corpus) == 4
    assert beir_slice(data, queries=1, distractors=2) == sliced


def test_eval_beir_command_prints_a_table_and_writes_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "local_embedder", lambda settings: WordEmbedder())
    out = tmp_path / "scores.json"

    code = cli.main(["beir", str(TINY), "--json", str(out), "--cache", str(tmp_path)])

    assert code == 0
    written = json.loads(out.read_text())
    # The chat reranks by default (DOCCHAT_RERANKER=sentences): the evaluation shows both.
    assert list(written) == ["bm25", "vector", "hybrid", "hybrid+rerank"]
    assert all(list(m) == ["ndcg@10", "recall@10", "recall@100"] for m in written.values())
    assert written["bm25"]["ndcg@10"] == pytest.approx((2 + 1 / LOG3) / 3, abs=1e-15)
    assert "0.8770" in capsys.readouterr().out


def _titled_beir(tmp_path: Path) -> Path:
    """A BEIR folder whose one query only the relevant document's title answers."""
    corpus = [
        {"_id": "d1", "title": "Storm damage", "text": "The roof was repaired."},
        {"_id": "d2", "title": "Spring", "text": "The storm season starts in May."},
        {"_id": "d3", "title": "Bees", "text": "Bees make honey."},
    ]
    (tmp_path / "qrels").mkdir(parents=True)
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(row) for row in corpus))
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "storm damage"}))
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return tmp_path


def test_eval_beir_compares_plain_and_contextual_text_in_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "local_embedder", lambda settings: WordEmbedder())
    folder = _titled_beir(tmp_path / "beir")
    out = tmp_path / "scores.json"

    code = cli.main(
        ["beir", str(folder), "--context", "both", "--json", str(out), "--cache", str(tmp_path)]
    )

    assert code == 0
    written = json.loads(out.read_text())
    methods = ["bm25", "vector", "hybrid", "hybrid+rerank"]
    assert list(written) == [f"{m} ({c})" for c in ("plain", "contextual") for m in methods]
    # The text alone says "storm" of the wrong document; with its title the right one is first
    assert written["bm25 (plain)"]["ndcg@10"] < 0.7
    assert written["bm25 (contextual)"]["ndcg@10"] == 1.0
    assert written["hybrid (contextual)"]["ndcg@10"] == 1.0


def test_corpus_chunks_plain_drop_title_and_headings_and_no_chunk_names_a_file() -> None:
    documents = {"d": ("Title", "# Part\n\nSome text.")}

    [plain] = corpus_chunks(documents, Chunking(200, 0), version="v", context="plain")
    [contextual] = corpus_chunks(documents, Chunking(200, 0), version="v")

    assert (plain.embed_text, plain.text) == ("Some text.", "Some text.")
    assert contextual.embed_text == "Title\nPart\nSome text."
    assert plain.source == contextual.source == ""


# --- document QA -----------------------------------------------------------------------------


def _squad(tmp_path: Path) -> Path:
    contexts = [
        (
            "Alpha paper\nThe incubation period of the virus is five days. "
            "Masks reduce transmission.",
            [("What is the incubation period?", "five days", 999)],  # a wrong answer_start
        ),
        (
            "Beta paper\nVaccines were developed quickly. "
            "The vaccine efficacy was ninety\npercent.",
            [("How effective was the vaccine?", "Ninety  percent", 60)],
        ),
    ]
    data = {
        "data": [
            {
                "paragraphs": [
                    {
                        "document_id": f"doc{n}",
                        "context": context,
                        "qas": [
                            {
                                "id": f"{n}-{m}",
                                "question": q,
                                "answers": [{"text": a, "answer_start": start}],
                                "is_impossible": False,
                            }
                            for m, (q, a, start) in enumerate(questions)
                        ],
                    }
                ]
            }
            for n, (context, questions) in enumerate(contexts)
        ]
    }
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(data))
    return path


def test_load_squad_titles_documents_by_their_first_line(tmp_path: Path) -> None:
    data = load_squad(_squad(tmp_path))

    assert {d: title for d, (title, _) in data.documents.items()} == {
        "doc0": "Alpha paper",
        "doc1": "Beta paper",
    }
    assert [(q.question, q.answers, q.doc_id) for q in data.questions] == [
        ("What is the incubation period?", ("five days",), "doc0"),
        ("How effective was the vaccine?", ("Ninety  percent",), "doc1"),
    ]
    assert list(load_squad(_squad(tmp_path), limit=1).documents) == ["doc0"]


def test_load_squad_refuses_other_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"rows": []}')

    with pytest.raises(EvaluationDataError, match="SQuAD"):
        load_squad(path)


def test_first_hit_matches_case_and_whitespace_insensitively() -> None:
    texts = ["nothing here", "The efficacy was NINETY\n  percent."]

    assert first_hit(["ninety percent"], texts) == 2
    assert first_hit(["eighty percent", "nothing"], texts) == 1
    assert first_hit(["absent"], texts) is None
    assert first_hit(["   "], texts) is None


def test_hit_rates_share_of_questions_within_each_cutoff() -> None:
    assert hit_rates([1, 3, 7, None]) == {"hit@1": 0.25, "hit@5": 0.5, "hit@10": 0.75}


def test_evaluate_qa_finds_answers_through_chunked_contexts(tmp_path: Path) -> None:
    data = load_squad(_squad(tmp_path))

    scores = evaluate_qa(
        data,
        embedder=WordEmbedder(),
        chunking=Chunking(100, 20),
        retrieval=TUNED,
        cache_dir=tmp_path,
    )

    assert list(scores) == ["bm25", "vector", "hybrid"]
    assert scores["bm25"] == {"hit@1": 1.0, "hit@5": 1.0, "hit@10": 1.0}
    assert scores["hybrid"]["hit@10"] == 1.0


def test_evaluate_qa_scores_each_quoter_on_recall_fidelity_and_answers(tmp_path: Path) -> None:
    data = load_squad(_squad(tmp_path))

    def altered(question: str, chunks: Sequence[Chunk]) -> list[tuple[Chunk, int, str]]:
        return [(chunks[0], 1, chunks[0].text.upper() + " (not on the page)")]

    scores = evaluate_qa(
        data,
        embedder=WordEmbedder(),
        chunking=Chunking(100, 20),
        retrieval=TUNED,
        quoters={
            "extractive": extractive_quoter(threshold=0.0, weights=QuoteWeights.of(Settings())),
            "altered": altered,
        },
        answer_passages=5,
    )

    assert scores["extractive"]["quote fidelity"] == 1.0
    assert scores["extractive"]["answered"] == 1.0
    assert 0.0 < scores["extractive"]["answer recall"] <= 1.0
    assert scores["altered"]["quote fidelity"] == 0.0


def test_qa_split_halves_the_questions_by_document(tmp_path: Path) -> None:
    data = load_squad(_squad(tmp_path))

    tune, test = qa_split(data, "tune"), qa_split(data, "test")

    assert qa_split(data, "all") == data
    assert sorted(q.qid for q in tune.questions + test.questions) == ["0-0", "1-0"]
    assert {q.doc_id for q in tune.questions}.isdisjoint(q.doc_id for q in test.questions)
    assert tune.documents == test.documents == data.documents  # every document stays indexed


def test_verbatim_ignores_whitespace_only() -> None:
    page = "An estimated 35\u202f000 ventilators\nwere needed \uf057 in 2020."

    assert verbatim("estimated 35\u202f000 ventilators were needed \uf057 in 2020.", page)
    assert verbatim("estimated 35 000 ventilators were\tneeded \uf057 in 2020.", page)
    # Chunks keep private-use glyphs (and every other character of the page): so must quotes
    assert not verbatim("ventilators were needed in 2020.", page)
    assert not verbatim("estimated 35,000 ventilators", page)
    assert not verbatim("Estimated 35000 ventilators", page)


def test_evaluate_qa_needs_a_chunk_size(tmp_path: Path) -> None:
    with pytest.raises(EvaluationDataError, match="chunk size"):
        evaluate_qa(
            load_squad(_squad(tmp_path)),
            embedder=WordEmbedder(),
            chunking=Chunking(),
            retrieval=TUNED,
        )


# --- the tuned fusion ------------------------------------------------------------------------


def test_fuse_by_score_min_max_normalises_each_list() -> None:
    # Given cosines 0.75/0.5/0.25 and BM25 scores 12/2, on different scales
    fused = fuse_by_score(
        [[("a", 0.75), ("b", 0.5), ("c", 0.25)], [("c", 12.0), ("a", 2.0)]], weights=[0.5, 0.5]
    )

    # Then each list maps to 1..0 and a key missing from a list gets 0 there; ties keep first seen
    assert fused == [("a", 0.5), ("c", 0.5), ("b", 0.25)]


def test_fuse_by_score_weights_and_degenerate_lists() -> None:
    fused = fuse_by_score([[("a", 3.0), ("b", 1.0)], [("b", 5.0)]], weights=[0.25, 0.75])

    assert fused == [("b", 0.75), ("a", 0.25)]  # a single score normalises to 1
    assert fuse_by_score([[], [("x", 1.0), ("y", 1.0)]], weights=[0.5, 0.5]) == [
        ("x", 0.5),
        ("y", 0.5),
    ]
    with pytest.raises(ValueError, match="2 weights for 1 lists"):
        fuse_by_score([[("a", 1.0)]], weights=[0.5, 0.5])


class FixedIndex:
    """Two fixed candidate lists: what hybrid search sees from an index."""

    def __init__(self, vector: list[tuple[str, float]], keyword: list[tuple[str, float]]) -> None:
        self.vector = vector
        self.keyword = keyword

    def vector_search(
        self,
        query: np.ndarray,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        return self.vector[:k]

    def keyword_search(
        self,
        query: str,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        return self.keyword[:k]

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        return {
            c: Chunk(
                chunk_id=c,
                doc_id=c,
                version="v",
                source=c,
                title=c,
                headings=[],
                page_start=1,
                page_end=1,
                text=c,
            )
            for c in chunk_ids
        }


def test_hybrid_search_score_fusion_weighs_cosine_against_bm25() -> None:
    # Given "k" far ahead on BM25 and "v" narrowly ahead on cosine
    index = FixedIndex(
        vector=[("v", 0.80), ("k", 0.78), ("x", 0.40)],
        keyword=[("k", 20.0), ("v", 5.0), ("x", 4.0)],
    )

    # When fused by score (rank fusion would put "v" and "k" level)
    passages = hybrid_search(
        index, WordEmbedder(), "q", top_k=3, candidates=100, fusion="score", vector_weight=0.5
    )

    # Then the BM25 margin decides
    assert [p.chunk.chunk_id for p in passages] == ["k", "v", "x"]
    assert [(p.vector_rank, p.keyword_rank) for p in passages] == [(2, 1), (1, 2), (3, 3)]
    assert passages[0].score == pytest.approx(0.5 * (0.38 / 0.40) + 0.5, abs=1e-12)
    with pytest.raises(ConfigError, match="between 0 and 1"):
        hybrid_search(
            index, WordEmbedder(), "q", top_k=3, candidates=100, fusion="score", vector_weight=1.5
        )


def test_retrieval_of_settings_is_the_chat_search() -> None:
    settings = Settings(candidates=7, fusion="rank", vector_weight=0.3)

    assert Retrieval.of(settings) == Retrieval(candidates=7, fusion="rank", vector_weight=0.3)


def test_eval_search_options_default_to_the_settings() -> None:
    # Given settings that differ from the tuned ones, and only --fusion on the command line
    settings = Settings(candidates=7, vector_weight=0.3)
    args = argparse.Namespace(candidates=None, fusion="rank", vector_weight=None)

    # Then the option wins and the rest are the settings'
    assert cli._retrieval(args, settings) == Retrieval(
        candidates=7, fusion="rank", vector_weight=0.3
    )
