"""Document QA evaluation on SQuAD-style data: how often the answer text is in the first 1, 5
and 10 passages per search method, and how the extractive answer's quotes hold up, in a
corpus indexed by corpus.py."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from docchat.answer.extractive import QuoteWeights, answer_quotes
from docchat.errors import EvaluationDataError
from docchat.evaluate.corpus import (
    RERANKED,
    Chunking,
    Context,
    Retrieval,
    cached_vectors,
    corpus_chunks,
    filled_index,
    ranked_chunks,
)
from docchat.ingest.stages import Progress
from docchat.models import Chunk
from docchat.ports import Embedder, Reranker
from docchat.search.library import RERANK_POOL

QA_CUTOFFS = (1, 5, 10)
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


def extractive_quoter(
    *, threshold: float, weights: QuoteWeights, reranker: Reranker | None = None
) -> Quoter:
    """The chat's extractive answer (`docchat.answer.extractive.answer_quotes`) as a `Quoter`,
    with the sentence similarities of `reranker` as the chat has them."""

    def quote(question: str, chunks: Sequence[Chunk]) -> list[tuple[Chunk, int, str]]:
        found = answer_quotes(
            question,
            chunks,
            threshold=threshold,
            weights=weights,
            similarity=reranker.similarities(question, chunks) if reranker and chunks else {},
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
