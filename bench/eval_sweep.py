"""The sweeps behind docchat's retrieval defaults: hybrid fusion on SciFact, chunking on COVID-QA.

Run from the repository root (the data sets live in ../shared/data; see its README):

    .venv/bin/python bench/eval_sweep.py fusion   # SciFact train qrels: fusion, weight, candidates
    .venv/bin/python bench/eval_sweep.py chunks   # COVID-QA: answer in top 1/5/10 per chunk size
    .venv/bin/python bench/eval_sweep.py rerank   # SciFact train + COVID-QA tune: sentence rerank

`fusion` tunes on the 809 train queries only; the test qrels are for `docchat eval beir`, once
the defaults are chosen. Both reuse corpus embeddings cached in .docchat-eval/ (the first
SciFact run embeds 5,183 abstracts: several minutes on 2 cores). Each prints a table; in the
fusion table the best setting on train is marked with *.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from docchat.adapters.local_embedder import LocalEmbedder
from docchat.adapters.sqlite_index import bm25
from docchat.config import Settings
from docchat.evaluate.beir import DEPTH, beir_scores, documents_in_order, load_beir
from docchat.evaluate.corpus import (
    Chunking,
    Context,
    Retrieval,
    cached_vectors,
    corpus_chunks,
    filled_index,
)
from docchat.evaluate.qa import (
    QA_CUTOFFS,
    QaSplit,
    evaluate_qa,
    first_hit,
    hit_rates,
    load_squad,
    qa_split,
)
from docchat.models import Chunk, Passage
from docchat.search.hybrid import RRF_K, fuse_by_rank, fuse_by_score, hybrid_search
from docchat.search.library import RERANK_POOL
from docchat.search.rerank import SentenceReranker

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
CACHE = Path(".docchat-eval")
POOL = 1000  # candidates fetched once per query; each setting takes its first `candidates`
WEIGHTS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7)
CANDIDATES = (50, 100, 200)
CHUNKINGS = ((500, 100), (1000, 150), (1500, 200), (2000, 200))

Hits = list[tuple[str, float]]
Fuse = Callable[[Hits, Hits], list[str]]


def fusions() -> dict[str, Fuse]:
    """Every fusion setting of the sweep, by label."""
    table: dict[str, Fuse] = {}
    for candidates in CANDIDATES:
        table[f"rank k=60, {candidates} candidates"] = _rank(candidates)
        for weight in WEIGHTS:
            label = f"score w={weight:.2f}, {candidates} candidates"
            table[label] = _score(candidates, weight)
    return table


def _rank(candidates: int, *, k: int = RRF_K) -> Fuse:
    def fuse(vector: Hits, keyword: Hits) -> list[str]:
        lists = [[c for c, _ in vector[:candidates]], [c for c, _ in keyword[:candidates]]]
        return [c for c, _ in fuse_by_rank(lists, k=k)]

    return fuse


def _score(candidates: int, weight: float) -> Fuse:
    def fuse(vector: Hits, keyword: Hits) -> list[str]:
        lists = [vector[:candidates], keyword[:candidates]]
        return [c for c, _ in fuse_by_score(lists, weights=[weight, 1 - weight])]

    return fuse


def sweep_fusion(folder: Path, *, split: str, chunking: Chunking) -> None:
    """nDCG@10 / recall of each fusion setting on `split`, from one retrieval pass."""
    started = time.monotonic()
    data = load_beir(folder, split=split)
    embedder = LocalEmbedder()
    chunks = corpus_chunks(data.corpus, chunking, version="beir")
    vectors = cached_vectors(chunks, embedder=embedder, cache_dir=CACHE, on_progress=_dots)
    doc_of = {c.chunk_id: c.doc_id for c in chunks}
    pools: dict[str, tuple[Hits, Hits]] = {}
    with filled_index(chunks, vectors, embedder=embedder) as index:
        for qid, text in data.queries.items():
            pools[qid] = (
                index.vector_search(embedder.embed_query(text), k=POOL),
                index.keyword_search(text, k=POOL),
            )
    rows: list[tuple[str, dict[str, float]]] = [
        ("bm25 only", _scores(data.qrels, pools, doc_of, lambda v, k: [c for c, _ in k])),
        ("vector only", _scores(data.qrels, pools, doc_of, lambda v, k: [c for c, _ in v])),
    ]
    rows += [(label, _scores(data.qrels, pools, doc_of, fuse)) for label, fuse in fusions().items()]
    best = max(rows[2:], key=lambda row: row[1]["ndcg@10"])[0]
    print(
        f"\nSciFact {split} ({len(data.queries)} queries, {chunking.label}), "
        f"{time.monotonic() - started:.0f} s\n"
    )
    _table(["setting", "ndcg@10", "recall@10", "recall@100"], rows, best)


TITLE_WEIGHTS = (0.0, 1.0, 2.0, 3.0)  # BM25 weight of a document's title; 0: plain text
RANK_KS = (10, 20, 40, 60)


def sweep_context(folder: Path, *, split: str, vectors: Sequence[Context], cache: Path) -> None:
    """nDCG@10 / recall on `split` for each pair of embedded text (plain or contextual) and
    BM25 title weight, under each fusion setting (score weights, candidates, RRF k)."""
    started = time.monotonic()
    data = load_beir(folder, split=split)
    vector_pools, keyword_pools = _pools(
        data.corpus, Chunking(), version="beir", queries=data.queries, vectors=vectors, cache=cache
    )
    chunks = corpus_chunks(data.corpus, Chunking(), version="beir")
    doc_of = {c.chunk_id: c.doc_id for c in chunks}

    def score(pools: dict[str, tuple[Hits, Hits]], fuse: Fuse) -> dict[str, float]:
        return _scores(data.qrels, pools, doc_of, fuse)

    rows = _context_rows(vector_pools, keyword_pools, score)
    best = max(rows, key=lambda row: row[1]["ndcg@10"] if "," in row[0] else -1)[0]
    print(f"\nSciFact {split} ({len(data.queries)} queries), {time.monotonic() - started:.0f} s\n")
    _table(["setting", "ndcg@10", "recall@10", "recall@100"], rows, best)


def sweep_qa_context(
    path: Path, *, split: QaSplit, vectors: Sequence[Context], cache: Path, chunking: Chunking
) -> None:
    """hit@1/5/10 on the `split` questions of a SQuAD file, as `sweep_context` varies them."""
    started = time.monotonic()
    data = qa_split(load_squad(path), split)
    queries = {q.qid: q.question for q in data.questions}
    vector_pools, keyword_pools = _pools(
        data.documents,
        chunking,
        version=data.sha256,
        queries=queries,
        vectors=vectors,
        cache=cache,
    )
    text_of = {
        c.chunk_id: c.text for c in corpus_chunks(data.documents, chunking, version=data.sha256)
    }

    def score(pools: dict[str, tuple[Hits, Hits]], fuse: Fuse) -> dict[str, float]:
        firsts = [
            first_hit(q.answers, [text_of[c] for c in fuse(*pools[q.qid])[: max(QA_CUTOFFS)]])
            for q in data.questions
        ]
        return hit_rates(firsts)

    rows = _context_rows(vector_pools, keyword_pools, score)
    best = max(rows, key=lambda row: row[1]["hit@5"] if "," in row[0] else -1)[0]
    print(
        f"\n{path.name} {split} ({len(data.questions)} questions, {chunking.label}), "
        f"{time.monotonic() - started:.0f} s\n"
    )
    _table(["setting", "hit@1", "hit@5", "hit@10"], rows, best)


def _pools(
    documents: dict[str, tuple[str, str]],
    chunking: Chunking,
    *,
    version: str,
    queries: dict[str, str],
    vectors: Sequence[Context],
    cache: Path,
) -> tuple[dict[str, dict[str, Hits]], dict[float, dict[str, Hits]]]:
    """Per embedded text, and per BM25 title weight: each query's POOL best chunks."""
    embedder = LocalEmbedder()
    embedded = {qid: embedder.embed_query(text) for qid, text in queries.items()}
    vector_pools: dict[str, dict[str, Hits]] = {}
    for context in vectors:
        chunks = corpus_chunks(documents, chunking, version=version, context=context)
        matrix = cached_vectors(chunks, embedder=embedder, cache_dir=cache, on_progress=_dots)
        ids = [c.chunk_id for c in chunks]
        vector_pools[context] = {}
        for qid, query in embedded.items():
            scores = matrix @ query
            top = np.argsort(-scores, kind="stable")[:POOL]
            vector_pools[context][qid] = [(ids[i], float(scores[i])) for i in top]
    keyword_pools: dict[float, dict[str, Hits]] = {}
    saved = dict(bm25.FIELD_WEIGHTS)
    try:
        for weight in TITLE_WEIGHTS:
            bm25.FIELD_WEIGHTS["title"] = weight or 1.0
            context: Context = "contextual" if weight else "plain"
            chunks = corpus_chunks(documents, chunking, version=version, context=context)
            empty = np.zeros((len(chunks), embedder.dimension), dtype=np.float32)
            with filled_index(chunks, empty, embedder=embedder) as index:
                keyword_pools[weight] = {
                    qid: index.keyword_search(text, k=POOL) for qid, text in queries.items()
                }
    finally:
        bm25.FIELD_WEIGHTS.update(saved)
    return vector_pools, keyword_pools


def _context_rows(
    vector_pools: dict[str, dict[str, Hits]],
    keyword_pools: dict[float, dict[str, Hits]],
    score: Callable[[dict[str, tuple[Hits, Hits]], Fuse], dict[str, float]],
) -> list[tuple[str, dict[str, float]]]:
    settings: dict[str, Fuse] = {f"rank k={k}, 100 candidates": _rank(100, k=k) for k in RANK_KS}
    for candidates in CANDIDATES:
        for weight in WEIGHTS:
            settings[f"score w={weight:.2f}, {candidates} candidates"] = _score(candidates, weight)
    rows: list[tuple[str, dict[str, float]]] = []
    for context, pool in vector_pools.items():
        rows.append(
            (f"vectors {context}", score(_pair(pool, pool), lambda v, k: [c for c, _ in v]))
        )
    for weight, pool in keyword_pools.items():
        rows.append(
            (f"bm25 title x{weight:g}", score(_pair(pool, pool), lambda v, k: [c for c, _ in k]))
        )
    for context, vector_pool in vector_pools.items():
        for weight, keyword_pool in keyword_pools.items():
            pools = _pair(vector_pool, keyword_pool)
            for label, fuse in settings.items():
                name = f"vectors {context}, bm25 title x{weight:g}, {label}"
                rows.append((name, score(pools, fuse)))
    return rows


def _pair(
    vector_pool: dict[str, Hits], keyword_pool: dict[str, Hits]
) -> dict[str, tuple[Hits, Hits]]:
    return {qid: (vector_pool[qid], keyword_pool[qid]) for qid in vector_pool}


def _scores(
    qrels: dict[str, dict[str, int]],
    pools: dict[str, tuple[Hits, Hits]],
    doc_of: dict[str, str],
    fuse: Fuse,
) -> dict[str, float]:
    rankings = {q: documents_in_order(fuse(*pools[q]), doc_of)[:DEPTH] for q in pools}
    return beir_scores(rankings, qrels)


def sweep_chunks(path: Path, *, chunkings: Sequence[tuple[int, int]]) -> None:
    """Answer-in-top-k rates per chunk size with the tuned hybrid search."""
    data = load_squad(path)
    embedder = LocalEmbedder()
    rows: list[tuple[str, dict[str, float]]] = []
    for size, overlap in chunkings:
        started = time.monotonic()
        chunking = Chunking(size, overlap)
        chunks = corpus_chunks(data.documents, chunking, version=data.sha256)
        scores = evaluate_qa(
            data,
            embedder=embedder,
            chunking=chunking,
            retrieval=Retrieval.of(Settings()),
            cache_dir=CACHE,
            on_progress=_dots,
        )
        mean_chars = float(np.mean([len(c.text) for c in chunks]))
        for method, values in scores.items():
            extra = {"chunks": float(len(chunks)), "mean chars": mean_chars}
            rows.append((f"{size}/{overlap} {method}", {**values, **extra}))
        print(f"  {size}/{overlap}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    print(f"\nCOVID-QA ({len(data.questions)} questions, {len(data.documents)} papers)\n")
    header = ["chunks/overlap method", "hit@1", "hit@5", "hit@10", "chunks", "mean chars"]
    _table(header, rows, best="")


SENTENCE_WEIGHTS = (0.2, 0.3, 0.45, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0)
SENTENCE_WORDS = (0.0, 0.2, 0.3, 0.5, 0.8, 1.0, 1.25, 1.5)


def sweep_rerank(scifact: Path, covid: Path, *, cache: Path) -> None:
    """SciFact train nDCG@10 and COVID-QA tune hit@5 of the sentence reranker per (weight,
    words), over the default hybrid search's passages (RERANK_POOL x 10 per query, as
    `docchat eval` reranks). Each set's gain over the fused order is measured as a share of the
    best gain on that set, and the chosen setting has the largest smaller share: neither set
    alone picks it, and adding settings moves the choice only when one beats a set's best."""
    started = time.monotonic()
    settings = Settings()
    retrieval = Retrieval.of(settings)
    embedder = LocalEmbedder()
    depth = RERANK_POOL * max(QA_CUTOFFS)

    def pools(chunks: list[Chunk], queries: dict[str, str]) -> dict[str, list[Passage]]:
        vectors = cached_vectors(chunks, embedder=embedder, cache_dir=cache, on_progress=_dots)
        with filled_index(chunks, vectors, embedder=embedder) as index:
            return {
                qid: hybrid_search(
                    index,
                    embedder,
                    text,
                    top_k=depth,
                    candidates=retrieval.candidates,
                    fusion=retrieval.fusion,
                    vector_weight=retrieval.vector_weight,
                )
                for qid, text in queries.items()
            }

    beir = load_beir(scifact, split="train")
    beir_chunks = corpus_chunks(beir.corpus, Chunking(), version="beir")
    doc_of = {c.chunk_id: c.doc_id for c in beir_chunks}
    beir_pools = pools(beir_chunks, beir.queries)
    qa = qa_split(load_squad(covid), "tune")
    chunking = Chunking(settings.chunk_size, settings.chunk_overlap)
    qa_chunks = corpus_chunks(qa.documents, chunking, version=qa.sha256)
    qa_pools = pools(qa_chunks, {q.qid: q.question for q in qa.questions})
    # One reranker per set, each keeping every chunk's sentence vectors across the grid: with
    # the chat's cache size, SciFact's pools would evict them and each setting embed them anew.
    beir_reranker = SentenceReranker(
        embedder, sentence_weight=0.0, sentence_words=0.0, cached=len(beir_chunks)
    )
    qa_reranker = SentenceReranker(
        embedder, sentence_weight=0.0, sentence_words=0.0, cached=len(qa_chunks)
    )

    def reranked(reranker: SentenceReranker, query: str, pool: list[Passage]) -> list[str]:
        # Weight 0 keeps the fused order: the first row is the baseline.
        return [p.chunk.chunk_id for p in reranker.rerank(query, pool, top_n=len(pool))]

    rows: list[tuple[str, dict[str, float]]] = []
    settings_grid = [(0.0, 0.0)] + [(w, v) for w in SENTENCE_WEIGHTS for v in SENTENCE_WORDS]
    for weight, words in settings_grid:
        for reranker in (beir_reranker, qa_reranker):
            reranker.sentence_weight, reranker.sentence_words = weight, words
        rankings = {
            qid: documents_in_order(reranked(beir_reranker, beir.queries[qid], pool), doc_of)
            for qid, pool in beir_pools.items()
        }
        firsts = [
            first_hit(
                q.answers,
                _texts(reranked(qa_reranker, q.question, qa_pools[q.qid]), qa_pools[q.qid]),
            )
            for q in qa.questions
        ]
        label = (
            "fused order (no rerank)" if not weight else f"weight {weight:.2f}, words {words:.2f}"
        )
        rows.append((label, {**beir_scores(rankings, beir.qrels), **hit_rates(firsts)}))
    for metric in ("ndcg@10", "hit@5"):
        base, top = rows[0][1][metric], max(values[metric] for _, values in rows)
        for _, values in rows:
            values[f"{metric} share"] = (values[metric] - base) / (top - base or 1.0)
    for _, values in rows:
        values["least share"] = min(values["ndcg@10 share"], values["hit@5 share"])
    best = max(rows[1:], key=lambda row: row[1]["least share"])[0]
    print(
        f"\nSciFact train ({len(beir.queries)} queries) and COVID-QA tune "
        f"({len(qa.questions)} questions), {time.monotonic() - started:.0f} s\n"
    )
    header = ["setting", "ndcg@10", "recall@10", "hit@1", "hit@5", "least share"]
    _table(header, rows, best)


def _texts(chunk_ids: list[str], pool: list[Passage]) -> list[str]:
    text_of = {p.chunk.chunk_id: p.chunk.text for p in pool}
    return [text_of[c] for c in chunk_ids][: max(QA_CUTOFFS)]


def _table(header: list[str], rows: list[tuple[str, dict[str, float]]], best: str) -> None:
    width = max(len(header[0]), *(len(label) for label, _ in rows)) + 2
    print(header[0].ljust(width) + "".join(h.rjust(11) for h in header[1:]))
    for label, values in rows:
        cells = "".join(
            (f"{values[h]:.0f}" if values[h] >= 2 else f"{values[h]:.4f}").rjust(11)
            for h in header[1:]
        )
        print(f"{label}{' *' if label == best else ''}".ljust(width) + cells)


def _dots(stage: str, done: int, total: int) -> None:
    if done == total:
        print(f"  {stage}: {total}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sweeps = parser.add_subparsers(dest="sweep", required=True)
    fusion = sweeps.add_parser("fusion", help="hybrid fusion settings on SciFact")
    fusion.add_argument("--data", type=Path, default=SHARED / "beir-scifact")
    fusion.add_argument("--qrels", choices=["train", "test"], default="train")
    fusion.add_argument("--chunk-size", type=int, default=0, help="default: whole abstracts")
    fusion.add_argument("--chunk-overlap", type=int, default=0)
    context = sweeps.add_parser(
        "context", help="plain vs contextual text, BM25 title weight and fusion on SciFact"
    )
    context.add_argument("--data", type=Path, default=SHARED / "beir-scifact")
    context.add_argument("--qrels", choices=["train", "test"], default="train")
    context.add_argument(
        "--vectors", default="contextual", help="embedded texts: contextual, plain or both"
    )
    context.add_argument("--cache", type=Path, default=CACHE)
    context.add_argument(
        "--title-weights", default="0,1,2,3", help="BM25 title weights to try (0: plain text)"
    )
    context.add_argument("--k1", type=float, default=bm25.K1, help="BM25 k1")
    context.add_argument("--b", type=float, default=bm25.B, help="BM25 b")
    qa = sweeps.add_parser(
        "qa-context", help="plain vs contextual text, BM25 title weight and fusion on COVID-QA"
    )
    qa.add_argument("--file", type=Path, default=SHARED / "covid-qa" / "200423_covidQA.json")
    qa.add_argument("--split", choices=["all", "tune", "test"], default="tune")
    qa.add_argument("--vectors", default="contextual", help="contextual, plain or both")
    qa.add_argument("--cache", type=Path, default=CACHE)
    qa.add_argument("--chunk-size", type=int, default=Settings().chunk_size)
    qa.add_argument("--chunk-overlap", type=int, default=Settings().chunk_overlap)
    rerank = sweeps.add_parser("rerank", help="sentence reranking on SciFact and COVID-QA")
    rerank.add_argument("--data", type=Path, default=SHARED / "beir-scifact")
    rerank.add_argument("--file", type=Path, default=SHARED / "covid-qa" / "200423_covidQA.json")
    rerank.add_argument("--cache", type=Path, default=CACHE)
    chunks = sweeps.add_parser("chunks", help="chunk sizes on COVID-QA")
    chunks.add_argument("--file", type=Path, default=SHARED / "covid-qa" / "200423_covidQA.json")
    args = parser.parse_args(argv)
    if args.sweep == "fusion":
        chunking = Chunking(args.chunk_size, args.chunk_overlap)
        sweep_fusion(args.data, split=args.qrels, chunking=chunking)
    elif args.sweep == "context":
        kinds: list[Context] = ["plain", "contextual"]
        chosen = [k for k in kinds if args.vectors in (k, "both")]
        global TITLE_WEIGHTS
        TITLE_WEIGHTS = tuple(float(w) for w in args.title_weights.split(","))
        bm25.K1, bm25.B = args.k1, args.b  # read when postings are built and searched
        sweep_context(args.data, split=args.qrels, vectors=chosen, cache=args.cache)
    elif args.sweep == "qa-context":
        kinds = ["plain", "contextual"]
        chosen = [k for k in kinds if args.vectors in (k, "both")]
        chunking = Chunking(args.chunk_size, args.chunk_overlap)
        sweep_qa_context(
            args.file, split=args.split, vectors=chosen, cache=args.cache, chunking=chunking
        )
    elif args.sweep == "rerank":
        sweep_rerank(args.data, args.file, cache=args.cache)
    else:
        sweep_chunks(args.file, chunkings=CHUNKINGS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
