"""Extractive answers on COVID-QA: main's quotes against this tree's, and the "nothing matches"
threshold.

Run from the repository root (the data sets live in ../shared/data; see its README):

    .venv/bin/python bench/extractive_answers.py compare [--split test] [--limit N]
    .venv/bin/python bench/extractive_answers.py threshold
    .venv/bin/python bench/extractive_answers.py similarity

`compare` answers every question twice from the same hybrid passages (the chat's top_k): with
the extractive answer of main at d21c21e (its citations.py read from git, its agent's loop
copied below) and with this tree's `answer_quotes`, and prints hit@k, answer recall (the gold
answer inside the quotes), quote fidelity (each quote verbatim on its page) and the share of
questions answered at all.

`threshold` calibrates `Settings.answer_threshold`: the questions of the `tune` half of the
COVID-QA documents are positives (asked over the COVID-QA corpus, where each has an answer);
the same questions asked over the demo PDFs (US tax instructions, the DMCA) are negatives. It
picks the highest threshold that still answers ANSWERED of the positives (a false "nothing
matches" hides an answer the documents hold, which is what issue 14 reports; a false answer is
still marked as quotes, not as a claim), then reports both shares on the `test` half.

`similarity` chooses `Settings.quote_similarity_weight` on the `tune` half: the chat's reranked
passages, quoted with each sentence's cosine (from the sentence reranker) weighted 0 to 3; the
best answer recall wins, and the test half is left for `docchat eval qa --split test`.

The split is by document (a fixed hash order of document ids), so no paper is in both halves.
Corpus embeddings are cached in --cache (default .docchat-eval/).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from docchat.adapters.local_embedder import LocalEmbedder
from docchat.answer.extractive import QuoteWeights, answer_quotes, question_coverage
from docchat.config import Settings
from docchat.evaluate.corpus import (
    Chunking,
    Retrieval,
    cached_vectors,
    corpus_chunks,
    filled_index,
    ranked_chunks,
)
from docchat.evaluate.qa import Quoter, evaluate_qa, extractive_quoter, load_squad, qa_split
from docchat.ingest.chunk import chunks_from_pages
from docchat.ingest.convert.pdf import pages_from_pdf
from docchat.models import Chunk
from docchat.search.rerank import SentenceReranker
from docchat.wiring import reranker

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
COVID = SHARED / "covid-qa" / "200423_covidQA.json"
DEMO = REPO / "examples" / "pdfs"
MAIN = "d21c21e"
THRESHOLDS = [round(0.05 * i, 2) for i in range(0, 17)]
SIMILARITY_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
ANSWERED = 0.99


def main_quoter() -> Quoter:
    """main's extractive answer: per passage in order, its best sentence, at most 4."""
    source = subprocess.run(
        ["git", "show", f"{MAIN}:layers/docchat/docchat/citations.py"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    old = types.ModuleType("citations_main")
    exec(compile(source, "citations_main.py", "exec"), old.__dict__)

    def quote(question: str, chunks: Sequence[Chunk]) -> list[tuple[Chunk, int, str]]:
        wanted = old.terms(question)
        quotes = []
        for chunk in chunks:
            found = old.best_quote(chunk, wanted)
            if found is not None:
                quotes.append((chunk, *found))
            if len(quotes) == 4:
                break
        return quotes

    return quote


def compare(args: argparse.Namespace, settings: Settings) -> None:
    data = qa_split(load_squad(COVID), args.split)
    data = replace(data, questions=data.questions[: args.limit])
    scores = evaluate_qa(
        data,
        embedder=LocalEmbedder(),
        chunking=Chunking(settings.chunk_size, settings.chunk_overlap),
        retrieval=Retrieval.of(settings),
        cache_dir=args.cache,
        quoters={
            f"extractive, main {MAIN}": main_quoter(),
            "extractive, this tree": extractive_quoter(
                threshold=settings.answer_threshold, weights=QuoteWeights.of(settings)
            ),
        },
        answer_passages=settings.top_k,
    )
    print(f"COVID-QA {args.split}: {len(data.questions)} questions, top_k {settings.top_k}")
    metrics = list(dict.fromkeys(m for v in scores.values() for m in v))
    print(" | ".join(["method", *metrics]))
    for method, values in scores.items():
        print(" | ".join([method, *(f"{values[m]:.4f}" if m in values else "" for m in metrics)]))


def coverages(
    chunks: list[Chunk], questions: Sequence[str], settings: Settings, cache: Path
) -> list[float]:
    """Per question, `question_coverage` of its top_k hybrid passages in `chunks`."""
    embedder = LocalEmbedder()
    vectors = cached_vectors(chunks, embedder=embedder, cache_dir=cache)
    chunk_of = {c.chunk_id: c for c in chunks}
    found: list[float] = []
    with filled_index(chunks, vectors, embedder=embedder) as index:
        for question in questions:
            ranked = ranked_chunks(
                index,
                embedder,
                question,
                depth=settings.top_k,
                retrieval=Retrieval.of(settings),
            )["hybrid"]
            found.append(question_coverage(question, [chunk_of[c] for c in ranked]))
    return found


def demo_chunks(settings: Settings) -> list[Chunk]:
    chunks: list[Chunk] = []
    for pdf in sorted(DEMO.glob("*.pdf")):
        converted = pages_from_pdf(pdf.read_bytes(), fallback_title=pdf.stem)
        chunks.extend(
            chunks_from_pages(
                converted.pages,
                doc_id=pdf.stem,
                version="demo",
                source=pdf.name,
                title=converted.title,
                chunk_size=settings.chunk_size,
                chunk_overlap=settings.chunk_overlap,
            )
        )
    return chunks


def threshold(args: argparse.Namespace, settings: Settings) -> None:
    data = load_squad(COVID)
    covid = corpus_chunks(
        data.documents, Chunking(settings.chunk_size, settings.chunk_overlap), version=data.sha256
    )
    demo = demo_chunks(settings)
    halves: dict[str, Any] = {}
    for half in ("tune", "test"):
        questions = [q.question for q in qa_split(data, half).questions]
        halves[half] = (
            np.array(coverages(covid, questions, settings, args.cache)),
            np.array(coverages(demo, questions, settings, args.cache)),
        )

    def shares(half: str, t: float) -> tuple[float, float]:
        positive, negative = halves[half]
        return float((positive >= t).mean()), float((negative < t).mean())

    print("threshold | tune: answered (COVID-QA) | tune: refused (demo PDFs)")
    best = max(t for t in THRESHOLDS if shares("tune", t)[0] >= ANSWERED)
    for t in THRESHOLDS:
        answered, refused = shares("tune", t)
        mark = " *" if t == best else ""
        print(f"{t:.2f}{mark} | {answered:.4f} | {refused:.4f}")
    answered, refused = shares("test", best)
    print(f"test half at {best:.2f}: answered {answered:.4f}, refused {refused:.4f}")


def similarity(args: argparse.Namespace, settings: Settings) -> None:
    data = qa_split(load_squad(COVID), "tune")
    data = replace(data, questions=data.questions[: args.limit])
    embedder = LocalEmbedder()
    chat_reranker = reranker(settings, embedder)
    if not isinstance(chat_reranker, SentenceReranker):
        raise SystemExit("similarity needs DOCCHAT_RERANKER=sentences (the local default)")
    sentences = chat_reranker  # narrowed for the closure below

    def weighted(weight: float) -> Quoter:
        def quote(question: str, chunks: Sequence[Chunk]) -> list[tuple[Chunk, int, str]]:
            found = answer_quotes(
                question,
                chunks,
                threshold=settings.answer_threshold,
                weights=replace(QuoteWeights.of(settings), quote_similarity_weight=weight),
                similarity=sentences.similarities(question, chunks),
            )
            return [(q.chunk, q.page, q.text) for q in found]

        return quote

    scores = evaluate_qa(
        data,
        embedder=embedder,
        chunking=Chunking(settings.chunk_size, settings.chunk_overlap),
        retrieval=Retrieval.of(settings),
        cache_dir=args.cache,
        reranker=chat_reranker,
        quoters={f"{w:.2f}": weighted(w) for w in SIMILARITY_WEIGHTS},
        answer_passages=settings.top_k,
    )
    best = max(SIMILARITY_WEIGHTS, key=lambda w: scores[f"{w:.2f}"]["answer recall"])
    print(f"COVID-QA tune: {len(data.questions)} questions, reranked top_k {settings.top_k}")
    print("similarity weight | answer recall | quote fidelity | answered")
    for w in SIMILARITY_WEIGHTS:
        values = scores[f"{w:.2f}"]
        mark = " *" if w == best else ""
        print(
            f"{w:.2f}{mark} | {values['answer recall']:.4f} | {values['quote fidelity']:.4f}"
            f" | {values['answered']:.4f}"
        )


COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], None]] = {
    "compare": compare,
    "threshold": threshold,
    "similarity": similarity,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("command", choices=list(COMMANDS))
    parser.add_argument("--split", choices=["all", "tune", "test"], default="all")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--cache", type=Path, default=Path(".docchat-eval"))
    args = parser.parse_args(argv)
    if not COVID.is_file():
        print(f"COVID-QA not available: {COVID} is absent", file=sys.stderr)
        return 2
    COMMANDS[args.command](args, Settings())
    return 0


if __name__ == "__main__":
    sys.exit(main())
