"""What was tried to lift retrieval past issue 14's targets without a stronger embedder, on the
tuning queries only (SciFact train, the COVID-QA `tune` half), each next to the default:

- the context (file name, title, heading path) as a BM25 field of its own, saturated apart from
  the text and added with weight `ctx` (OpenSearch's `most_fields`), instead of the default's
  BM25F (context words counted into the chunk's term frequencies: title x2, headings x3);
- BM25's k1 and b;
- vector pseudo-relevance feedback: the query vector plus beta x the mean vector of the first
  3 fused results, fused again (Rocchio).

    .venv/bin/python bench/context_tries.py [scifact|covid]

Scores every chunk exactly (numpy), then fuses each side's first 100 as `docchat` does
(`fuse_by_score`). Corpus embeddings come from the eval cache (`--cache`, as `docchat eval`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from docchat.adapters.local_embedder import LocalEmbedder
from docchat.adapters.sqlite_index import bm25
from docchat.config import Settings
from docchat.evaluate.beir import DEPTH, beir_scores, documents_in_order, load_beir
from docchat.evaluate.corpus import Chunking, cached_vectors, corpus_chunks
from docchat.evaluate.qa import first_hit, hit_rates, load_squad, qa_split
from docchat.models import Chunk
from docchat.search.hybrid import fuse_by_score
from docchat.vectors import unit_length

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
CANDIDATES = 100
Scores = NDArray[np.float64]
Judge = Callable[[Mapping[str, list[str]]], dict[str, float]]


def _postings(tokenizer: bm25.Tokenizer, fields: Sequence[bm25.Fields]) -> bm25.Postings:
    term_ids: dict[str, int] = {}
    rows, lengths = [], []
    for frequencies, length in tokenizer.analyse(fields):
        ids = [term_ids.setdefault(term, len(term_ids)) for term in frequencies]
        rows.append(
            (
                np.array(ids, dtype=np.int32).tobytes(),
                np.array(list(frequencies.values()), dtype=np.float32).tobytes(),
            )
        )
        lengths.append(length)
    return bm25.Postings.build(term_ids, rows, lengths)


def _bm25(postings: bm25.Postings, terms: Sequence[str], n: int) -> Scores:
    scores = np.zeros(n)
    for row, score in postings.search(terms, k=n):
        scores[row] = score
    return scores


def _top(scores: Scores, k: int) -> list[tuple[int, float]]:
    return [(int(i), float(scores[i])) for i in np.argsort(-scores, kind="stable")[:k]]


def _fused(vector: Scores, keyword: Scores, weight: float) -> list[int]:
    lists = [_top(vector, CANDIDATES), _top(keyword, CANDIDATES)]
    return [row for row, _ in fuse_by_score(lists, weights=[weight, 1 - weight])]


def tries(
    chunks: Sequence[Chunk], queries: Mapping[str, str], judge: Judge, *, cache: Path, weight: float
) -> list[tuple[str, dict[str, float]]]:
    embedder = LocalEmbedder()
    n, ids = len(chunks), [c.chunk_id for c in chunks]
    vectors = cached_vectors(chunks, embedder=embedder, cache_dir=cache)
    asked = {q: embedder.embed_query(text) for q, text in queries.items()}
    cosines = {q: vectors @ asked[q] for q in queries}
    tokenizer = bm25.Tokenizer()
    terms = {q: tokenizer.query_terms(text) for q, text in queries.items()}
    rows: list[tuple[str, dict[str, float]]] = []

    def add(label: str, ranked: Mapping[str, list[int]]) -> None:
        rows.append((label, judge({q: [ids[r] for r in ranking] for q, ranking in ranked.items()})))

    saved = (dict(bm25.FIELD_WEIGHTS), bm25.K1, bm25.B)
    try:
        # The default: BM25F over context and text.
        default = _postings(tokenizer, [_fields(c) for c in chunks])
        keyword = {q: _bm25(default, terms[q], n) for q in queries}
        base = {q: _fused(cosines[q], keyword[q], weight) for q in queries}
        add("default (BM25F: title x2, headings x3)", base)
        for beta in (0.3, 0.6):
            ranked = {}
            for q in queries:
                query = asked[q] + beta * vectors[base[q][:3]].mean(0)
                ranked[q] = _fused(vectors @ unit_length(query[None, :])[0], keyword[q], weight)
            add(f"default + vector feedback beta={beta}", ranked)
        # The context as a field of its own, at each k1 and b.
        for name in bm25.FIELD_WEIGHTS:
            bm25.FIELD_WEIGHTS[name] = 1.0
        for k1, b in ((1.2, 0.75), (0.9, 0.75), (1.6, 0.75), (1.2, 0.5), (1.2, 0.9)):
            bm25.K1, bm25.B = k1, b
            text = _postings(tokenizer, [("", "", "", c.text) for c in chunks])
            context = _postings(tokenizer, [(*_fields(c)[:3], "") for c in chunks])
            for share in (0.0, 0.3, 0.5):
                ranked = {
                    q: _fused(
                        cosines[q],
                        _bm25(text, terms[q], n) + share * _bm25(context, terms[q], n),
                        weight,
                    )
                    for q in queries
                }
                add(f"text + ctx x{share} as its own field, k1={k1} b={b}", ranked)
    finally:
        bm25.FIELD_WEIGHTS.update(saved[0])
        bm25.K1, bm25.B = saved[1], saved[2]
    return rows


def _fields(chunk: Chunk) -> bm25.Fields:
    return (chunk.file_label, chunk.title, " ".join(chunk.headings), chunk.text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data", choices=["scifact", "covid"])
    parser.add_argument("--cache", type=Path, default=Path(".docchat-eval"))
    args = parser.parse_args(argv)
    started = time.monotonic()
    settings = Settings()
    if args.data == "scifact":
        beir = load_beir(SHARED / "beir-scifact", split="train")
        chunks = corpus_chunks(beir.corpus, Chunking(), version="beir")
        doc_of = {c.chunk_id: c.doc_id for c in chunks}

        def judge(ranked: Mapping[str, list[str]]) -> dict[str, float]:
            rankings = {q: documents_in_order(r, doc_of)[:DEPTH] for q, r in ranked.items()}
            scores = beir_scores(rankings, beir.qrels)
            return {k: scores[k] for k in ("ndcg@10", "recall@10")}

        queries = beir.queries
        title = f"SciFact train ({len(queries)} queries)"
    else:
        qa = qa_split(load_squad(SHARED / "covid-qa" / "200423_covidQA.json"), "tune")
        chunking = Chunking(settings.chunk_size, settings.chunk_overlap)
        chunks = corpus_chunks(qa.documents, chunking, version=qa.sha256)
        text_of = {c.chunk_id: c.text for c in chunks}
        questions = {q.qid: q for q in qa.questions}

        def judge(ranked: Mapping[str, list[str]]) -> dict[str, float]:
            firsts = [
                first_hit(questions[q].answers, [text_of[c] for c in r[:10]])
                for q, r in ranked.items()
            ]
            rates = hit_rates(firsts)
            return {k: rates[k] for k in ("hit@1", "hit@5")}

        queries = {q.qid: q.question for q in qa.questions}
        title = f"COVID-QA tune ({len(queries)} questions)"
    rows = tries(chunks, queries, judge, cache=args.cache, weight=settings.vector_weight)
    print(f"{title}, vector weight {settings.vector_weight}, {time.monotonic() - started:.0f} s\n")
    keys = list(rows[0][1])
    print(f"{'try':58s} " + " ".join(f"{k:>9s}" for k in keys))
    for label, scores in rows:
        print(f"{label:58s} " + " ".join(f"{scores[k]:9.4f}" for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
