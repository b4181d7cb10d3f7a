"""`docchat eval beir DIR`, `docchat eval qa FILE` and `docchat eval pages FILE`: retrieval and
answer quality on public benchmarks (the measuring is docchat.evaluate's); `docchat eval
feedback` (cli/feedback.py) asks the team's own rated answers again."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from docchat.answer.extractive import QuoteWeights
from docchat.cli import common, feedback
from docchat.cli.common import Commands, Opened, require_index, top_k
from docchat.config import Settings
from docchat.errors import DocchatError
from docchat.evaluate.beir import evaluate_beir, load_beir
from docchat.evaluate.corpus import CONTEXTS, Chunking, Context, Retrieval
from docchat.evaluate.pages import (
    COUNTS,
    PageOutcome,
    evaluate_pages,
    load_pages,
    page_scores,
)
from docchat.evaluate.qa import evaluate_qa, extractive_quoter, load_squad, qa_split
from docchat.wiring import reranker
from docchat.wiring.local import local_embedder

DEFAULT_CACHE = Path(".docchat-eval")


def add_commands(subparsers: Commands, common_parser: argparse.ArgumentParser) -> None:
    """Add `eval beir`, `eval qa` and `eval pages` to the `docchat` command."""
    evaluate = subparsers.add_parser("eval", help="measure retrieval on BEIR or SQuAD-style data")
    kinds = evaluate.add_subparsers(dest="eval_command", required=True)
    search = _search_options()

    beir = kinds.add_parser(
        "beir",
        parents=[common_parser, search],
        help="nDCG@10 and recall of BM25, vectors and hybrid on a BEIR folder",
    )
    beir.add_argument(
        "folder", type=Path, metavar="DIR", help="corpus.jsonl, queries.jsonl, qrels/"
    )
    beir.add_argument("--qrels", choices=["test", "train"], default="test", help="which judgements")
    beir.add_argument("--limit", type=int, default=None, help="only the first N judged queries")
    beir.add_argument(
        "--chunk-size",
        type=int,
        default=0,
        help="split documents into chunks of this many characters (default: whole documents)",
    )
    beir.add_argument("--chunk-overlap", type=int, default=0)
    beir.set_defaults(run=run_beir)

    qa = kinds.add_parser(
        "qa",
        parents=[common_parser, search],
        help="share of SQuAD-style questions whose answer is in the top 1/5/10 passages, and "
        "extractive answer recall and quote fidelity",
    )
    qa.add_argument("file", type=Path, metavar="FILE", help="SQuAD-format JSON")
    qa.add_argument("--chunk-size", type=int, default=None, help="default: DOCCHAT_CHUNK_SIZE")
    qa.add_argument(
        "--chunk-overlap", type=int, default=None, help="default: DOCCHAT_CHUNK_OVERLAP"
    )
    qa.add_argument(
        "--limit", type=int, default=None, help="only the first N questions (and their documents)"
    )
    qa.add_argument(
        "--split",
        choices=["all", "tune", "test"],
        default="all",
        help="only the questions about the tune or the test half of the documents (tune on "
        "one, report on the other; every document stays indexed)",
    )
    qa.set_defaults(run=run_qa)

    pages = kinds.add_parser(
        "pages",
        parents=[common_parser],
        help="over the indexed documents: share of questions whose evidence page (FinanceBench's "
        "JSONL) is among the top k passages, and of figures the extractive answer quotes",
    )
    pages.add_argument("file", type=Path, metavar="FILE", help="FinanceBench-style JSONL")
    pages.add_argument("--top-k", type=top_k, default=5, help="passages searched (default: 5)")
    pages.add_argument("--limit", type=int, default=None, help="only the first N questions")
    pages.add_argument(
        "--json", type=Path, metavar="PATH", help="also write the scores and each outcome"
    )
    pages.set_defaults(run=run_pages)
    feedback.add_eval_command(kinds, common_parser)


def _search_options() -> argparse.ArgumentParser:
    """The options both kinds take: the embedding cache, the JSON file, and how to search."""
    search = argparse.ArgumentParser(add_help=False)
    search.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"where corpus embeddings are kept between runs (default: {DEFAULT_CACHE}/)",
    )
    search.add_argument("--json", type=Path, metavar="PATH", help="also write the scores here")
    search.add_argument(
        "--context",
        choices=[*CONTEXTS, "both"],
        default="contextual",
        help="index each chunk's text alone (plain), with its title and heading path as "
        "ingestion does (contextual, the default), or both in one run",
    )
    # Unset, each is the chat's own setting: DOCCHAT_<NAME>, else the tuned default.
    search.add_argument(
        "--fusion",
        choices=["rank", "score"],
        default=None,
        help=f"hybrid fusion: reciprocal rank or min-max score (default {_tuned('fusion')})",
    )
    search.add_argument(
        "--vector-weight",
        type=float,
        default=None,
        help=f"cosine share in score fusion (default {_tuned('vector_weight')})",
    )
    search.add_argument(
        "--candidates",
        type=int,
        default=None,
        help=f"k-NN and BM25 candidates before fusion (default {_tuned('candidates')})",
    )
    return search


def run_beir(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """Evaluate each search method on a BEIR folder; print a table, optionally write JSON."""
    data = load_beir(args.folder, split=args.qrels, limit=args.limit)
    started = time.monotonic()
    scores: dict[str, dict[str, float]] = {}
    with _progress() as report:
        embedder = local_embedder(settings)
        for context in _contexts(args):
            found = evaluate_beir(
                data,
                embedder=embedder,
                chunking=Chunking(args.chunk_size, args.chunk_overlap),
                context=context,
                retrieval=_retrieval(args, settings),
                cache_dir=args.cache,
                reranker=reranker(settings, embedder),
                on_progress=report,
            )
            scores |= _labelled(found, context, args)
    title = (
        f"{args.folder.name}: {len(data.queries)} {args.qrels} queries, "
        f"{len(data.corpus)} documents ({time.monotonic() - started:.0f} s)"
    )
    _show(scores, title=title, json_path=args.json)
    return 0


def run_qa(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """Evaluate answer hit rates on a SQuAD-style file; print a table, optionally write JSON."""
    data = qa_split(load_squad(args.file, limit=args.limit), args.split)
    size = args.chunk_size or settings.chunk_size
    overlap = settings.chunk_overlap if args.chunk_overlap is None else args.chunk_overlap
    started = time.monotonic()
    scores: dict[str, dict[str, float]] = {}
    with _progress() as report:
        embedder = local_embedder(settings)
        for context in _contexts(args):
            chat_reranker = reranker(settings, embedder)
            found = evaluate_qa(
                data,
                embedder=embedder,
                chunking=Chunking(size, overlap),
                context=context,
                retrieval=_retrieval(args, settings),
                cache_dir=args.cache,
                reranker=chat_reranker,
                on_progress=report,
                quoters={
                    "extractive": extractive_quoter(
                        threshold=settings.answer_threshold,
                        weights=QuoteWeights.of(settings),
                        reranker=chat_reranker,
                    )
                },
                answer_passages=settings.top_k,
            )
            scores |= _labelled(found, context, args)
    half = "" if args.split == "all" else f" about the {args.split} half of the documents"
    title = (
        f"{args.file.name}: {len(data.questions)} questions{half}, {len(data.documents)} "
        f"documents, chunks of {size} (overlap {overlap}) ({time.monotonic() - started:.0f} s)"
    )
    _show(scores, title=title, json_path=args.json)
    return 0


def run_pages(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """Evaluate page hits and quoted figures over the data directory's documents."""
    from docchat.answer.events import CitationsEvent, ErrorEvent
    from docchat.models import Citation, DocStatus, Passage, source_name
    from docchat.wiring.local import local_backend, open_local

    questions = load_pages(args.file, limit=args.limit)
    require_index(settings)
    local = open_local(settings)
    opened.closed_later(local.file)
    backend = local_backend(settings, local)
    library = backend.library
    doc_ids = {
        Path(source_name(r.source)).stem: r.doc_id
        for r in library.documents()
        if r.status == DocStatus.INDEXED
    }

    def search(question: str) -> list[Passage]:
        return library.search(question, top_k=args.top_k).passages

    def answer(question: str) -> list[Citation]:
        citations: list[Citation] = []
        for event in backend.agent().run([{"role": "user", "content": question}]):
            if isinstance(event, ErrorEvent):
                raise DocchatError(event.message)
            if isinstance(event, CitationsEvent):
                citations = event.citations
        return citations

    started = time.monotonic()
    with _progress() as report:
        outcomes = evaluate_pages(
            questions,
            doc_ids=doc_ids,
            search=search,
            answer=answer,
            page_text=lambda doc_id, first, last: "\n".join(
                page.markdown for page in library.extracted_pages(doc_id, first=first, last=last)
            ),
            on_progress=lambda done, total: report("questions", done, total),
        )
    scores = page_scores(outcomes, k=args.top_k)
    missing = sorted({o.question.document for o in outcomes if not o.indexed})
    if missing:
        common.err.print(
            f"{len(missing)} documents asked about are not indexed here, their questions left "
            f"out: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}",
            markup=False,
        )
    title = (
        f"{args.file.name}: {int(scores['questions'])} questions over {len(doc_ids)} documents, "
        f"{backend.mode} answers ({time.monotonic() - started:.0f} s)"
    )
    _show({"hybrid+rerank": scores}, title=title, json_path=None)
    if args.json:
        _write_outcomes(args.json, scores, outcomes)
    return 0


def _write_outcomes(path: Path, scores: dict[str, float], outcomes: list[PageOutcome]) -> None:
    rows = [
        {
            "id": o.question.qid,
            "document": o.question.document,
            "pages": sorted(o.question.pages),
            "indexed": o.indexed,
            "right_document": o.right_document,
            "page_hit": o.page_hit,
            "figures": sorted(o.question.figures),
            "figure_found": o.figure_found,
            "figure_quoted": o.figure_quoted,
        }
        for o in outcomes
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"scores": scores, "questions": rows}, indent=2) + "\n")
    common.err.print(f"scores written to {path}")


def _contexts(args: argparse.Namespace) -> tuple[Context, ...]:
    return CONTEXTS if args.context == "both" else (args.context,)


def _labelled(
    scores: dict[str, dict[str, float]], context: Context, args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    """Rows named by method alone, or by method and context when both are compared."""
    if args.context != "both":
        return scores
    return {f"{method} ({context})": values for method, values in scores.items()}


def _tuned(name: str) -> str:
    """How --help names a search option's default: its variable, else the tuned value."""
    return f"${'DOCCHAT_' + name.upper()}, else {Settings.model_fields[name].default}"


def _retrieval(args: argparse.Namespace, settings: Settings) -> Retrieval:
    """The settings' hybrid search, with the options given on the command line instead."""
    chosen = {
        name: getattr(args, name)
        for name in ("candidates", "fusion", "vector_weight")
        if getattr(args, name) is not None
    }
    return replace(Retrieval.of(settings), **chosen)


@contextmanager
def _progress() -> Iterator[Callable[[str, int, int], None]]:
    """A progress callback that draws one bar per stage on stderr."""
    columns = (
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=common.err, transient=False) as progress:
        tasks: dict[str, TaskID] = {}

        def report(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
            progress.update(tasks[stage], completed=done, total=total)

        yield report


def _show(scores: dict[str, dict[str, float]], *, title: str, json_path: Path | None) -> None:
    metrics = list(dict.fromkeys(m for values in scores.values() for m in values))
    table = Table(title=title)
    if len(scores) == 1:  # one method: a row per metric, which fits any terminal
        [(method, values)] = scores.items()
        table.add_column("metric")
        table.add_column(method, justify="right")
        for metric in metrics:
            table.add_row(metric, _shown_score(metric, values))
    else:
        table.add_column("method")
        for metric in metrics:
            table.add_column(metric, justify="right")
        for method, values in scores.items():
            table.add_row(method, *(_shown_score(m, values) for m in metrics))
    common.out.print(table)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
        common.err.print(f"scores written to {json_path}")


def _shown_score(metric: str, values: dict[str, float]) -> str:
    if metric not in values:
        return ""
    return f"{values[metric]:.0f}" if metric in COUNTS else f"{values[metric]:.4f}"


def main(argv: list[str] | None = None) -> int:
    """`docchat eval ARGS` without the rest of docchat's commands (`main(["beir", DIR])`)."""
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument("--data-dir", type=Path, default=None, help=argparse.SUPPRESS)
    parser = argparse.ArgumentParser(prog="docchat")
    add_commands(parser.add_subparsers(dest="command", required=True), shared)
    args = parser.parse_args(["eval", *(sys.argv[1:] if argv is None else argv)])
    try:
        with common.Opened() as opened:
            return int(
                args.run(args, Settings.from_env(os.environ, data_dir=args.data_dir), opened)
            )
    except DocchatError as exc:
        common.err.print(f"[red]error:[/red] {exc}", markup=True)
        return 2
