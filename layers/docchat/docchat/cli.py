"""The `docchat` command: ingest, ask, search, status, rm, text, serve, mcp, eval,
collections, move."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.events import CitationsEvent, DeltaEvent, ErrorEvent, ToolCallEvent
from docchat.cli_collections import (
    add_collection_commands,
    add_collection_option,
    check_in,
    totals_within,
    visible,
    within,
)
from docchat.cli_display import print_status, shown
from docchat.config import Settings
from docchat.errors import DocchatError, IndexMissingError, StorageError, StorageFullError
from docchat.evaluate.cli import add_eval_commands
from docchat.ingest.local import IngestResult, ingest_file, pdf_paths, source_of
from docchat.ingest.pagetext import extracted_pages
from docchat.models import (
    Answer,
    Citation,
    DocStatus,
    DocumentRecord,
    Passage,
    file_name,
    source_name,
)
from docchat.wiring import chunk_notes
from docchat.wiring.local import local_embedder, open_index

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)


#: The indexes a command opened, closed when it ends (not when the garbage collector gets to
#: them: a caller that runs commands in one process, as the tests do, may copy the data
#: directory next, and a late close checkpoints and deletes the WAL file under it).
_opened: list[SqliteIndex] = []


def _closed_later(index: SqliteIndex) -> SqliteIndex:
    _opened.append(index)
    return index


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = Settings.from_env(os.environ, data_dir=args.data_dir)
        return int(args.run(args, settings))
    except DocchatError as exc:
        err.print(f"[red]error:[/red] {escape(shown(str(exc)))}", markup=True)
        return 2
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    finally:
        while _opened:
            _opened.pop().close()


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
    add_collection_option(ingest, "put the documents in this collection", many=False)
    ingest.set_defaults(run=_ingest)

    ask = commands.add_parser("ask", parents=[common], help="answer a question with citations")
    ask.add_argument("question")
    ask.add_argument("--top-k", type=_top_k, default=None, help="passages to draw on (1-50)")
    ask.add_argument("--doc", action="append", help="only this document (repeatable)")
    ask.add_argument("--json", action="store_true", help="print the answer as JSON")
    add_collection_option(ask, "answer from this collection only (repeatable)", many=True)
    ask.set_defaults(run=_ask)

    search = commands.add_parser("search", parents=[common], help="show the best passages")
    search.add_argument("query")
    search.add_argument("--top-k", type=_top_k, default=None, help="passages to show (1-50)")
    search.add_argument("--doc", action="append", help="only this document (repeatable)")
    search.add_argument("--json", action="store_true", help="print passages as JSON")
    add_collection_option(search, "search this collection only (repeatable)", many=True)
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
    serve.add_argument(
        "--users",
        type=Path,
        default=None,
        metavar="FILE",
        help="a JSON users file: each user's token (SHA-256) and the collections they may "
        "read and write; every call then needs one of its tokens",
    )
    serve.set_defaults(run=_serve)

    mcp = commands.add_parser(
        "mcp",
        parents=[common],
        help="serve the documents to other agents over MCP on stdin/stdout",
        description="The Model Context Protocol server (search, read_pages, list_documents, "
        "ask, and the pages as resources) on stdin/stdout, for an MCP client to start. "
        "Nothing but the protocol is written to stdout; logs go to stderr.",
    )
    mcp.set_defaults(run=_mcp)

    status = commands.add_parser("status", parents=[common], help="list documents and totals")
    status.add_argument("--json", action="store_true")
    add_collection_option(status, "only this collection's documents", many=False)
    status.set_defaults(run=_status)

    rm = commands.add_parser("rm", parents=[common], help="remove a document from the index")
    rm.add_argument("doc", metavar="DOC", help="document id, path or file name")
    add_collection_option(rm, "only a document of this collection", many=False)
    rm.set_defaults(run=_rm)

    text = commands.add_parser(
        "text", parents=[common], help="show the text extracted from a document's pages"
    )
    text.add_argument("doc", metavar="DOC", help="document id, path or file name")
    text.add_argument(
        "--pages", type=_page_range, default=(None, None), metavar="A-B", help="e.g. 3, 3-5, 3-"
    )
    text.add_argument("--json", action="store_true", help="a JSON list of {page, text, ocr}")
    add_collection_option(text, "only a document of this collection", many=False)
    text.set_defaults(run=_text)

    add_eval_commands(commands, common)
    add_collection_commands(commands, common)
    return parser


MAX_TOP_K = 50


def _top_k(value: str) -> int:
    """--top-k: a whole number of passages from 1 to MAX_TOP_K."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if not 1 <= number <= MAX_TOP_K:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a number of passages: give a whole number from 1 to {MAX_TOP_K}"
        )
    return number


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _name(path: Path | str) -> str:
    """A file's name as it can be stored and printed, whatever bytes the name has."""
    return Path(source_of(Path(path))).name if isinstance(path, Path) else Path(path).name


def _shown(path: Path | str) -> str:
    """A file's name as the terminal shows it (no control acts on the terminal or the text)."""
    return shown(_name(path))


def _require_index(settings: Settings) -> None:
    """Reading never creates a data directory: the index must be there already."""
    if not settings.index_path.exists():
        raise IndexMissingError(
            f"there is no docchat index in {settings.data_dir}: check --data-dir (or "
            "DOCCHAT_DATA_DIR), or add documents first with `docchat ingest`"
        )


def _page_range(value: str) -> tuple[int | None, int | None]:
    """--pages: "3", "3-5", "3-" or "-5" (first page, last page; None for open ends)."""
    match = re.fullmatch(r"\s*(\d*)\s*(-?)\s*(\d*)\s*", value)
    if match is None or not (match.group(1) or match.group(3)):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a page range: give a page (3) or a range (3-5, 3-, -5)"
        )
    first = int(match.group(1)) if match.group(1) else None
    last = int(match.group(3)) if match.group(3) else None
    if not match.group(2):
        last = first
    return first, last


def _text(args: argparse.Namespace, settings: Settings) -> int:
    """The text conversion extracted from a document's pages, as markdown or JSON."""
    index = _existing_index(settings)
    record = index.find_document(args.doc, path=source_of(Path(args.doc)))
    check_in(record, args, args.doc)
    first, last = args.pages
    pages = extracted_pages(record, index, doc_ref=args.doc, first=first, last=last)
    if args.json:
        rows = [{"page": p.number, "text": p.markdown, "ocr": p.ocr} for p in pages]
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return 0
    name = shown(file_name(record.source))
    for page in pages:
        read = ", read by OCR" if page.ocr else ""
        heading = f"--- {shown(record.title)} ({name}), page {page.number}{read} ---"
        out.print(heading, markup=False)
        out.print(page.markdown, markup=False)
    return 0


def _existing_index(settings: Settings) -> SqliteIndex:
    """The data directory's index, which must exist."""
    _require_index(settings)
    return _closed_later(open_index(settings, local_embedder(settings)))


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    missing = [p for p in args.paths if not p.exists()]
    if missing:
        raise DocchatError(f"no such file or folder: {', '.join(map(str, missing))}")
    files = list(pdf_paths(args.paths))
    if not files:
        raise DocchatError("no PDF files found in " + ", ".join(map(str, args.paths)))
    embedder = local_embedder(settings)
    index = _closed_later(open_index(settings, embedder))
    notes = chunk_notes(settings, index)
    results: list[IngestResult] = []
    stopped: StorageFullError | None = None
    columns = (
        TextColumn("{task.description}", markup=False),  # a file name's "[draft]" is text
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[stage]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=False) as progress:
        for path in files:
            task = progress.add_task(shown(_name(path)[:40]), total=None, stage="")

            def update(stage: str, done: int, total: int, task: TaskID = task) -> None:
                label = {"convert": "pages", "embed": "chunks"}.get(stage, stage)
                progress.update(task, completed=done, total=total, stage=label)

            try:
                result = ingest_file(
                    path,
                    index=index,
                    embedder=embedder,
                    settings=settings,
                    on_progress=update,
                    notes=notes,
                    collections=[args.collection] if args.collection else (),
                )
            except StorageError as exc:  # this file fails; a full disk stops the rest
                result = _storage_failure(path, exc)
                stopped = exc if isinstance(exc, StorageFullError) else None
            progress.update(task, stage=result.outcome)
            results.append(result)
            if stopped:
                break
    out.print(_summary(results))
    for r in results:
        if r.outcome == "failed":
            out.print(f"{_shown(r.source)}: {shown(r.record.error or '')}", markup=False)
        elif r.outcome == "duplicate":
            # Under the same name (another folder, another clone) only the path tells them apart.
            twin = _shown(r.record.source)
            twin = shown(r.record.source) if twin == _shown(r.source) else twin
            out.print(
                f"{_shown(r.source)}: the same content as {twin} "
                f"({r.record.doc_id}), indexed once under both names",
                markup=False,
            )
    failed = sum(r.outcome == "failed" for r in results)
    out.print(
        f"{len(results) - failed} of {_plural(len(files), 'document')} indexed or unchanged"
        + (f"; {failed} failed (reasons above)" if failed else "")
    )
    if stopped:
        untried = files[len(results) :]
        skipped = (
            f", so {_plural(len(untried), 'file')} {'was' if len(untried) == 1 else 'were'} "
            f"not tried ({', '.join(_shown(p) for p in untried)})"
            if untried
            else ""
        )
        out.print(
            f"stopped: the disk is full{skipped}: free some space and run the same command again",
            markup=False,
        )
    return 1 if failed or stopped else 0


def _storage_failure(path: Path, exc: StorageError) -> IngestResult:
    """A file the index could not take, with the reason (the index keeps what it had)."""
    from docchat.ingest.decision import doc_id_for

    source = source_of(path)
    record = DocumentRecord(
        doc_id=doc_id_for(source),
        source=source,
        title=Path(source).stem,
        status=DocStatus.FAILED,
        error_code=exc.code,
        error=str(exc),
    )
    return IngestResult(record, "failed", 0.0, source)


def _summary(results: list[IngestResult]) -> Table:
    table = Table(title="ingest summary")
    for name in ("document", "pages", "chunks", "seconds", "status"):
        table.add_column(
            name, justify="right" if name in ("pages", "chunks", "seconds") else "left"
        )
    for r in results:
        status = r.outcome if r.outcome != "failed" else f"FAILED ({r.record.error_code})"
        if r.outcome == "indexed" and r.record.revision > 1:
            status = f"indexed (revision {r.record.revision})"  # new content replaced the old
        table.add_row(
            Text(_shown(r.source or r.record.source)),  # "[draft]" in a name is not markup
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
    from docchat.wiring.local import local_library

    _require_index(settings)
    library = local_library(settings)
    index = _closed_later(cast(SqliteIndex, library.index))
    scope = visible(args)
    library = library if scope is None else library.within(scope)
    doc_ids = [index.find_document(ref).doc_id for ref in args.doc] if args.doc else None
    return library.search(query, top_k=args.top_k or settings.top_k, doc_ids=doc_ids).passages


def _ask(args: argparse.Namespace, settings: Settings) -> int:
    """Stream the agent's answer: steps to stderr, text to stdout as it is written."""
    from docchat.wiring.local import local_backend

    question = _question(args.question, what="question")
    _require_index(settings)
    backend = local_backend(settings)
    if args.top_k:
        backend.config.top_k = args.top_k
    index = _closed_later(cast(SqliteIndex, backend.library.index))
    scope = visible(args)
    backend = backend if scope is None else backend.within(scope)
    doc_ids = [index.find_document(ref).doc_id for ref in args.doc] if args.doc else None
    events = backend.agent().run([{"role": "user", "content": question}], doc_ids=doc_ids)
    text: list[str] = []
    citations: list[Citation] = []
    for event in events:
        match event:
            case DeltaEvent():
                text.append(event.text)
                if not args.json:
                    sys.stdout.write(event.text)
                    sys.stdout.flush()
            case ToolCallEvent() if not args.json:
                call = escape(f"{event.name} {json.dumps(event.input, ensure_ascii=False)}")
                err.print(f"[dim]{call}[/dim]", soft_wrap=True)
            case CitationsEvent():
                citations = event.citations
            case ErrorEvent():
                raise DocchatError(event.message)
    answer = Answer(text="".join(text), citations=citations, mode=backend.mode)
    if not args.json and not answer.text.endswith("\n"):
        sys.stdout.write("\n")  # the shell's prompt starts on a line of its own
    if args.json:
        out.print_json(answer.model_dump_json())
    else:
        _print_sources(answer)
    return 0


def _print_sources(answer: Answer) -> None:
    """Each cited passage once, by number, with the pages its quotes are on (a passage may
    run over a page break, and two quotes may come from one passage and page)."""
    pages: dict[int, set[int]] = {}
    first: dict[int, Citation] = {}
    for c in answer.citations:
        pages.setdefault(c.number, set()).add(c.page)
        first.setdefault(c.number, c)
    if first:
        out.print("\nSources")
    for number, c in sorted(first.items()):
        found = sorted(pages[number])
        where = f"page {found[0]}" if len(found) == 1 else f"pages {', '.join(map(str, found))}"
        name = shown(Path(c.source).name)
        out.print(f"  [{number}] {shown(c.title)}, {where} ({name})", markup=False)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    """Run the chat API (the same app the Lambda runs) on this machine."""
    import uvicorn

    from docchat.serve.access import UsersFile
    from docchat.serve.guards import is_loopback
    from docchat.serve.protocol import DeadlineH11Protocol
    from docchat.wiring.local import guarded_local_app, local_backend, local_uploads_for

    token = settings.api_token if args.token is None else args.token
    local = is_loopback(args.host)
    users = UsersFile.load(args.users) if args.users else None
    if not local and not token and users is None:
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
        # The address it listens on is a name it answers to (127.0.0.2 included).
        hosts = [*args.allowed_host, *([] if wildcard else [args.host])]
        # Made now, not on the first upload: uploads a stopped server left unfinished resume
        # at start.
        uploads = local_uploads_for(settings)(backend)
        app = guarded_local_app(
            settings,
            lambda: backend,
            allowed_hosts=hosts,
            token=token,
            uploads=lambda _: uploads,
            users=users,
        )
        where = f"[{args.host}]" if ":" in args.host else args.host
        err.print(
            f"docchat serving {settings.data_dir} on http://{where}:{args.port} "
            f"({backend.mode})"
            + ("; API calls need a user's token" if users else "")
            + ("" if local or users else "; API calls need the token"),
            soft_wrap=True,
        )
        if wildcard and not hosts and not settings.allowed_host_names:
            err.print(
                "other machines must call it by a name or address given with --allowed-host "
                "(or DOCCHAT_ALLOWED_HOSTS)",
                soft_wrap=True,
            )
        # Slow or stalled request heads and bodies are cut off (docchat.serve.protocol).
        config = uvicorn.Config(app, log_level="warning", http=DeadlineH11Protocol)
        uvicorn.Server(config).run(sockets=[listener])
    return 0


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve MCP on stdin/stdout until the client closes them. The backend is opened first, so
    a wrong data directory is an error on stderr before the client sees a server."""
    import anyio
    from mcp.server.stdio import stdio_server

    from docchat.serve.mcp import mcp_server
    from docchat.wiring.local import local_backend

    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="docchat mcp: %(levelname)s %(message)s"
    )
    _require_index(settings)
    backend = local_backend(settings)
    _closed_later(cast(SqliteIndex, backend.library.index))
    server = mcp_server(lambda: backend, web_url=settings.web_url)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    err.print(f"docchat mcp serving {settings.data_dir} ({backend.mode}) on stdio", soft_wrap=True)
    anyio.run(serve)
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
        out.print(f"{rank}. {shown(p.chunk.title)}, {pages}  score {p.score:.4f}", markup=False)
        out.print("   " + " ".join(p.chunk.text.split())[:300], markup=False)
    return 0


def _status(args: argparse.Namespace, settings: Settings) -> int:
    from docchat.ingest.uploads import interrupted

    index = _existing_index(settings)
    documents = within(index.documents(), args)
    aliases = index.aliases()
    stopped = interrupted(settings, documents)
    # With --collection, the totals are those of the documents shown.
    stats = totals_within(index.stats(), documents) if args.collection else index.stats()
    if args.json:
        payload = {
            "stats": stats,
            "documents": [
                {
                    **d.model_dump(mode="json"),
                    "file_name": file_name(d.source),
                    "aliases": aliases.get(d.doc_id, []),
                    "interrupted": d.doc_id in stopped,
                }
                for d in documents
            ],
        }
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return 0
    print_status(
        out,
        documents,
        title=f"documents in {settings.data_dir}",
        aliases=aliases,
        interrupted=stopped,
    )
    out.print(
        f"{_plural(stats['documents'], 'document')}, {_plural(stats['chunks'], 'chunk')}, "
        f"{_plural(stats['indexed_pages'], 'page')} indexed; {stats['embedding_model']} "
        f"({stats['dimension']} dims)",
        soft_wrap=not out.is_terminal,  # wrapped between words in a terminal, one line piped
    )
    return 0


def _rm(args: argparse.Namespace, settings: Settings) -> int:
    """Remove exactly what was named: a document id (with every name it has), or one path or
    file name (the content stays indexed under its other names)."""
    index = _existing_index(settings)
    record, source = index.find_source(args.doc, path=source_of(Path(args.doc)))
    check_in(record, args, args.doc)
    if args.doc == record.doc_id:
        index.delete_document(record.doc_id)
        out.print(f"removed {record.doc_id} ({_plural(record.chunks, 'chunk')})", markup=False)
        return 0
    left = index.remove_source(source)
    if left is None:
        out.print(f"removed {record.doc_id} ({_plural(record.chunks, 'chunk')})", markup=False)
    else:
        out.print(
            f"removed the name {shown(source)}; the same content stays indexed as "
            f"{left.doc_id} ({shown(left.source)})",
            markup=False,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
