"""`docchat ask` and `docchat search`: questions over the indexed documents."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.markup import escape

from docchat.answer.events import ChatEvent, DeltaEvent, ToolCallEvent, collected
from docchat.answer.tools import where
from docchat.cli import common
from docchat.cli.collections import add_collection_option, visible
from docchat.cli.common import Commands, Opened, question, require_index, top_k
from docchat.cli.display import shown
from docchat.config import Settings
from docchat.models import Answer, Citation, is_url, source_name
from docchat.search.library import SearchResult


def add_commands(commands: Commands, common_parser: argparse.ArgumentParser) -> None:
    """Add `docchat ask` and `docchat search`."""
    ask = commands.add_parser(
        "ask", parents=[common_parser], help="answer a question with citations"
    )
    ask.add_argument("question")
    ask.add_argument("--top-k", type=top_k, default=None, help="passages to draw on (1-50)")
    ask.add_argument("--doc", action="append", help="only this document (repeatable)")
    ask.add_argument("--json", action="store_true", help="print the answer as JSON")
    add_collection_option(ask, "answer from this collection only (repeatable)", many=True)
    ask.set_defaults(run=run_ask)

    search = commands.add_parser("search", parents=[common_parser], help="show the best passages")
    search.add_argument("query")
    search.add_argument("--top-k", type=top_k, default=None, help="passages to show (1-50)")
    search.add_argument("--doc", action="append", help="only this document (repeatable)")
    search.add_argument("--json", action="store_true", help="print passages as JSON")
    add_collection_option(search, "search this collection only (repeatable)", many=True)
    search.set_defaults(run=run_search)


def run_ask(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """Stream the agent's answer: steps to stderr, text to stdout as it is written."""
    from docchat.adapters.sqlite_usage import SqliteUsage
    from docchat.answer.conversations import LOCAL_USER
    from docchat.answer.usage import metered
    from docchat.wiring.local import local_backend, open_local

    text = question(args.question, what="question")
    require_index(settings)
    local = open_local(settings)
    index = opened.closed_later(local.file)
    backend = local_backend(settings, local)
    if args.top_k:
        backend.config.top_k = args.top_k
    scope = visible(args, local.catalog.documents())
    backend = backend if scope is None else backend.within(scope)
    doc_ids = [index.find_document(ref).doc_id for ref in args.doc] if args.doc else None
    events = backend.agent().run([{"role": "user", "content": text}], doc_ids=doc_ids)
    # What it used is kept with the server's answers', as the local user's (`docchat usage`).
    events = metered(
        events,
        lambda: opened.closed_later(SqliteUsage(settings.usage_path)),
        user=LOCAL_USER,
        model=backend.mode,
        document=local.catalog.document,
        scope=sorted(scope.collections) if scope and scope.collections else (),
    )
    told = collected(events, each=None if args.json else _shown)
    answer = Answer(text=told.text, citations=told.citations, mode=backend.mode)
    if not args.json and not answer.text.endswith("\n"):
        sys.stdout.write("\n")  # the shell's prompt starts on a line of its own
    if args.json:
        common.out.print_json(answer.model_dump_json())
    else:
        print_sources(answer)
    return 0


def _shown(event: ChatEvent) -> None:
    """The answer's text as it comes, on stdout; its searches, dimmed, on stderr."""
    match event:
        case DeltaEvent():
            sys.stdout.write(event.text)
            sys.stdout.flush()
        case ToolCallEvent():
            call = escape(f"{event.name} {json.dumps(event.input, ensure_ascii=False)}")
            common.err.print(f"[dim]{call}[/dim]")


def print_sources(answer: Answer) -> None:
    """Each cited passage once, by number, with the pages its quotes are on (a passage may
    run over a page break, and two quotes may come from one passage and page)."""
    pages: dict[int, dict[int, str]] = {}
    first: dict[int, Citation] = {}
    for c in answer.citations:
        pages.setdefault(c.number, {})[c.page] = c.label
        first.setdefault(c.number, c)
    if first:
        common.out.print("\nSources")
    for number, c in sorted(first.items()):
        found = sorted(pages[number].items())
        if any(label for _, label in found):
            where = "; ".join(shown(label) for _, label in found)
        elif len(found) == 1:
            where = f"page {found[0][0]}"
        else:
            where = f"pages {', '.join(str(page) for page, _ in found)}"
        name = shown(c.source if is_url(c.source) else Path(c.source).name)  # a page: its URL
        common.out.print(f"  [{number}] {shown(c.title)}, {where} ({name})", markup=False)


def run_search(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """The best passages for a query, as a list or as JSON."""
    found = _retrieve(args, settings, question(args.query, what="search query"), opened)
    passages = found.passages
    if found.scope_note:  # which documents were searched, on stderr: stdout stays the list
        common.err.print(found.scope_note, markup=False)
    if args.json:
        rows = [
            {
                "chunk_id": p.chunk.chunk_id,
                "doc_id": p.chunk.doc_id,
                "title": p.chunk.title,
                "source": source_name(p.chunk.source),
                "page_start": p.chunk.page_start,
                "page_end": p.chunk.page_end,
                "headings": p.chunk.headings,
                "score": p.score,
                "vector_rank": p.vector_rank,
                "keyword_rank": p.keyword_rank,
                "text": p.chunk.text,
                "note": p.chunk.note,  # model-written context (DOCCHAT_CHUNK_CONTEXT=model)
            }
            for p in passages
        ]
        sys.stdout.write(json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return 0
    for rank, p in enumerate(passages, start=1):
        pages = f"p. {p.chunk.page_start}" + (
            f"-{p.chunk.page_end}" if p.chunk.page_end != p.chunk.page_start else ""
        )
        pages = shown(where(p.chunk)) if p.chunk.page_labels else pages
        common.out.print(
            f"{rank}. {shown(p.chunk.title)}, {pages}  score {p.score:.4f}", markup=False
        )
        common.out.print("   " + " ".join(p.chunk.text.split())[:300], markup=False)
    return 0


def _retrieve(
    args: argparse.Namespace, settings: Settings, query: str, opened: Opened
) -> SearchResult:
    from docchat.wiring.local import local_library, open_local

    require_index(settings)
    local = open_local(settings)
    index = opened.closed_later(local.file)
    library = local_library(settings, local)
    scope = visible(args, local.catalog.documents())
    library = library if scope is None else library.within(scope)
    doc_ids = [index.find_document(ref).doc_id for ref in args.doc] if args.doc else None
    return library.search(query, top_k=args.top_k or settings.top_k, doc_ids=doc_ids)
