"""The `docchat` command: ingest, ask, search, status, rm."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.config import Settings
from docchat.errors import DocchatError
from docchat.eval_cli import add_eval_commands
from docchat.ingest import IngestResult, ingest_file, pdf_paths
from docchat.local import local_embedder, open_index
from docchat.models import Answer, Citation, DocStatus, Passage, source_name

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = Settings.from_env(os.environ, data_dir=args.data_dir)
        return int(args.run(args, settings))
    except DocchatError as exc:
        err.print(f"[red]error:[/red] {exc}", markup=True)
        return 2
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the index lives (default: $DOCCHAT_DATA_DIR or .docchat/)",
    )
    parser = argparse.ArgumentParser(prog="docchat", description="Chat with your PDFs.")
    commands = parser.add_subparsers(dest="command", required=True)

    ingest = commands.add_parser("ingest", parents=[common], help="index PDF files or folders")
    ingest.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    ingest.set_defaults(run=_ingest)

    ask = commands.add_parser("ask", parents=[common], help="answer a question with citations")
    ask.add_argument("question")
    ask.add_argument("--top-k", type=int, default=None, help="passages to draw on")
    ask.add_argument("--doc", action="append", help="only this document (repeatable)")
    ask.add_argument("--json", action="store_true", help="print the answer as JSON")
    ask.set_defaults(run=_ask)

    search = commands.add_parser("search", parents=[common], help="show the best passages")
    search.add_argument("query")
    search.add_argument("--top-k", type=int, default=None)
    search.add_argument("--doc", action="append", help="only this document (repeatable)")
    search.add_argument("--json", action="store_true", help="print passages as JSON")
    search.set_defaults(run=_search)

    serve = commands.add_parser("serve", parents=[common], help="run the chat API locally")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1); any other than loopback needs --token",
    )
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--token",
        default=None,
        help="bearer token every API call must send (default: $DOCCHAT_API_TOKEN)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name to answer besides localhost (repeatable; * for any; "
        "also $DOCCHAT_ALLOWED_HOSTS)",
    )
    serve.set_defaults(run=_serve)

    status = commands.add_parser("status", parents=[common], help="list documents and totals")
    status.add_argument("--json", action="store_true")
    status.set_defaults(run=_status)

    rm = commands.add_parser("rm", parents=[common], help="remove a document from the index")
    rm.add_argument("doc", metavar="DOC", help="document id, path or file name")
    rm.set_defaults(run=_rm)

    add_eval_commands(commands, common)
    return parser


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    embedder = local_embedder(settings)
    index = open_index(settings, embedder)
    missing = [p for p in args.paths if not p.exists()]
    if missing:
        raise DocchatError(f"no such file or folder: {', '.join(map(str, missing))}")
    files = list(pdf_paths(args.paths))
    if not files:
        raise DocchatError("no PDF files found in " + ", ".join(map(str, args.paths)))
    results: list[IngestResult] = []
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[stage]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=False) as progress:
        for path in files:
            task = progress.add_task(path.name[:40], total=None, stage="")

            def update(stage: str, done: int, total: int, task: TaskID = task) -> None:
                label = {"convert": "pages", "embed": "chunks"}.get(stage, stage)
                progress.update(task, completed=done, total=total, stage=label)

            result = ingest_file(
                path, index=index, embedder=embedder, settings=settings, on_progress=update
            )
            progress.update(task, stage=result.outcome)
            results.append(result)
    out.print(_summary(results))
    for r in results:
        if r.outcome == "failed":
            out.print(f"{Path(r.record.source).name}: {r.record.error}", markup=False)
    failed = sum(r.outcome == "failed" for r in results)
    out.print(
        f"{len(results) - failed} of {len(results)} documents indexed or unchanged"
        + (f"; {failed} failed (reasons above)" if failed else "")
    )
    return 1 if failed else 0


def _summary(results: list[IngestResult]) -> Table:
    table = Table(title="ingest summary")
    for name in ("document", "pages", "chunks", "seconds", "status"):
        table.add_column(
            name, justify="right" if name in ("pages", "chunks", "seconds") else "left"
        )
    for r in results:
        status = r.outcome if r.outcome != "failed" else f"FAILED ({r.record.error_code})"
        table.add_row(
            Path(r.record.source).name,
            str(r.record.pages),
            str(r.record.chunks),
            f"{r.seconds:.2f}",
            status,
        )
    return table


def _question(text: str, *, what: str) -> str:
    if not text.strip():
        raise DocchatError(f"the {what} is empty: say what to look for in the documents")
    return text


def _retrieve(args: argparse.Namespace, settings: Settings, query: str) -> list[Passage]:
    from docchat.backend import local_library

    library = local_library(settings)
    index = cast(SqliteIndex, library.index)
    doc_ids = [index.find_document(ref).doc_id for ref in args.doc] if args.doc else None
    return library.search(query, top_k=args.top_k or settings.top_k, doc_ids=doc_ids).passages


def _ask(args: argparse.Namespace, settings: Settings) -> int:
    """Stream the agent's answer: steps to stderr, text to stdout as it is written."""
    from docchat.backend import local_backend

    question = _question(args.question, what="question")
    backend = local_backend(settings)
    if args.top_k:
        backend.config.top_k = args.top_k
    index = cast(SqliteIndex, backend.library.index)
    doc_ids = [index.find_document(ref).doc_id for ref in args.doc] if args.doc else None
    events = backend.agent().run([{"role": "user", "content": question}], doc_ids=doc_ids)
    text: list[str] = []
    citations: list[Citation] = []
    for event in events:
        if event.type == "delta":
            text.append(event.data["text"])
            if not args.json:
                sys.stdout.write(event.data["text"])
                sys.stdout.flush()
        elif event.type == "tool_call" and not args.json:
            err.print(f"[dim]{event.data['name']} {json.dumps(event.data['input'])}[/dim]")
        elif event.type == "citations":
            citations = [Citation.model_validate(c) for c in event.data["citations"]]
        elif event.type == "error":
            raise DocchatError(event.data["message"])
    answer = Answer(text="".join(text), citations=citations, mode=backend.mode)
    if args.json:
        out.print_json(answer.model_dump_json())
    else:
        _print_sources(answer)
    return 0


def _print_sources(answer: Answer) -> None:
    if answer.citations:
        out.print("\n\nSources")
    for c in answer.citations:
        out.print(f"  [{c.number}] {c.title}, page {c.page} ({Path(c.source).name})", markup=False)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    """Run the chat API (the same app the Lambda runs) on this machine."""
    import uvicorn

    from docchat.api import guarded_local_app
    from docchat.backend import local_backend
    from docchat.guards import is_loopback

    token = settings.api_token if args.token is None else args.token
    local = is_loopback(args.host)
    if not local and not token:
        raise DocchatError(
            f"--host {args.host} lets other machines reach docchat and its documents: give "
            "it an API token with --token or DOCCHAT_API_TOKEN (clients send "
            "'Authorization: Bearer <token>'; the page asks for it once), or serve on "
            "127.0.0.1"
        )
    listener = _bind(args.host, args.port)  # before anything says it is serving
    with listener:
        backend = local_backend(settings)  # opened now: a bad data directory fails at start
        wildcard = args.host in ("0.0.0.0", "::", "")
        hosts = [*args.allowed_host, *([] if local or wildcard else [args.host])]
        app = guarded_local_app(settings, lambda: backend, allowed_hosts=hosts, token=token)
        where = f"[{args.host}]" if ":" in args.host else args.host
        err.print(
            f"docchat serving {settings.data_dir} on http://{where}:{args.port} "
            f"({backend.mode})" + ("" if local else "; API calls need the token"),
            soft_wrap=True,
        )
        if wildcard and not hosts and not settings.allowed_host_names:
            err.print(
                "other machines must call it by a name or address given with --allowed-host "
                "(or DOCCHAT_ALLOWED_HOSTS)",
                soft_wrap=True,
            )
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, or a DocchatError saying why not (e.g. the port is taken)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise DocchatError(f"cannot serve on {host!r}: {exc.strerror}; check --host") from exc
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
    except OSError as exc:
        listener.close()
        raise DocchatError(
            f"cannot serve on {host}:{port}: {exc.strerror or exc}; is another server using "
            "it? Stop it or choose another --port"
        ) from exc
    return listener


def _search(args: argparse.Namespace, settings: Settings) -> int:
    passages = _retrieve(args, settings, _question(args.query, what="search query"))
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
            }
            for p in passages
        ]
        sys.stdout.write(json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return 0
    for rank, p in enumerate(passages, start=1):
        pages = f"p. {p.chunk.page_start}" + (
            f"-{p.chunk.page_end}" if p.chunk.page_end != p.chunk.page_start else ""
        )
        out.print(f"{rank}. {p.chunk.title}, {pages}  score {p.score:.4f}", markup=False)
        out.print("   " + " ".join(p.chunk.text.split())[:300], markup=False)
    return 0


def _status(args: argparse.Namespace, settings: Settings) -> int:
    index = open_index(settings, local_embedder(settings))
    documents = index.documents()
    if args.json:
        payload = {
            "stats": index.stats(),
            "documents": [d.model_dump(mode="json") for d in documents],
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return 0
    table = Table(title=f"documents in {settings.data_dir}")
    for name in ("id", "title", "status", "pages", "chunks", "reason"):
        table.add_column(name)
    for d in documents:
        reason = d.error if d.status == DocStatus.FAILED else ""
        table.add_row(d.doc_id, d.title, d.status.value, str(d.pages), str(d.chunks), reason)
    out.print(table)
    stats = index.stats()
    out.print(
        f"{stats['documents']} documents, {stats['chunks']} chunks, "
        f"{stats['indexed_pages']} pages indexed; {stats['embedding_model']} "
        f"({stats['dimension']} dims)"
    )
    return 0


def _rm(args: argparse.Namespace, settings: Settings) -> int:
    index = open_index(settings, local_embedder(settings))
    record = index.find_document(args.doc)
    index.delete_document(record.doc_id)
    out.print(f"removed {record.doc_id} ({record.chunks} chunks)", markup=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
