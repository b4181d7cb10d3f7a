"""`docchat ingest`, `status`, `text` and `rm`: the documents of a data directory."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
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
from rich.text import Text

from docchat.cli import common
from docchat.cli.collections import add_collection_option, check_in, totals_within, within
from docchat.cli.common import (
    Commands,
    Opened,
    existing_index,
    name_of,
    plural,
    require_index,
    shown_name,
)
from docchat.cli.display import print_status, shown
from docchat.config import Settings
from docchat.errors import DocchatError, StorageError, StorageFullError
from docchat.ingest import claims
from docchat.ingest.decision import doc_id_for
from docchat.ingest.formats import READABLE
from docchat.ingest.local import IngestResult, document_paths, ingest_file, source_of
from docchat.models import DocStatus, DocumentRecord
from docchat.search.pages import extracted_pages
from docchat.wiring import chunk_notes
from docchat.wiring.local import local_embedder, open_local

#: What a document's ingest reports its progress to: (stage, done, total).
IngestProgress = Callable[[str, int, int], None]


def add_ingest(commands: Commands, common_parser: argparse.ArgumentParser) -> None:
    """Add `docchat ingest`."""
    ingest = commands.add_parser(
        "ingest",
        parents=[common_parser],
        help="index documents (PDF, Word, PowerPoint, Excel, HTML, Markdown, text) or folders",
    )
    ingest.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    add_collection_option(ingest, "put the documents in this collection", many=False)
    ingest.add_argument(
        "--again",
        action="store_true",
        help="read and embed again the documents whose bytes are indexed already (after "
        "upgrading docchat, to get what it now reads better); their collections are kept",
    )
    ingest.set_defaults(run=run_ingest)


def add_listing(commands: Commands, common_parser: argparse.ArgumentParser) -> None:
    """Add `docchat status`, `rm` and `text`."""
    status = commands.add_parser(
        "status", parents=[common_parser], help="list documents and totals"
    )
    status.add_argument("--json", action="store_true")
    add_collection_option(status, "only this collection's documents", many=False)
    status.set_defaults(run=run_status)

    rm = commands.add_parser("rm", parents=[common_parser], help="remove a document from the index")
    rm.add_argument("doc", metavar="DOC", help="document id, path or file name")
    add_collection_option(rm, "only a document of this collection", many=False)
    rm.set_defaults(run=run_rm)

    text = commands.add_parser(
        "text", parents=[common_parser], help="show the text extracted from a document's pages"
    )
    text.add_argument("doc", metavar="DOC", help="document id, path or file name")
    text.add_argument(
        "--pages", type=page_range, default=(None, None), metavar="A-B", help="e.g. 3, 3-5, 3-"
    )
    text.add_argument("--json", action="store_true", help="a JSON list of {page, text, ocr}")
    add_collection_option(text, "only a document of this collection", many=False)
    text.set_defaults(run=run_text)


def page_range(value: str) -> tuple[int | None, int | None]:
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
    if first is not None and last is not None and last < first:
        raise argparse.ArgumentTypeError(
            f"{value!r} ends before it starts: give the first page first ({last}-{first})"
        )
    return first, last


def run_ingest(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """Index the documents named, one after another with a progress bar each, then a summary."""
    missing = [p for p in args.paths if not p.exists()]
    if missing:
        raise DocchatError(f"no such file or folder: {', '.join(map(str, missing))}")
    files = list(document_paths(args.paths))
    if not files:
        raise DocchatError(f"no documents ({READABLE}) found in " + ", ".join(map(str, args.paths)))
    results, stopped = _ingest_files(files, settings, opened, args.collection, again=args.again)
    out = common.out
    out.print(_summary(results))
    for r in results:
        if r.outcome == "failed":
            out.print(f"{shown_name(r.source)}: {shown(r.record.error or '')}", markup=False)
        elif r.outcome == "duplicate":
            # Under the same name (another folder, another clone) only the path tells them apart.
            twin = shown_name(r.record.source)
            twin = shown(r.record.source) if twin == shown_name(r.source) else twin
            out.print(
                f"{shown_name(r.source)}: the same content as {twin} "
                f"({r.record.doc_id}), copied from it without embedding it again",
                markup=False,
            )
    failed = sum(r.outcome == "failed" for r in results)
    out.print(
        f"{len(results) - failed} of {plural(len(files), 'document')} indexed or unchanged"
        + (f"; {failed} failed (reasons above)" if failed else "")
    )
    if stopped:
        tried = {r.source for r in results}
        untried = [p for p in files if source_of(p) not in tried]
        skipped = (
            f", so {plural(len(untried), 'file')} {'was' if len(untried) == 1 else 'were'} "
            f"not tried ({', '.join(shown_name(p) for p in untried)})"
            if untried
            else ""
        )
        kept = "" if untried else ", what was indexed is kept"
        if not untried:  # the last save of the index met it: the files show no reason
            out.print(shown(str(stopped)), markup=False)
        out.print(
            f"stopped: the disk is full{skipped}{kept}: free some space and run the same "
            "command again",
            markup=False,
        )
    return 1 if failed or stopped else 0


def _ingest_files(
    files: list[Path],
    settings: Settings,
    opened: Opened,
    collection: str | None = None,
    *,
    again: bool = False,
) -> tuple[list[IngestResult], StorageFullError | None]:
    """Each file's result, and the full disk that stopped the run before the rest, if one did.
    A file another process is ingesting (ingest/claims.py) waits until the rest are done, and
    then for that process: the same file is never converted and embedded twice at once (once
    the other is done, it is usually unchanged)."""
    embedder = local_embedder(settings)
    local = open_local(settings, embedder)  # with DOCCHAT_OPENSEARCH_ENDPOINT, chunks go there
    opened.closed_later(local.file)
    notes = chunk_notes(settings, local.file)
    results: list[IngestResult] = []
    stopped: StorageFullError | None = None
    going_to = [collection] if collection else []

    def ingest(path: Path, held: claims.Claim, update: IngestProgress) -> None:
        nonlocal stopped

        def progress(stage: str, done: int, total: int) -> None:
            held.report(stage, done, total)
            update(stage, done, total)

        try:
            result = ingest_file(
                path,
                shelf=local.shelf,
                embedder=embedder,
                settings=settings,
                on_progress=progress,
                notes=notes,
                collections=going_to,
                again=again,
            )
        except StorageError as exc:  # this file fails; a full disk stops the rest
            result = _storage_failure(path, exc)
            stopped = exc if isinstance(exc, StorageFullError) else None
        report.end(result.outcome)
        results.append(result)

    with _reporter() as report:
        later: list[Path] = []
        for path in files:
            if stopped:
                break
            source = source_of(path)
            held = claims.claim(
                settings.data_dir, doc_id_for(source), source=source, collections=going_to
            )
            if held is None:
                later.append(path)
                continue
            with held:
                ingest(path, held, report.start(shown(name_of(path))))
        for path in later:
            if stopped:
                break
            source = source_of(path)
            update = report.start(shown(name_of(path)))
            other = claims.holder(settings.data_dir, doc_id_for(source))
            report.note(
                f"waiting for the docchat process ({other.pid if other else '?'}) ingesting it"
            )
            with claims.claim_when_free(
                settings.data_dir, doc_id_for(source), source=source, collections=going_to
            ) as held:
                ingest(path, held, update)
    if stopped is None:
        try:  # said here, not as a warning when the command closes the index and exits 0
            local.file.flush()
        except StorageFullError as exc:
            stopped = exc
    return results, stopped


#: What a stage's progress counts, as the progress shows it.
_COUNTED = {"convert": "page", "embed": "chunk", "notes": "chunk"}


class _Bars:
    """A progress bar per document, for a terminal."""

    def __init__(self) -> None:
        columns = (
            TextColumn("{task.description}", markup=False),  # a file name's "[draft]" is text
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stage]}"),
            TimeElapsedColumn(),
        )
        self.progress = Progress(*columns, console=common.err, transient=False)
        self.task: TaskID | None = None

    def start(self, name: str) -> IngestProgress:
        task = self.task = self.progress.add_task(name[:40], total=None, stage="")

        def update(stage: str, done: int, total: int) -> None:
            label = {"convert": "pages", "embed": "chunks"}.get(stage, stage)
            self.progress.update(task, completed=done, total=total, stage=label)

        return update

    def note(self, what: str) -> None:
        if self.task is not None:
            self.progress.update(self.task, stage=what)

    def end(self, outcome: str) -> None:
        self.note(outcome)

    def __enter__(self) -> _Bars:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


class _Lines:
    """One plain line per document and stage, printed as it begins, for output that is not a
    terminal (a CI log, `make demo > log`): rich's bars are drawn there only when the run ends,
    so a long run printed nothing for minutes."""

    def __init__(self) -> None:
        self.name = ""
        self.stage = ""
        self.started = 0.0

    def start(self, name: str) -> IngestProgress:
        self.name, self.stage, self.started = name, "", time.monotonic()

        def update(stage: str, done: int, total: int) -> None:
            if stage != self.stage:
                self.stage = stage
                counted = plural(total, _COUNTED.get(stage, "step"))
                self._line(f"{stage} ({counted})")

        return update

    def note(self, what: str) -> None:
        self._line(what)

    def end(self, outcome: str) -> None:
        self._line(f"{outcome} in {time.monotonic() - self.started:.1f} s")

    def _line(self, what: str) -> None:
        common.err.print(f"{self.name}: {what}", markup=False, highlight=False)

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _reporter() -> _Bars | _Lines:
    """How the run shows its progress: bars in a terminal, plain lines anywhere else."""
    return _Bars() if common.err.is_terminal else _Lines()


def _storage_failure(path: Path, exc: StorageError) -> IngestResult:
    """A file the index could not take, with the reason (the index keeps what it had)."""
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
            Text(shown_name(r.source or r.record.source)),  # "[draft]" in a name is not markup
            str(r.record.pages),
            str(r.record.chunks),
            f"{r.seconds:.2f}",
            status,
        )
    return table


def run_status(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """The documents, each with its status, and the index's totals; a document another
    process is ingesting now is listed with its stage and progress, new or not."""
    from docchat.ingest.uploads import interrupted

    index = existing_index(settings, opened)
    # A new document has no record until it is indexed; a new version keeps its old one.
    known = index.documents()
    # One read of the claims: a claim made between two reads was listed without its progress.
    works = claims.in_progress(settings.data_dir)
    working = {w.doc_id: w for w in works}
    ids = {d.doc_id for d in known}
    listed = claims.with_work(known, works)
    documents = within(sorted(listed, key=lambda d: (d.source, d.doc_id)), args)
    indexed = [d for d in documents if d.doc_id in ids]
    stopped = interrupted(settings, indexed) - working.keys()
    progress = {doc_id: _progress(w) for doc_id, w in working.items()}
    # With --collection, the totals are those of the documents shown.
    stats = totals_within(index.stats(), indexed) if args.collection else index.stats()
    if args.json:
        payload = {
            "stats": stats,
            "documents": [
                {
                    **d.model_dump(mode="json"),
                    "interrupted": d.doc_id in stopped,
                    "ingesting": _working_json(working.get(d.doc_id)),
                }
                for d in documents
            ],
        }
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return 0
    out = common.out
    print_status(
        out,
        documents,
        title=f"documents in {settings.data_dir}",
        interrupted=stopped,
        working=progress,
    )
    out.print(
        f"{plural(stats['documents'], 'document')}, {plural(stats['chunks'], 'chunk')}, "
        f"{plural(stats['indexed_pages'], 'page')} indexed; {stats['embedding_model']} "
        f"({stats['dimension']} dims)",
        soft_wrap=not out.is_terminal,  # wrapped between words in a terminal, one line piped
    )
    return 0


def _progress(work: claims.Work) -> str:
    """ "ingesting (process 123, 2 min): convert 12 of 190 pages"."""
    minutes = max(0, int((time.time() - work.started) // 60))
    where = f"ingesting (process {work.pid}, {minutes} min)"
    if not work.stage:
        return f"{where}: starting"
    counted = _COUNTED.get(work.stage, "step")
    return f"{where}: {work.stage} {work.done} of {plural(work.total, counted)}"


def _working_json(work: claims.Work | None) -> dict[str, object] | None:
    if work is None:
        return None
    return {"stage": work.stage, "done": work.done, "total": work.total, "pid": work.pid}


def run_text(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """The text conversion extracted from a document's pages, as markdown or JSON."""
    index = existing_index(settings, opened)
    record = index.find_document(args.doc, path=source_of(Path(args.doc)))
    check_in(record, args, args.doc)
    first, last = args.pages
    pages = extracted_pages(record, index, doc_ref=args.doc, first=first, last=last)
    if args.json:
        rows = [
            {"page": p.number, "text": p.markdown, "ocr": p.ocr}
            | ({"kind": p.kind, "label": p.label} if p.label else {})
            for p in pages
        ]
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return 0
    name = shown(record.file_name)
    for page in pages:
        read = ", read by OCR" if page.ocr else ""
        heading = f"--- {shown(record.title)} ({name}), {shown(page.where)}{read} ---"
        common.out.print(heading, markup=False)
        common.out.print(page.markdown, markup=False)
    return 0


def run_rm(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    """Remove exactly the document named, by its id, path or file name (the same content under
    another name is a document of its own, and stays)."""
    require_index(settings)
    local = open_local(settings)  # with DOCCHAT_OPENSEARCH_ENDPOINT, its chunks are there
    opened.closed_later(local.file)
    record = local.file.find_document(args.doc, path=source_of(Path(args.doc)))
    check_in(record, args, args.doc)
    local.shelf.remove(record.doc_id)
    common.out.print(f"removed {record.doc_id} ({plural(record.chunks, 'chunk')})", markup=False)
    return 0
