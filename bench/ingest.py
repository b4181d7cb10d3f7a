"""Ingest CPU per page three ways, taking turns in one run (issue 45), and a question's cost.

- today: chunk vectors, then every chunk's sentence vectors for the reranker, kept at ingestion
  (what `docchat ingest` did before issue 45: `rerank.sentence_vectors` over all chunks);
- deferred: chunk vectors only; the reranker embeds a passage's sentences the first time a question
  reranks it and keeps them (the ChunkStore), as it already did for chunks without them;
- late: "late chunking": each chunk's forward pass gives its vector and, pooled over each
  sentence's tokens (the tokenizer's offsets), its sentences' vectors; a chunk longer than the
  model's 256 tokens goes on in a second window (the tokenizer's overflow) for its later sentences.

CPU is this process's plus its children's (conversion runs in a child), per page of the document.
`--quality N M` also scores the reranker with today's sentence vectors and with late ones on the
first N SciFact test queries and M COVID-QA test questions (deferred embeds exactly today's
vectors, only later, so its quality is today's).

    nice -n 5 .venv/bin/python bench/ingest.py [--rounds 2] [--peak] [--quality 30 60]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from docchat.adapters.embedding import token_budget_batches
from docchat.adapters.local_embedder import MAX_BATCH_TOKENS, LocalEmbedder
from docchat.adapters.sqlite_index import SqliteIndex
from docchat.config import Settings
from docchat.ingest import local as ingest_local
from docchat.ingest.shelf import Shelf
from docchat.models import Chunk
from docchat.ports import Embedder, SentenceVectors, Vectors
from docchat.search import rerank
from docchat.search.hybrid import hybrid_search
from docchat.search.library import RERANK_POOL
from docchat.vectors import unit_length
from docchat.wiring.local import local_embedder

DATA = Path(__file__).resolve().parents[1].parent / "shared/data"
PDFS = DATA / "pdfs"
# Text PDFs of /work/shared/data/pdfs (3-18 pages: a LaTeX paper, a two-column paper, a statute).
SAMPLE = (
    "py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf",
    "pdfminer.six-samples/samples/nonfree/naacl06-shinyama.pdf",
    "pdfminer.six-samples/samples/nonfree/dmca.pdf",
)
# No 10-K is in /work/shared/data; the longest dense text there is the IRS's 50-page
# instructions for Form 1040-NR (about 6,000 characters a page, many tables).
LONG = "pdfminer.six-samples/samples/nonfree/i1040nr.pdf"
LONG_QUESTIONS = (
    "Who must file Form 1040-NR?",
    "When is the return due for a nonresident alien?",
    "What income is effectively connected with a U.S. trade or business?",
)
TARGET = 0.55
# COVID-QA papers searched beside those the sampled questions are about.
OTHER_PAPERS = 10
MODES = ("today", "deferred", "late")


def cpu_seconds() -> float:
    """CPU of this process and its reaped children (the conversion runs in a child)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


# --- late chunking -----------------------------------------------------------------------------


def late_pass(
    chunks: Sequence[Chunk], embedder: LocalEmbedder
) -> tuple[Vectors, list[SentenceVectors]]:
    """Each chunk's vector (its first window, as `embed_documents` gives it) and its scored
    sentences' vectors, mean-pooled over their tokens in the chunk's own forward pass."""
    tokenizer, session = embedder._tokenizer, embedder._session
    encodings = tokenizer.encode_batch([c.embed_text for c in chunks])
    windows = [(n, w) for n, e in enumerate(encodings) for w in (e, *e.overflowing)]
    lengths = [sum(w.attention_mask) for _, w in windows]
    hidden: list[Any] = [None] * len(windows)
    for batch in token_budget_batches(lengths, 32, MAX_BATCH_TOKENS):
        width = max(lengths[i] for i in batch)
        ids = np.array([windows[i][1].ids[:width] for i in batch], dtype=np.int64)
        mask = np.array([windows[i][1].attention_mask[:width] for i in batch], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        out = session.run(["last_hidden_state"], feeds)[0]
        for row, i in enumerate(batch):
            hidden[i] = out[row, : lengths[i]]
    chunk_vectors = np.zeros((len(chunks), embedder.dimension), dtype=np.float32)
    per_chunk: list[list[int]] = [[] for _ in chunks]
    for i, (n, _) in enumerate(windows):
        per_chunk[n].append(i)
    found = []
    for n, chunk in enumerate(chunks):
        first = per_chunk[n][0]
        chunk_vectors[n] = hidden[first].mean(axis=0)
        found.append(_pooled_sentences(chunk, [(windows[i][1], hidden[i]) for i in per_chunk[n]]))
    return unit_length(chunk_vectors), found


def _pooled_sentences(chunk: Chunk, windows: list[tuple[Any, Any]]) -> SentenceVectors:
    spans = rerank.scored_spans(chunk)
    shift = len(chunk.embed_text) - len(chunk.text)
    states = np.vstack([state for _, state in windows])
    offsets = np.array([o for e, state in windows for o in e.offsets[: len(state)]]).reshape(-1, 2)
    real = offsets[:, 1] > offsets[:, 0]  # special tokens and padding have empty offsets
    vectors = np.zeros((len(spans), states.shape[1]), dtype=np.float32)
    for k, span in enumerate(spans):
        inside = real & (offsets[:, 0] >= span.start + shift) & (offsets[:, 1] <= span.end + shift)
        if inside.any():
            vectors[k] = states[inside].mean(axis=0)
    vectors = unit_length(vectors).astype(np.float16).astype(np.float32)
    return SentenceVectors(tuple(span.start for span in spans), vectors)


@contextmanager
def late_sentences(embedder: LocalEmbedder) -> Iterator[None]:
    """The reranker's sentence vectors made by `late_pass` while inside."""
    made = rerank.sentence_vectors

    def late(chunks: Sequence[Chunk], _: Embedder, **__: object) -> list[SentenceVectors]:
        return late_pass(chunks, embedder)[1] if chunks else []

    rerank.sentence_vectors = late  # type: ignore[assignment]
    try:
        yield
    finally:
        rerank.sentence_vectors = made


# --- one ingest each way ---------------------------------------------------------------------


def ingested(
    path: Path, mode: str, embedder: LocalEmbedder, folder: Path
) -> tuple[float, int, SqliteIndex]:
    """CPU seconds and pages of one ingest of `path` the `mode` way, and the index it made."""
    settings = Settings(data_dir=folder)
    index = SqliteIndex(
        settings.index_path, embedding_model=embedder.model_id, dimension=embedder.dimension
    )
    kept: list[tuple[list[Chunk], list[SentenceVectors]]] = []
    real_embed = ingest_local.embed_chunks

    def late_embed(chunks: Sequence[Chunk], **_: object) -> Vectors:
        vectors, sentences = late_pass(chunks, embedder)
        kept.append((list(chunks), sentences))
        return vectors

    started = cpu_seconds()
    if mode == "late":
        ingest_local.embed_chunks = late_embed  # type: ignore[assignment]
    try:
        result = ingest_local.ingest_file(
            path, shelf=Shelf(index, index, index), embedder=embedder, settings=settings
        )
    finally:
        ingest_local.embed_chunks = real_embed
    chunks = index.document_chunks(result.record.doc_id)
    if mode == "today":
        kept.append((chunks, rerank.sentence_vectors(chunks, embedder)))
    for made, sentences in kept:
        index.save_sentence_vectors({c.chunk_id: s for c, s in zip(made, sentences, strict=True)})
    return cpu_seconds() - started, result.record.pages, index


def question_seconds(
    index: SqliteIndex, embedder: LocalEmbedder, question: str
) -> tuple[float, float]:
    """Wall and CPU seconds of a search and its rerank, as a chat runs them (a fresh reranker:
    nothing cached but what the index keeps)."""
    settings = Settings()
    reranker = rerank.SentenceReranker(
        embedder,
        sentence_weight=settings.sentence_weight,
        sentence_words=settings.sentence_words,
        store=index,
    )
    wall, cpu = time.perf_counter(), cpu_seconds()
    passages = hybrid_search(
        index,
        embedder,
        question,
        top_k=RERANK_POOL * settings.top_k,
        candidates=settings.candidates,
        fusion=settings.fusion,
        vector_weight=settings.vector_weight,
    )
    reranker.rerank(question, passages, top_n=settings.top_k)
    return time.perf_counter() - wall, cpu_seconds() - cpu


def ingest_table(
    embedder: LocalEmbedder, rounds: int, long_rounds: int, kept: Path
) -> list[tuple[str, int, dict[str, float]]]:
    """Per document: pages and CPU seconds per page of each way (median of the rounds), the ways
    taking turns (their order reversed each round). The long document's indexes are left in
    `kept`/<way> for the question table."""
    rows = []
    for name in (*SAMPLE, LONG):
        path = PDFS / name
        if not path.exists():
            print(f"skipped {name}: not in {PDFS}", file=sys.stderr)
            continue
        seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
        pages = 0
        for turn in range(long_rounds if name == LONG else rounds):
            for mode in MODES if turn % 2 == 0 else MODES[::-1]:
                folder = kept / mode
                shutil.rmtree(folder, ignore_errors=True)
                cpu, pages, index = ingested(path, mode, embedder, folder)
                index.close()
                seconds[mode].append(cpu)
                print(f"  {Path(name).name} {mode}: {cpu:.1f} s CPU", file=sys.stderr)
        per_page = {m: statistics.median(s) / pages for m, s in seconds.items()}
        rows.append((Path(name).name, pages, per_page))
    return rows


def print_ingest(rows: list[tuple[str, int, dict[str, float]]]) -> None:
    print("\nIngest CPU seconds per page (median of the turns; target: new <= 0.55 x today)\n")
    print("| document | pages | today | deferred | late | deferred/today | late/today | deferred |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    totals = {m: 0.0 for m in MODES}
    pages = 0
    for name, count, per_page in rows:
        for mode in MODES:
            totals[mode] += per_page[mode] * count
        pages += count
        _row(name, count, per_page)
    if rows:
        _row("all (page-weighted)", pages, {m: t / pages for m, t in totals.items()})


def _row(name: str, pages: int, per_page: dict[str, float]) -> None:
    deferred = per_page["deferred"] / per_page["today"]
    late = per_page["late"] / per_page["today"]
    verdict = "PASS" if deferred <= TARGET else "FAIL"
    print(
        f"| {name} | {pages} | {per_page['today']:.3f} | {per_page['deferred']:.3f} | "
        f"{per_page['late']:.3f} | {deferred:.2f} | {late:.2f} | {verdict} |"
    )


def question_table(embedder: LocalEmbedder, kept: Path) -> None:
    """A first question's cost on the long document ingested the deferred way (its passages'
    sentences embedded then) against the same question once they are kept, and against the
    document ingested today's way."""
    if not (kept / "deferred").exists():
        return
    print(
        f"\nA question's search + rerank on {Path(LONG).name}, wall / CPU seconds "
        "(fresh reranker)\n"
    )
    print("| question | today (kept at ingest) | deferred, first time | deferred, again |")
    print("|---|---:|---:|---:|")
    today, deferred = (
        SqliteIndex(
            Settings(data_dir=kept / way).index_path,
            embedding_model=embedder.model_id,
            dimension=embedder.dimension,
        )
        for way in ("today", "deferred")
    )
    for question in LONG_QUESTIONS:
        embedder.embed_query(question)  # the query's vector is remembered: not what differs
        cells = [
            question_seconds(today, embedder, question),
            question_seconds(deferred, embedder, question),
            question_seconds(deferred, embedder, question),
        ]
        print(f"| {question} | " + " | ".join(f"{w:.2f} / {c:.2f}" for w, c in cells) + " |")
    today.close()
    deferred.close()


# --- quality -------------------------------------------------------------------------------------


def quality_table(embedder: LocalEmbedder, scifact: int, covid: int) -> None:
    """The reranker's quality with today's sentence vectors and with late ones, on samples."""
    from docchat.answer.extractive import QuoteWeights
    from docchat.cli.evaluate import DEFAULT_CACHE
    from docchat.evaluate.beir import beir_slice, evaluate_beir, load_beir
    from docchat.evaluate.corpus import RERANKED, Chunking, Retrieval
    from docchat.evaluate.qa import evaluate_qa, extractive_quoter, load_squad, qa_split
    from docchat.wiring import reranker

    settings = Settings()
    retrieval = Retrieval.of(settings)
    cache = Path(__file__).resolve().parents[1] / DEFAULT_CACHE
    beir = beir_slice(load_beir(DATA / "beir-scifact"), queries=scifact, distractors=1000)
    squad = qa_split(load_squad(DATA / "covid-qa/200423_covidQA.json"), "test")
    questions = squad.questions[:covid]
    asked = {q.doc_id for q in questions}
    others = [d for d in squad.documents if d not in asked][:OTHER_PAPERS]
    squad = dataclasses.replace(
        squad,
        questions=questions,
        documents={d: t for d, t in squad.documents.items() if d in asked or d in others},
        sha256=hashlib.sha256(f"{squad.sha256}|{sorted(asked)}|{others}".encode()).hexdigest(),
    )
    rows: dict[str, dict[str, float]] = {}
    for way in ("today", "late"):
        with late_sentences(embedder) if way == "late" else _nothing():
            chosen = reranker(settings, embedder)
            ndcg = evaluate_beir(
                beir, embedder=embedder, retrieval=retrieval, cache_dir=cache, reranker=chosen
            )
            chosen = reranker(settings, embedder)
            qa = evaluate_qa(
                squad,
                embedder=embedder,
                chunking=Chunking(settings.chunk_size, settings.chunk_overlap),
                retrieval=retrieval,
                cache_dir=cache,
                reranker=chosen,
                quoters={
                    "extractive": extractive_quoter(
                        threshold=settings.answer_threshold,
                        weights=QuoteWeights.of(settings),
                        reranker=chosen,
                    )
                },
                answer_passages=settings.top_k,
            )
        rows[way] = {
            "SciFact nDCG@10": ndcg[RERANKED]["ndcg@10"],
            "COVID-QA hit@5": qa[RERANKED]["hit@5"],
            "COVID-QA extractive recall": qa["extractive"]["answer recall"],
            "COVID-QA quote fidelity": qa["extractive"]["quote fidelity"],
        }
    print(
        f"\nQuality on samples: {len(beir.queries)} SciFact test queries over "
        f"{len(beir.corpus)} abstracts, {len(squad.questions)} COVID-QA test questions over "
        f"{len(squad.documents)} papers (deferred embeds today's vectors, later)\n"
    )
    print("| metric | today / deferred | late |")
    print("|---|---:|---:|")
    for metric in rows["today"]:
        print(f"| {metric} | {rows['today'][metric]:.4f} | {rows['late'][metric]:.4f} |")


@contextmanager
def _nothing() -> Iterator[None]:
    yield


# --- peak memory (issue 44) ------------------------------------------------------------------

_PEAK = """
import sys
from docchat.adapters import local_embedder
from docchat.adapters.local_embedder import LocalEmbedder
texts = open(sys.argv[1]).read().split("\\x00")
if sys.argv[2] == "whole":
    local_embedder.LENGTH_SLICE = 10**9  # one encode_batch for every text, as before issue 44
embedder = LocalEmbedder()
_ = embedder._tokenizer
def hwm():
    with open("/proc/self/status") as status:
        return next(int(x.split()[1]) // 1024 for x in status if x.startswith("VmHWM"))
base = hwm()
embedder._token_lengths(texts)
print(base, hwm())
"""


def peak_table() -> None:
    """Peak RSS of learning the token lengths of every text the long document's ingestion
    embedded before issue 45 (its chunks and sentences), each way in a fresh process: in one
    tokenizer call, or LENGTH_SLICE texts a call. The model is not loaded: its arena is
    bounded by MAX_BATCH_TOKENS either way."""
    from docchat.adapters.local_embedder import LENGTH_SLICE
    from docchat.ingest.chunk import chunks_from_pages
    from docchat.ingest.stages import convert_document

    settings = Settings()
    path = PDFS / LONG
    converted = convert_document(path.read_bytes(), path.name, settings, fallback_title=path.stem)
    chunks = chunks_from_pages(
        converted.pages,
        doc_id="long",
        version="v",
        source=str(path),
        title=converted.title,
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
    )
    sentences = [
        "\n".join(p for p in (c.context, s.with_header) if p)
        for c in chunks
        for s in rerank.scored_spans(c)
    ]
    texts = [c.embed_text for c in chunks] + sentences
    print(
        f"\nPeak RSS learning the token lengths of {Path(LONG).name}'s {len(chunks)} chunks "
        f"+ {len(sentences)} sentences (embed_documents' first step)\n"
    )
    print("| lengths learnt | RSS before | peak RSS |")
    print("|---|---:|---:|")
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as file:
        file.write("\x00".join(texts))
        file.flush()
        for way in ("whole", "slices"):
            out = subprocess.run(
                [sys.executable, "-c", _PEAK, file.name, way],
                check=True,
                capture_output=True,
                text=True,
            )
            base, peak = out.stdout.split()
            label = (
                "one call for all texts (before)"
                if way == "whole"
                else f"{LENGTH_SLICE} texts a call (after)"
            )
            print(f"| {label} | {base} MiB | {peak} MiB |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="turns of each way per document")
    parser.add_argument("--long-rounds", type=int, default=1, help="turns on the long document")
    parser.add_argument("--quality", type=int, nargs=2, metavar=("SCIFACT", "COVID"))
    parser.add_argument("--peak", action="store_true", help="also the issue-44 peak RSS table")
    parser.add_argument("--no-ingest", action="store_true", help="skip the CPU and question tables")
    args = parser.parse_args(argv)
    embedder = local_embedder(Settings())
    embedder.load()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        if not args.no_ingest:
            print_ingest(ingest_table(embedder, args.rounds, args.long_rounds, Path(tmp)))
            question_table(embedder, Path(tmp))
    if args.peak:
        peak_table()
    if args.quality:
        quality_table(embedder, *args.quality)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
