"""The local runner: `ingest_file` and `ingest_bytes` index one document in this process (the
CLI, and `docchat serve`'s uploads through uploads.py), with the stages the cloud's Lambda steps
share (stages.py) and the decision they share (decision.py)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from docchat.config import Settings
from docchat.errors import (
    ConfigError,
    ConversionError,
    DocchatError,
    EmbeddingError,
    ModelError,
    ModelFileError,
    StorageError,
)
from docchat.ingest.chunk import chunks_from_pages
from docchat.ingest.decision import copy_record, decide, doc_id_for, version_of
from docchat.ingest.formats import is_readable
from docchat.ingest.notes import ChunkNotes
from docchat.ingest.shelf import Shelf
from docchat.ingest.stages import Progress, convert_document, embed_chunks
from docchat.models import DocStatus, DocumentRecord, collections_of, file_name
from docchat.ports import Embedder

logger = logging.getLogger(__name__)

#: Failures of what every file needs (the disk, the embedder, the model, the settings): the
#: run cannot go on with the next file. Anything else is this file's, which ends FAILED.
NOT_THE_FILES = (StorageError, ModelError, ModelFileError, EmbeddingError, ConfigError)


@dataclass(frozen=True)
class IngestResult:
    record: DocumentRecord
    outcome: str  # "indexed", "unchanged", "duplicate" (of record) or "failed"
    seconds: float
    # The file this result is about (a duplicate's record is the document it was copied from).
    source: str = ""


def source_of(path: Path) -> str:
    """A file's resolved path as text that can be stored and shown: bytes of a file name that
    are not UTF-8 (a Latin-1 name, say) read as `\\xe9` escapes instead of breaking."""
    text = str(path.resolve())
    try:
        text.encode()
    except UnicodeEncodeError:
        text = os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def document_paths(paths: Iterable[Path]) -> Iterator[Path]:
    """The files named, and every file of a type docchat reads (formats.FORMATS) under the
    folders named, in a stable order."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if is_readable(p.name) and p.is_file())
        else:
            yield path


def ingest_bytes(
    data: bytes,
    *,
    source: str,
    shelf: Shelf,
    embedder: Embedder,
    settings: Settings,
    on_progress: Progress | None = None,
    command: str = "upload",
    notes: ChunkNotes | None = None,
    collections: Sequence[str] = (),
    name: str = "",
    again: bool = False,
) -> IngestResult:
    """Index one document version; a no-op when these bytes are already indexed, and a copy
    of the other document's chunks (nothing embedded) when another holds exactly these
    bytes, unless `again` (read and embedded again, as after an upgrade that reads documents
    better: titles from covers, tables). `name` is the file name the bytes are read as (by
    its extension) when the source does not end in one (a web page's URL); by default the
    source's. A failure of this file,
    of whatever kind, ends it FAILED with a reason worded with `command` (the word for adding
    the file again); the failures in NOT_THE_FILES propagate, as does a model error of `notes`
    (docchat.ingest.notes), with the previous version still indexed."""
    started = time.monotonic()
    catalog = shelf.catalog
    doc_id, version = doc_id_for(source), version_of(data)
    current = catalog.document(doc_id)
    # `collections` places the document; without, it keeps its own (new ones: the default).
    placed = collections_of(collections or (current.collections if current else ()))
    twin = catalog.indexed_version(version)
    if twin is not None and twin.collections != placed:
        twin = None  # the same bytes in other collections are a document of their own
    decision = decide(current, version, twin=twin.doc_id if twin else "", again=again)
    named = name or file_name(source)
    # Renamed where it lives (a synced file; elsewhere a new name is a new source), it is read
    # again: its passages' context names the file (`Chunk.file_label`).
    if decision.outcome == "unchanged" and current is not None and current.file_name == named:
        if current.collections != placed:  # placed again (moved): nothing re-embedded
            current = current.model_copy(update={"collections": placed})
            catalog.set_record(current)
        shelf.settle(current)
        return IngestResult(current, "unchanged", time.monotonic() - started, source)
    if decision.outcome == "duplicate" and twin is not None:
        shelf.copy(twin.doc_id, copy_record(twin, source, decision.revision, name=named))
        return IngestResult(twin, "duplicate", time.monotonic() - started, source)
    record = DocumentRecord(
        doc_id=doc_id,
        source=source,
        file_name=named,
        title=PurePosixPath(named).stem,
        version=version,
        revision=decision.revision,
        collections=placed,
    )
    try:
        indexed = _indexed(
            data,
            record,
            shelf=shelf,
            embedder=embedder,
            settings=settings,
            on_progress=on_progress,
            notes=notes,
            name=named,
        )
    except NOT_THE_FILES:
        raise
    except Exception as exc:
        if _interrupted(exc):
            raise KeyboardInterrupt from exc  # the run stops; the file has not failed
        failed = _failed(record, exc, command)
        shelf.fail(failed)
        return IngestResult(failed, "failed", time.monotonic() - started, source)
    return IngestResult(indexed, "indexed", time.monotonic() - started, source)


def _indexed(
    data: bytes,
    record: DocumentRecord,
    *,
    shelf: Shelf,
    embedder: Embedder,
    settings: Settings,
    on_progress: Progress | None,
    notes: ChunkNotes | None,
    name: str,
) -> DocumentRecord:
    """Convert, chunk, embed and index `record`'s version; the record the index then holds."""

    def reported(stage: str) -> Callable[[int, int], None] | None:
        if on_progress is None:
            return None
        return lambda done, total: on_progress(stage, done, total)

    title = PurePosixPath(record.file_name).stem
    converted = convert_document(
        data, name, settings, fallback_title=title, on_page=reported("convert")
    )
    record = record.model_copy(
        update={
            "title": converted.title,
            "pages": len(converted.pages),
            "pages_without_text": converted.pages_without_text,
            "pages_ocr": converted.pages_ocr,
        }
    )
    chunks = chunks_from_pages(
        converted.pages,
        doc_id=record.doc_id,
        version=record.version,
        source=record.source,
        title=converted.title,
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
        name=record.file_name,
    )
    chunks = [c.model_copy(update={"embedding_model": embedder.model_id}) for c in chunks]
    if notes is not None:
        chunks = notes.noted(chunks, converted.pages, on_progress=reported("notes"))
    # Sentence vectors are left to the reranker, which embeds a passage's sentences the first
    # time a question reranks it and keeps them (ports.ChunkStore): at ingestion they were
    # 56 % of a 10-K's CPU, for passages most questions never rerank (bench/ingest.py).
    vectors = embed_chunks(chunks, embedder=embedder, on_progress=on_progress)
    return shelf.put(record, chunks, vectors, pages=converted.pages)


def _interrupted(exc: BaseException) -> bool:
    """Whether a Ctrl-C caused `exc`: one that lands while a C extension loads (onnxruntime at
    the first chunk embedded) comes out as ImportError("initialization failed") from it."""
    seen = exc.__cause__ or exc.__context__
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _failed(record: DocumentRecord, exc: Exception, command: str) -> DocumentRecord:
    """`record` FAILED, with the reason `exc` gives, in words a user can act on."""
    if isinstance(exc, ConversionError):
        code, reason = exc.code, exc.worded_for(command)
    elif isinstance(exc, DocchatError):
        code, reason = exc.code, str(exc)
    else:
        logger.exception("ingesting a file failed", extra={"doc_id": record.doc_id})
        code = "internal"
        reason = (
            f"ingesting the file failed unexpectedly ({type(exc).__name__}: {exc}): "
            f"{command} it again, and report it if it keeps failing"
        )
    return record.model_copy(
        update={"status": DocStatus.FAILED, "error_code": code, "error": reason}
    )


def ingest_file(
    path: Path,
    *,
    shelf: Shelf,
    embedder: Embedder,
    settings: Settings,
    on_progress: Progress | None = None,
    notes: ChunkNotes | None = None,
    collections: Sequence[str] = (),
    again: bool = False,
) -> IngestResult:
    """Index the document at `path` (its resolved path is the document's source); `again`:
    even when these bytes are indexed already (see ingest_bytes)."""
    source = source_of(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        record = DocumentRecord(
            doc_id=doc_id_for(source),
            source=source,
            title=Path(source).stem,
            status=DocStatus.FAILED,
            error_code="unreadable",
            error=f"cannot read the file ({exc.strerror or exc}): check the path and permissions",
        )
        return IngestResult(record, "failed", 0.0, source)
    return ingest_bytes(
        data,
        source=source,
        shelf=shelf,
        embedder=embedder,
        settings=settings,
        on_progress=on_progress,
        command="ingest",
        notes=notes,
        collections=collections,
        again=again,
    )
