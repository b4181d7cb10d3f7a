"""Retrieval evaluation: BEIR metrics per search method, and answer hit rates on SQuAD-style QA."""

from __future__ import annotations

import hashlib
import json
import math
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.citations import answer_quotes
from docchat.config import Settings
from docchat.errors import EvaluationDataError
from docchat.ingest.chunk import chunks_from_pages
from docchat.ingest.local import Progress, embed_chunks
from docchat.models import Chunk, DocumentRecord, Page
from docchat.ports import Embedder, Reranker, Vectors
from docchat.search.hybrid import Fusion, check_weight, fused_passages
from docchat.search.library import RERANK_POOL
from docchat.search.rerank import sentence_similarities

Ranking = list[str]
DEPTH = 100  # documents ranked per BEIR query: enough for recall@100
RERANKED = "hybrid+rerank"
QA_CUTOFFS = (1, 5, 10)
BEIR_CUTOFF = 10  # nDCG@10 and recall@10; a reranker sees RERANK_POOL times as many


@dataclass(frozen=True, kw_only=True)
class Retrieval:
    """The hybrid-search settings under evaluation."""

    candidates: int
    fusion: Fusion
    vector_weight: float

    @classmethod
    def of(cls, settings: Settings) -> Retrieval:
        """The hybrid search the chat runs with `settings` (the tuned one by default)."""
        return cls(
            candidates=settings.candidates,
            fusion=settings.fusion,
            vector_weight=settings.vector_weight,
        )


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


def load_beir(folder: Path, *, split: str = "test", limit: int | None = None) -> BeirData:
    """corpus.jsonl, queries.jsonl and qrels/<split>.tsv; `limit` keeps the first judged queries."""
    paths = [folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise EvaluationDataError(
            f"not a BEIR folder: {', '.join(missing)} missing "
            "(expected corpus.jsonl, queries.jsonl and qrels/<split>.tsv)"
        )
    raw = paths[0].read_bytes()
    corpus = {
        str(row["_id"]): (str(row.get("title") or ""), str(row.get("text") or ""))
        for row in _jsonl(raw.decode("utf-8"), paths[0])
    }
    texts = {
        str(row["_id"]): str(row.get("text") or "")
        for row in _jsonl(paths[1].read_text(encoding="utf-8"), paths[1])
    }
    qrels = _qrels(paths[2])
    judged = [q for q in qrels if q in texts][:limit]
    return BeirData(
        corpus=corpus,
        queries={q: texts[q] for q in judged},
        qrels={q: qrels[q] for q in judged},
        corpus_sha256=hashlib.sha256(raw).hexdigest(),
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


def _jsonl(text: str, path: Path) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvaluationDataError(f"{path}:{number} is not JSON ({exc.msg})") from exc
        if not isinstance(row, dict) or "_id" not in row:
            raise EvaluationDataError(f"{path}:{number} has no _id field")
        yield row


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


# --- indexing a corpus -----------------------------------------------------------------------


# What BM25 reads and the embedder embeds of a chunk: its text alone, or its contextual text
# (`Chunk.embed_text`: title and heading path before the text; benchmark documents have no file).
Context = Literal["plain", "contextual"]
CONTEXTS: tuple[Context, ...] = ("plain", "contextual")


@dataclass(frozen=True)
class Chunking:
    """How corpus documents become chunks: whole (size 0), or split as ingestion splits pages."""

    size: int = 0
    overlap: int = 0

    @property
    def label(self) -> str:
        return f"chunks{self.size}-{self.overlap}" if self.size else "whole"


def corpus_chunks(
    documents: Mapping[str, tuple[str, str]],
    chunking: Chunking,
    *,
    version: str,
    context: Context = "contextual",
) -> list[Chunk]:
    """Each (title, text) document as chunks, in document order: with `context="contextual"`
    each chunk carries its document's title and heading path, with "plain" neither. A
    benchmark document is no file: its chunks have no source, so no file name."""
    chunks: list[Chunk] = []
    for doc_id, (title, text) in documents.items():
        pieces = []
        if chunking.size:
            pieces = chunks_from_pages(
                [Page(number=1, markdown=text, chars=len(text))],
                doc_id=doc_id,
                version=version,
                source="",
                title=title,
                chunk_size=chunking.size,
                chunk_overlap=chunking.overlap,
            )
        pieces = pieces or [_whole(doc_id, title, text, version)]
        if context == "plain":
            pieces = [p.model_copy(update={"title": "", "headings": []}) for p in pieces]
        chunks.extend(pieces)
    return chunks


def _whole(doc_id: str, title: str, text: str, version: str) -> Chunk:
    return Chunk(
        chunk_id=f"{doc_id}:{version[:12]}:00000",
        doc_id=doc_id,
        version=version,
        source="",
        title=title,
        headings=[],
        page_start=1,
        page_end=1,
        text=text,
    )


def cached_vectors(
    chunks: Sequence[Chunk],
    *,
    embedder: Embedder,
    cache_dir: Path | None,
    on_progress: Progress | None = None,
) -> Vectors:
    """The chunks' embeddings: from `cache_dir` when it holds these texts embedded by this
    model, else computed (and saved there)."""
    texts = [c.embed_text for c in chunks]
    cache_file = None
    if cache_dir is not None:
        digest = hashlib.sha256(embedder.model_id.encode())
        for text in texts:
            digest.update(hashlib.sha256(text.encode()).digest())
        cache_file = cache_dir / f"vectors-{digest.hexdigest()[:24]}.npy"
        if cache_file.is_file():
            cached: Vectors = np.load(cache_file)
            if cached.shape == (len(texts), embedder.dimension):
                return cached
    vectors = embed_chunks(chunks, embedder=embedder, on_progress=on_progress)
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        partial = cache_file.with_name(cache_file.name + ".partial.npy")
        np.save(partial, vectors)
        partial.replace(cache_file)
    return vectors


@contextmanager
def filled_index(
    chunks: Sequence[Chunk],
    vectors: Vectors,
    *,
    embedder: Embedder,
    on_progress: Progress | None = None,
) -> Iterator[SqliteIndex]:
    """A SQLite index in a temporary folder holding `chunks` (grouped by document)."""
    with tempfile.TemporaryDirectory(prefix="docchat-eval-") as tmp:
        index = SqliteIndex(
            Path(tmp) / "index.sqlite3",
            embedding_model=embedder.model_id,
            dimension=embedder.dimension,
        )
        try:
            _fill(index, chunks, vectors, on_progress)
            yield index
        finally:
            index.close()


def _fill(
    index: SqliteIndex, chunks: Sequence[Chunk], vectors: Vectors, on_progress: Progress | None
) -> None:
    start = 0
    for end in range(1, len(chunks) + 1):
        if end < len(chunks) and chunks[end].doc_id == chunks[start].doc_id:
            continue
        first = chunks[start]
        record = DocumentRecord(
            doc_id=first.doc_id, source=first.source, title=first.title, version=first.version
        )
        index.replace_document(record, chunks[start:end], vectors[start:end])
        start = end
        if on_progress and (end % 500 == 0 or end == len(chunks)):
            on_progress("index", end, len(chunks))


# --- BEIR: ranking documents per method ------------------------------------------------------


def documents_in_order(chunk_ids: Sequence[str], doc_of: Mapping[str, str]) -> Ranking:
    """Documents ranked by their best chunk (MaxP), at most DEPTH."""
    ranked: dict[str, None] = {}
    for chunk_id in chunk_ids:
        ranked.setdefault(doc_of[chunk_id], None)
        if len(ranked) == DEPTH:
            break
    return list(ranked)


def ranked_chunks(
    index: SqliteIndex,
    embedder: Embedder,
    query: str,
    *,
    depth: int,
    retrieval: Retrieval,
    reranker: Reranker | None = None,
    rerank_depth: int = 0,
) -> dict[str, list[str]]:
    """Per method, the chunk ids retrieved for `query`, best first.

    With a reranker, the first `rerank_depth` fused passages are reordered and the rest follow.
    """
    # Each list once, as deep as the deepest use: a shorter top-k is always its head.
    check_weight(retrieval.fusion, retrieval.vector_weight)
    deepest = max(depth, retrieval.candidates)
    vector_hits = index.vector_search(embedder.embed_query(query), k=deepest)
    keyword_hits = index.keyword_search(query, k=deepest)
    fused = (
        fused_passages(
            index,
            vector_hits[: retrieval.candidates],
            keyword_hits[: retrieval.candidates],
            top_k=max(depth, rerank_depth),
            fusion=retrieval.fusion,
            vector_weight=retrieval.vector_weight,
        )
        if query.strip()  # as hybrid_search: a blank query finds nothing
        else []
    )
    found = {
        "bm25": [c for c, _ in keyword_hits[:depth]],
        "vector": [c for c, _ in vector_hits[:depth]],
        "hybrid": [p.chunk.chunk_id for p in fused[:depth]],
    }
    if reranker and rerank_depth:
        head = reranker.rerank(query, fused[:rerank_depth], top_n=rerank_depth)
        ids = [p.chunk.chunk_id for p in head]
        reranked = set(ids)
        rest = [p.chunk.chunk_id for p in fused if p.chunk.chunk_id not in reranked]
        found[RERANKED] = [*ids, *rest][:depth]
    return found


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


# --- document QA -----------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class QaQuestion:
    qid: str
    question: str
    answers: tuple[str, ...]
    doc_id: str


@dataclass(frozen=True)
class QaData:
    """SQuAD-style data: each context is one document, titled by its first line."""

    documents: dict[str, tuple[str, str]]
    questions: list[QaQuestion]
    sha256: str


def load_squad(path: Path, *, limit: int | None = None) -> QaData:
    """The contexts and answerable questions of a SQuAD file; `limit` keeps the first questions
    and only the documents they ask about."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise EvaluationDataError(
            f"cannot read {path} ({exc.strerror or exc}): check the path"
        ) from exc
    try:
        documents, questions = _squad(json.loads(raw)["data"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EvaluationDataError(
            f"cannot read {path} as SQuAD JSON ({exc!r}): expected "
            '{"data": [{"paragraphs": [{"context": …, "qas": [{"question": …, "answers": …}]}]}]}'
        ) from exc
    if limit is not None:
        questions = questions[:limit]
        asked = {q.doc_id for q in questions}
        documents = {d: documents[d] for d in documents if d in asked}
    if not questions:
        raise EvaluationDataError(f"{path} has no answerable questions")
    digest = hashlib.sha256(raw + f"|{limit}".encode()).hexdigest()
    return QaData(documents, questions, digest)


def _squad(articles: list[dict[str, Any]]) -> tuple[dict[str, tuple[str, str]], list[QaQuestion]]:
    documents: dict[str, tuple[str, str]] = {}
    questions: list[QaQuestion] = []
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(article["paragraphs"]):
            context = str(paragraph["context"])
            doc_id = str(paragraph.get("document_id", f"{a}-{p}"))
            title = str(article.get("title") or context.strip().split("\n", 1)[0][:200])
            documents[doc_id] = (title, context)
            questions.extend(
                QaQuestion(
                    qid=str(qa["id"]),
                    question=str(qa["question"]),
                    answers=tuple(str(answer["text"]) for answer in qa["answers"]),
                    doc_id=doc_id,
                )
                for qa in paragraph.get("qas", [])
                if qa.get("answers") and not qa.get("is_impossible")
            )
    return documents, questions


QaSplit = Literal["all", "tune", "test"]


def qa_split(data: QaData, half: QaSplit) -> QaData:
    """The questions about the `tune` or the `test` half of the documents (a fixed hash order
    of document ids, so no document is in both halves), or all of them. Every document stays
    indexed: the task is as hard in each half, and cached corpus embeddings serve every split."""
    if half == "all":
        return data
    order = sorted(data.documents, key=lambda d: hashlib.sha256(d.encode()).hexdigest())
    tune = set(order[: len(order) // 2])
    kept = [q for q in data.questions if (q.doc_id in tune) == (half == "tune")]
    return replace(data, questions=kept)


def normalised(text: str) -> str:
    """Casefolded, each run of whitespace one space: how answers are matched to passages."""
    return _SPACE.sub(" ", text).strip().casefold()


def first_hit(answers: Sequence[str], texts: Sequence[str]) -> int | None:
    """The 1-based rank of the first text that contains one of the answers, or None."""
    wanted = [a for a in map(normalised, answers) if a]
    for rank, text in enumerate(texts, start=1):
        flat = normalised(text)
        if any(a in flat for a in wanted):
            return rank
    return None


def hit_rates(first_hits: Sequence[int | None]) -> dict[str, float]:
    """The share of questions answered within the first 1, 5 and 10 passages."""
    if not first_hits:
        raise EvaluationDataError("no questions to score")
    return {
        f"hit@{k}": sum(1 for rank in first_hits if rank is not None and rank <= k)
        / len(first_hits)
        for k in QA_CUTOFFS
    }


# A way to answer without a model: (chunk, page, quote) per quote, for a question and the
# retrieved chunks, best first.
Quoter = Callable[[str, Sequence[Chunk]], Sequence[tuple[Chunk, int, str]]]


def extractive_quoter(*, threshold: float, reranker: Reranker | None = None) -> Quoter:
    """The chat's extractive answer (`docchat.answer.citations.answer_quotes`) as a `Quoter`, with
    the sentence similarities of `reranker` as the chat has them."""

    def quote(question: str, chunks: Sequence[Chunk]) -> list[tuple[Chunk, int, str]]:
        found = answer_quotes(
            question,
            chunks,
            threshold=threshold,
            similarity=sentence_similarities(reranker, question, chunks),
        )
        return [(q.chunk, q.page, q.text) for q in found]

    return quote


def verbatim(quote: str, page_text: str) -> bool:
    """Whether `quote` stands in `page_text` character for character, whitespace aside (a
    quote may join the lines of a page); a private-use glyph or a zero-width space must be
    there too, since chunks keep them."""
    return _visible(quote) in _visible(page_text)


def _visible(text: str) -> str:
    return "".join(c for c in text if not c.isspace())


@dataclass
class _AnswerTally:
    """Per quoter: questions answered, answers holding the gold text, quotes checked, faithful."""

    answered: int = 0
    recalled: int = 0
    quotes: int = 0
    faithful: int = 0

    def scores(self, questions: int) -> dict[str, float]:
        return {
            "answer recall": self.recalled / questions,
            "quote fidelity": self.faithful / self.quotes if self.quotes else 1.0,
            "answered": self.answered / questions,
        }


def evaluate_qa(
    data: QaData,
    *,
    embedder: Embedder,
    chunking: Chunking,
    retrieval: Retrieval,
    context: Context = "contextual",
    cache_dir: Path | None = None,
    reranker: Reranker | None = None,
    on_progress: Progress | None = None,
    quoters: Mapping[str, Quoter] | None = None,
    answer_passages: int = 0,
) -> dict[str, dict[str, float]]:
    """Per method, the share of questions whose answer text is in the top 1 / 5 / 10 passages.

    Each of `quoters` also answers from the first `answer_passages` hybrid passages (the chat's
    `top_k`): its row has the share of questions whose answer text is inside its quotes
    (answer recall), of quotes found verbatim on the page they cite (quote fidelity), and of
    questions it answered at all. Chunks are indexed with their `context` (see
    `corpus_chunks`).
    """
    if not chunking.size:
        raise EvaluationDataError("document QA needs a chunk size: contexts are whole papers")
    if quoters and answer_passages <= 0:
        raise EvaluationDataError(f"answers need passages to quote (got {answer_passages})")
    chunks = corpus_chunks(data.documents, chunking, version=data.sha256, context=context)
    vectors = cached_vectors(
        chunks, embedder=embedder, cache_dir=cache_dir, on_progress=on_progress
    )
    chunk_of = {c.chunk_id: c for c in chunks}
    hits: dict[str, list[int | None]] = {}
    tallies = {name: _AnswerTally() for name in quoters or {}}
    with filled_index(chunks, vectors, embedder=embedder, on_progress=on_progress) as index:
        for done, q in enumerate(data.questions, start=1):
            found = ranked_chunks(
                index,
                embedder,
                q.question,
                depth=max(QA_CUTOFFS),
                retrieval=retrieval,
                reranker=reranker,
                rerank_depth=RERANK_POOL * max(QA_CUTOFFS),
            )
            for method, chunk_ids in found.items():
                texts = [chunk_of[c].text for c in chunk_ids]
                hits.setdefault(method, []).append(first_hit(q.answers, texts))
            # The chat answers from the reranked passages when it reranks.
            answered = found.get(RERANKED, found["hybrid"])
            passages = [chunk_of[c] for c in answered[:answer_passages]]
            for name, quoter in (quoters or {}).items():
                _tally(tallies[name], q, quoter(q.question, passages), data.documents)
            if on_progress:
                on_progress("questions", done, len(data.questions))
    scores = {method: hit_rates(ranks) for method, ranks in hits.items()}
    for name, tally in tallies.items():
        scores[name] = tally.scores(len(data.questions))
    return scores


def _tally(
    tally: _AnswerTally,
    question: QaQuestion,
    quotes: Sequence[tuple[Chunk, int, str]],
    documents: Mapping[str, tuple[str, str]],
) -> None:
    tally.answered += bool(quotes)
    tally.recalled += first_hit(question.answers, [text for _, _, text in quotes]) is not None
    for chunk, page, text in quotes:
        tally.quotes += 1
        # A SQuAD context is one document of one page.
        tally.faithful += page == 1 and verbatim(text, documents[chunk.doc_id][1])
