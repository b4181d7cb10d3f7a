"""The local runner (`ingest_file`, `ingest_bytes`), and the ingestion steps as plain functions
that it shares with the cloud's Lambda steps (ingest/steps.py): identity, conversion, embedding."""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from docchat.config import Settings
from docchat.errors import ConversionError
from docchat.ingest.chunk import chunks_from_pages
from docchat.ingest.convert import ConvertLimits, OcrSource, ProgressFn
from docchat.ingest.isolate import pages_from_pdf_isolated
from docchat.ingest.notes import ChunkNotes
from docchat.ingest.ocr import OcrOptions
from docchat.models import Chunk, ConvertedDocument, DocStatus, DocumentRecord
from docchat.ports import DocumentIndex, Embedder, SentenceVectors, Vectors

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class IngestResult:
    record: DocumentRecord
    outcome: str  # "indexed", "unchanged", "duplicate" (of record) or "failed"
    seconds: float
    source: str = ""  # the file this result is about (a duplicate's record is the original's)


def doc_id_for(source: str) -> str:
    """A stable, readable id for a document source (a path, or bucket/key)."""
    stem = Path(source).stem.casefold()
    slug = re.sub(r"[^a-z0-9]+", "-", stem).strip("-")[:40] or "doc"
    return f"{slug}-{hashlib.sha256(source.encode()).hexdigest()[:8]}"


def source_of(path: Path) -> str:
    """A file's resolved path as text that can be stored and shown: bytes of a file name that
    are not UTF-8 (a Latin-1 name, say) read as `\\xe9` escapes instead of breaking."""
    text = str(path.resolve())
    try:
        text.encode()
    except UnicodeEncodeError:
        text = os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def version_of(data: bytes) -> str:
    """The content hash that identifies one version of a document."""
    return hashlib.sha256(data).hexdigest()


def pdf_paths(paths: Iterable[Path]) -> Iterator[Path]:
    """The files named, and every PDF under the folders named, in a stable order."""
    for path in paths:
        if path.is_dir():
            yield from sorted(
                p for p in path.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file()
            )
        else:
            yield path


def ingest_bytes(
    data: bytes,
    *,
    source: str,
    index: DocumentIndex,
    embedder: Embedder,
    settings: Settings,
    on_progress: Progress | None = None,
    command: str = "upload",
    notes: ChunkNotes | None = None,
) -> IngestResult:
    """Index one document version; a no-op when these bytes are already indexed, and only a
    new name (an alias) when another document holds exactly these bytes. `command` is the
    word a failure's advice uses for adding the file again; `notes` writes each chunk's note
    (docchat.ingest.notes), whose model errors propagate with the previous version still indexed."""
    started = time.monotonic()
    doc_id = doc_id_for(source)
    version = version_of(data)
    current = index.document(doc_id)
    if current and is_indexed(current, version):
        return IngestResult(current, "unchanged", time.monotonic() - started, source)
    twin = index.indexed_version(version)
    if twin is not None and twin.doc_id != doc_id:
        index.add_alias(source, twin.doc_id, version)
        return IngestResult(twin, "duplicate", time.monotonic() - started, source)
    index.remove_alias(source)
    record = DocumentRecord(
        doc_id=doc_id,
        source=source,
        title=Path(source).stem,
        version=version,
        revision=next_revision(current, version),
    )
    try:
        converted = convert_pdf(
            data,
            settings,
            fallback_title=Path(source).stem,
            on_page=(lambda done, total: on_progress("convert", done, total))
            if on_progress
            else None,
        )
    except ConversionError as exc:
        failed = record.model_copy(
            update={
                "status": DocStatus.FAILED,
                "error_code": exc.code,
                "error": exc.worded_for(command),
            }
        )
        # The index follows the file: an unreadable new version leaves no stale chunks behind.
        index.clear_chunks(doc_id)
        index.set_record(failed)
        return IngestResult(failed, "failed", time.monotonic() - started, source)
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
        doc_id=doc_id,
        version=version,
        source=source,
        title=converted.title,
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
    )
    chunks = [c.model_copy(update={"embedding_model": embedder.model_id}) for c in chunks]
    if notes is not None:
        chunks = notes.noted(
            chunks,
            converted.pages,
            on_progress=(lambda done, total: on_progress("notes", done, total))
            if on_progress
            else None,
        )
    vectors = embed_chunks(chunks, embedder=embedder, on_progress=on_progress)
    sentences = (
        embed_sentences(chunks, embedder=embedder, on_progress=on_progress)
        if settings.reranker == "sentences"
        else []
    )
    index.replace_document(record, chunks, vectors, pages=converted.pages, sentences=sentences)
    indexed = index.document(doc_id) or record
    return IngestResult(indexed, "indexed", time.monotonic() - started, source)


def is_indexed(record: DocumentRecord, version: str) -> bool:
    """Whether `record` says this version of the document is fully indexed."""
    return record.version == version and record.status == DocStatus.INDEXED


def next_revision(current: DocumentRecord | None, version: str) -> int:
    """The revision number of `version` of a document whose record is now `current`."""
    if current is None:
        return 1
    return current.revision if current.version == version else current.revision + 1


def convert_pdf(
    data: bytes,
    settings: Settings,
    *,
    fallback_title: str,
    on_page: ProgressFn | None = None,
    ocr: OcrSource | None = None,
) -> ConvertedDocument:
    """PDF bytes -> markdown pages, in a child process within the settings' limits; pages
    without a text layer are read as `ocr` says, else as the settings say."""
    return pages_from_pdf_isolated(
        data,
        fallback_title=fallback_title,
        limits=ConvertLimits(max_pages=settings.max_pages, timeout_s=settings.convert_timeout_s),
        ocr=ocr if ocr is not None else ocr_options(settings),
        memory_mib=settings.convert_memory_mib,
        on_page=on_page,
    )


def ocr_options(settings: Settings) -> OcrOptions | None:
    """How pages without a text layer are OCR'd in this process; None when OCR is off. With
    `cloud` the cloud pipeline hands OCR to its own step (steps.convert); a local run has no
    such step and reads them here."""
    return OcrOptions(dpi=settings.ocr_dpi) if settings.ocr != "off" else None


def embed_chunks(
    chunks: Sequence[Chunk], *, embedder: Embedder, on_progress: Progress | None = None
) -> Vectors:
    """Vectors for the chunks' context-carrying texts, in chunk order."""
    texts = [c.embed_text for c in chunks]
    done = 0

    def tick(count: int) -> None:
        nonlocal done
        done += count
        if on_progress:
            on_progress("embed", done, len(texts))

    return embedder.embed_documents(texts, on_batch=tick)


def embed_sentences(
    chunks: Sequence[Chunk], *, embedder: Embedder, on_progress: Progress | None = None
) -> list[SentenceVectors]:
    """The vectors of each chunk's sentences, for the sentence reranker (kept with the
    chunks, so no question has to wait for them)."""
    from docchat.search.rerank import scored_spans, sentence_vectors

    total = sum(len(scored_spans(chunk)) for chunk in chunks)
    done = 0

    def tick(count: int) -> None:
        nonlocal done
        done += count
        if on_progress:
            on_progress("sentences", done, total)

    return sentence_vectors(chunks, embedder, on_batch=tick)


def ingest_file(
    path: Path,
    *,
    index: DocumentIndex,
    embedder: Embedder,
    settings: Settings,
    on_progress: Progress | None = None,
    notes: ChunkNotes | None = None,
) -> IngestResult:
    """Index the PDF at `path` (its resolved path is the document's source)."""
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
        index=index,
        embedder=embedder,
        settings=settings,
        on_progress=on_progress,
        command="ingest",
        notes=notes,
    )
