"""BEIR retrieval evaluation: nDCG@10, recall@10 and recall@100 per search method, each query's
documents ranked by their best chunk (MaxP) in a corpus indexed by corpus.py."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.errors import EvaluationDataError
from docchat.evaluate.corpus import (
    Chunking,
    Context,
    Retrieval,
    cached_vectors,
    corpus_chunks,
    filled_index,
    ranked_chunks,
)
from docchat.evaluate.lines import json_lines, read_text
from docchat.ingest.stages import Progress
from docchat.ports import Embedder, Reranker
from docchat.search.library import RERANK_POOL

Ranking = list[str]
DEPTH = 100  # documents ranked per BEIR query: enough for recall@100
BEIR_CUTOFF = 10  # nDCG@10 and recall@10; a reranker sees RERANK_POOL times as many


# --- metrics ---------------------------------------------------------------------------------


def ndcg_at_k(ranking: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """nDCG@k with gains 2^rel - 1 and log2(rank + 1) discounts; the ideal order from the qrels."""
    gains = sorted((r for r in relevance.values() if r > 0), reverse=True)[:k]
    ideal = sum((2.0**rel - 1) / math.log2(rank + 1) for rank, rel in enumerate(gains, start=1))
    if ideal == 0:
        return 0.0
    dcg = sum(
        (2.0 ** max(relevance.get(doc, 0), 0) - 1) / math.log2(rank + 1)
        for rank, doc in enumerate(ranking[:k], start=1)
    )
    return dcg / ideal


def recall_at_k(ranking: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """The share of the relevant documents (rel > 0) found in the first k."""
    relevant = {doc for doc, rel in relevance.items() if rel > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def beir_scores(
    rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, float]:
    """Mean nDCG@10, recall@10 and recall@100 over the queries with a relevant document."""
    judged = [q for q in qrels if any(r > 0 for r in qrels[q].values())]
    if not judged:
        raise EvaluationDataError("no query has a relevant document in the qrels")
    per_query = np.array(
        [
            (
                ndcg_at_k(rankings.get(q, []), qrels[q], BEIR_CUTOFF),
                recall_at_k(rankings.get(q, []), qrels[q], BEIR_CUTOFF),
                recall_at_k(rankings.get(q, []), qrels[q], 100),
            )
            for q in judged
        ]
    )
    means = per_query.mean(axis=0)
    return {"ndcg@10": float(means[0]), "recall@10": float(means[1]), "recall@100": float(means[2])}


# --- BEIR data -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BeirData:
    """A BEIR dataset: documents (title, text), query texts, and graded judgements per query."""

    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    corpus_sha256: str


class _Line(BaseModel):
    """A line of corpus.jsonl or queries.jsonl: the fields read, the rest ignored."""

    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)

    id: str = Field(alias="_id")
    title: str | None = ""
    text: str | None = ""


_WHAT = 'a BEIR line ({"_id": …, "text": …})'


def load_beir(folder: Path, *, split: str = "test", limit: int | None = None) -> BeirData:
    """corpus.jsonl, queries.jsonl and qrels/<split>.tsv; `limit` keeps the first judged queries."""
    paths = [folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise EvaluationDataError(
            f"not a BEIR folder: {', '.join(missing)} missing "
            "(expected corpus.jsonl, queries.jsonl and qrels/<split>.tsv)"
        )
    raw = read_text(paths[0])
    corpus = {
        row.id: (row.title or "", row.text or "")
        for row in json_lines(paths[0], _Line, what=_WHAT, text=raw)
    }
    texts = {row.id: row.text or "" for row in json_lines(paths[1], _Line, what=_WHAT)}
    qrels = _qrels(paths[2])
    judged = [q for q in qrels if q in texts][:limit]
    return BeirData(
        corpus=corpus,
        queries={q: texts[q] for q in judged},
        qrels={q: qrels[q] for q in judged},
        corpus_sha256=hashlib.sha256(raw.encode("utf-8")).hexdigest(),
    )


def beir_slice(data: BeirData, *, queries: int, distractors: int) -> BeirData:
    """The first `queries` queries over their judged documents plus `distractors` others
    (a fixed pseudo-random pick), for an evaluation that runs in seconds."""
    kept = dict(list(data.queries.items())[:queries])
    judged = {doc for q in kept for doc in data.qrels[q] if doc in data.corpus}
    others = sorted(
        (d for d in data.corpus if d not in judged),
        key=lambda d: hashlib.sha256(d.encode()).hexdigest(),
    )[:distractors]
    wanted = judged | set(others)
    corpus = {d: text for d, text in data.corpus.items() if d in wanted}
    digest = hashlib.sha256(f"{data.corpus_sha256}|{sorted(wanted)}".encode()).hexdigest()
    return replace(
        data,
        corpus=corpus,
        queries=kept,
        qrels={q: data.qrels[q] for q in kept},
        corpus_sha256=digest,
    )


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fields = line.split("\t")
        if not line.strip() or (number == 1 and fields[0] == "query-id"):
            continue
        try:
            query, doc, rel = fields[0], fields[1], int(fields[2])
        except (IndexError, ValueError) as exc:
            raise EvaluationDataError(
                f"{path}:{number}: expected query-id<TAB>corpus-id<TAB>score"
            ) from exc
        qrels.setdefault(query, {})[doc] = rel
    return qrels


# --- ranking documents per method ------------------------------------------------------------


def documents_in_order(chunk_ids: Sequence[str], doc_of: Mapping[str, str]) -> Ranking:
    """Documents ranked by their best chunk (MaxP), at most DEPTH."""
    ranked: dict[str, None] = {}
    for chunk_id in chunk_ids:
        ranked.setdefault(doc_of[chunk_id], None)
        if len(ranked) == DEPTH:
            break
    return list(ranked)


def beir_rankings(
    index: SqliteIndex,
    embedder: Embedder,
    data: BeirData,
    *,
    doc_of: Mapping[str, str],
    retrieval: Retrieval,
    reranker: Reranker | None = None,
    on_progress: Progress | None = None,
) -> dict[str, dict[str, Ranking]]:
    """Per method, per query: the ranked document ids (at most DEPTH)."""
    # Split documents take several chunks each: look deep enough to rank DEPTH documents.
    chunks_per_doc = math.ceil(len(doc_of) / max(len(data.corpus), 1))
    depth = DEPTH * min(max(chunks_per_doc, 1), 5)
    rankings: dict[str, dict[str, Ranking]] = {}
    for done, (qid, text) in enumerate(data.queries.items(), start=1):
        found = ranked_chunks(
            index,
            embedder,
            text,
            depth=depth,
            retrieval=retrieval,
            reranker=reranker,
            rerank_depth=RERANK_POOL * BEIR_CUTOFF,
        )
        for method, chunk_ids in found.items():
            rankings.setdefault(method, {})[qid] = documents_in_order(chunk_ids, doc_of)
        if on_progress:
            on_progress("queries", done, len(data.queries))
    return rankings


def evaluate_beir(
    data: BeirData,
    *,
    embedder: Embedder,
    retrieval: Retrieval,
    chunking: Chunking | None = None,
    context: Context = "contextual",
    cache_dir: Path | None = None,
    reranker: Reranker | None = None,
    on_progress: Progress | None = None,
) -> dict[str, dict[str, float]]:
    """nDCG@10, recall@10 and recall@100 per method (bm25, vector, hybrid[, hybrid+rerank]),
    each document indexed with its `context` (see `corpus_chunks`)."""
    chunking = chunking or Chunking()
    chunks = corpus_chunks(data.corpus, chunking, version="beir", context=context)
    vectors = cached_vectors(
        chunks, embedder=embedder, cache_dir=cache_dir, on_progress=on_progress
    )
    with filled_index(chunks, vectors, embedder=embedder, on_progress=on_progress) as index:
        rankings = beir_rankings(
            index,
            embedder,
            data,
            doc_of={c.chunk_id: c.doc_id for c in chunks},
            retrieval=retrieval,
            reranker=reranker,
            on_progress=on_progress,
        )
    return {method: beir_scores(ranked, data.qrels) for method, ranked in rankings.items()}
