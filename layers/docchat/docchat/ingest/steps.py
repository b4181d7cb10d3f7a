"""The cloud ingestion steps as plain functions; the Lambdas in functions/ only call these.

Steps hand each other S3 pointers and counts, never document text. Each step is safe to run
twice: a retried step rewrites the same artifacts, and the registry's conditional writes stop a
stale event or an older version from overwriting a newer one. What a failed or stopped run leaves
behind is handled in `docchat.ingest.failures` (MarkFailed, the watchdog).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import PurePosixPath

from docchat.errors import (
    EmptyPdfError,
    ObjectMissingError,
    OcrError,
    StaleWriteError,
    SupersededError,
)
from docchat.ingest.artifacts import chunks_key, notes_key, ocr_key, pages_key, vectors_key
from docchat.ingest.chunk import chunks_from_pages
from docchat.ingest.convert.pageocr import OcrResults
from docchat.ingest.decision import decide, doc_id_for, newer, normalized_sequencer, version_of
from docchat.ingest.isolate import ocr_pages_isolated
from docchat.ingest.notes import CLOUD_CONCURRENCY, ChunkNotes, StoredNotes
from docchat.ingest.ocr import OcrOptions
from docchat.ingest.pagetext import drop_pages, pages_document
from docchat.ingest.stages import convert_document, embed_chunks
from docchat.ingest.synced import is_synced_key, source_url
from docchat.models import (
    Chunk,
    DocStatus,
    DocumentRecord,
    OcrPage,
    Page,
    RegistryEntry,
    collection_of_key,
)
from docchat.payloads import (
    BatchResult,
    BatchTask,
    ChunkResult,
    ConvertResult,
    DocRef,
    FinalizeTask,
    OcrRange,
    OcrResult,
    OcrTask,
    RegisterResult,
    StepEvent,
    StepResult,
)
from docchat.ports import ChatModel, ChunkStore, Embedder, Objects, Registry
from docchat.processes import (
    Artifacts,
    ChunkSettings,
    ConvertSettings,
    EmbedSettings,
    IndexSettings,
    OcrSettings,
    RegisterSettings,
)

#: The most batches one document is split into. Chunk's output lists their keys (~150 bytes
#: each) and a Step Functions state holds at most 256 KiB, a limit `States.ALL` cannot catch
#: (States.DataLimitExceeded); an inline Map's iterations also fill the run's history (25,000
#: events, about 14 a batch). A larger document gets larger batches instead.
MAX_BATCHES = 500


# --- Register ---------------------------------------------------------------------------------


def register(
    task: StepEvent,
    *,
    objects: Objects,
    registry: Registry,
    settings: RegisterSettings,
    index_location: str,
) -> RegisterResult:
    """Decide whether this upload needs ingesting, and claim the document if it does: not when
    these bytes are indexed already, in the index at `index_location` (after a change of
    collection or embedding model the same bytes are indexed again), nor while another run
    ingests them."""
    ref = task.event.object_ref()
    doc_id = doc_id_for(ref.source)
    sequencer = normalized_sequencer(ref.sequencer)
    synced = is_synced_key(ref.key)
    try:
        version = objects.sha256(ref.bucket, ref.key)
        # A page the stack's sync wrote is the page's document, as a local sync's is.
        url = source_url(ref.key, objects.metadata(ref.bucket, ref.key)) if synced else ""
    except ObjectMissingError:
        return RegisterResult(action="skip", reason="the object was deleted before it was read")
    current = registry.get(doc_id)
    if newer(current, sequencer):
        return RegisterResult(action="skip", reason="a newer event for this object came first")
    decision = decide(
        current,
        version,
        indexed_here=current is not None and current.index == index_location,
        running=current is not None and _running(current, settings),
    )
    if decision.outcome == "unchanged":
        return RegisterResult(action="skip", reason=decision.reason)
    record = DocumentRecord(
        doc_id=doc_id,
        source=url or ref.source,
        file_name=PurePosixPath(ref.key).name,  # a synced page's too: the name it is read as
        title=PurePosixPath(ref.key).stem,
        version=version,
        status=DocStatus.QUEUED,
        revision=decision.revision,
        # The key places a new document; one that exists keeps its collections (moved by an
        # admin, it stays moved when a new version arrives).
        collections=current.collections if current else [collection_of_key(ref.key)],
    )
    if url:  # where DELETE /documents/{id} finds its object (S3Uploads.remove)
        record = RegistryEntry(**record.model_dump(), stored_at=ref.source)
    try:
        registry.claim(record, sequencer=sequencer, execution_id=task.execution_id)
    except StaleWriteError:
        return RegisterResult(action="skip", reason="a newer event for this object came first")
    doc = DocRef(
        doc_id=doc_id,
        version=version,
        bucket=ref.bucket,
        key=ref.key,
        execution_id=task.execution_id,
        source_url=url,
    )
    return RegisterResult(action="process", doc=doc)


def _running(entry: RegistryEntry, settings: RegisterSettings) -> bool:
    """Whether a run is ingesting `entry`'s version now: unfinished, and moved recently (a run
    stuck without progress for `stale_after_s` is taken over by a new upload event)."""
    if entry.status in (DocStatus.FAILED, DocStatus.INDEXED):
        return False
    return time.time() - entry.updated_at <= settings.stale_after_s


# --- Convert, Chunk -----------------------------------------------------------------------------


def convert(
    doc: DocRef, *, objects: Objects, registry: Registry, settings: ConvertSettings
) -> ConvertResult:
    """PDF -> markdown pages, stored as one JSON artifact. With cloud OCR, a PDF with pages
    that need it yields no pages yet but the page ranges the OCR step reads
    (`ConvertResult.ocr_ranges`); `convert_with_ocr` then finishes the job."""
    _advance(registry, doc, DocStatus.CONVERTING)
    ocr = OcrResults() if settings.ocr == "cloud" else None
    return _convert(doc, ocr, objects=objects, registry=registry, settings=settings)


def convert_with_ocr(
    first: ConvertResult, *, objects: Objects, registry: Registry, settings: ConvertSettings
) -> ConvertResult:
    """Convert again, with the lines the OCR step read for `first.ocr_ranges`: the pages are
    built exactly as a local conversion builds them (running headers, headings, title)."""
    pages = [
        OcrPage.model_validate(page)
        for part in first.ocr_ranges
        for page in _read_list(objects, settings, part.key)
    ]
    ocr = OcrResults.of(pages)
    result = _convert(first.doc, ocr, objects=objects, registry=registry, settings=settings)
    if result.ocr_ranges:
        missing = [n for part in result.ocr_ranges for n in part.pages]
        raise OcrError(f"the OCR step left out pages {missing}: upload the file again")
    return result


def _convert(
    doc: DocRef,
    ocr: OcrResults | None,
    *,
    objects: Objects,
    registry: Registry,
    settings: ConvertSettings,
) -> ConvertResult:
    data = objects.read(doc.bucket, doc.key)
    if version_of(data) != doc.version:
        raise SupersededError(f"{doc.key} changed after it was registered; the newer upload wins")
    # The key's type picks the converter (formats.FORMATS): a PDF as ever, an Office, HTML,
    # Markdown or text file by its own, within the same limits; another type fails here with
    # its reason (unsupported_format), as a damaged file does.
    name = PurePosixPath(doc.key).name
    converted = convert_document(
        data, name, settings, fallback_title=PurePosixPath(doc.key).stem, ocr=ocr
    )
    if converted.ocr_pending:
        ranges = ocr_ranges(doc, converted.ocr_pending, settings=settings)
        return ConvertResult(
            doc=doc, title=converted.title, pages=len(converted.pages), ocr_ranges=ranges
        )
    # Kept beyond the run (outside the expiring artifacts): GET /documents/{id}/pages/{n} reads
    # it; Remove deletes it.
    key = pages_key(doc.doc_id, doc.version)
    objects.write_json(
        settings.artifacts_bucket, key, pages_document(converted.title, converted.pages)
    )
    _advance(
        registry,
        doc,
        DocStatus.CHUNKING,
        title=converted.title,
        pages=len(converted.pages),
        pages_without_text=converted.pages_without_text,
        pages_ocr=converted.pages_ocr,
    )
    return ConvertResult(doc=doc, title=converted.title, pages=len(converted.pages), pages_key=key)


def ocr_ranges(doc: DocRef, numbers: list[int], *, settings: ConvertSettings) -> list[OcrRange]:
    """The pages that need OCR in groups of `ocr_pages_per_task`, each with its artifact key."""
    size = settings.ocr_pages_per_task
    groups = [numbers[start : start + size] for start in range(0, len(numbers), size)]
    return [
        OcrRange(
            pages=group, key=ocr_key(settings.artifacts_prefix, doc.doc_id, doc.version, group)
        )
        for group in groups
    ]


def ocr_range(task: OcrTask, *, objects: Objects, settings: OcrSettings) -> OcrResult:
    """Read one range of pages by OCR (the engine, in a child process within the settings'
    limits) and store their lines at the range's key."""
    data = objects.read(task.doc.bucket, task.doc.key)
    if version_of(data) != task.doc.version:
        raise SupersededError(
            f"{task.doc.key} changed after it was registered; the newer upload wins"
        )
    pages = ocr_pages_isolated(
        data,
        task.range.pages,
        options=OcrOptions(dpi=settings.ocr_dpi),
        timeout_s=settings.convert_timeout_s,
        memory_mib=settings.convert_memory_mib,
    )
    objects.write_json(
        settings.artifacts_bucket, task.range.key, [p.model_dump(mode="json") for p in pages]
    )
    return OcrResult(
        doc=task.doc,
        key=task.range.key,
        pages=len(pages),
        lines=sum(len(p.lines) for p in pages),
    )


def chunk(
    result: ConvertResult,
    *,
    objects: Objects,
    registry: Registry,
    settings: ChunkSettings,
    notes_model: ChatModel | None = None,
) -> ChunkResult:
    """Pages -> chunks, stored in batches that the Embed map works through; with
    `notes_model` (DOCCHAT_CHUNK_CONTEXT=model) each chunk carries its model-written note,
    cached in the artifacts bucket (docchat.ingest.notes)."""
    doc = result.doc
    stored = objects.read_json(settings.artifacts_bucket, result.pages_key)
    assert isinstance(stored, dict)
    pages = [Page.model_validate(p) for p in stored["pages"]]
    chunks = chunks_from_pages(
        pages,
        doc_id=doc.doc_id,
        version=doc.version,
        source=doc.source_url or f"{doc.bucket}/{doc.key}",
        title=result.title,
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
        name=PurePosixPath(doc.key).name,
    )
    if not chunks:
        raise EmptyPdfError("the PDF's text yields no passages to index")
    if notes_model is not None:
        cache = StoredNotes(objects, settings.artifacts_bucket, doc.doc_id)
        notes = ChunkNotes(model=notes_model, cache=cache, concurrency=CLOUD_CONCURRENCY)
        chunks = notes.noted(chunks, pages)
    size = max(settings.chunks_per_batch, math.ceil(len(chunks) / MAX_BATCHES))
    batches = []
    for n, start in enumerate(range(0, len(chunks), size)):
        key = chunks_key(settings.artifacts_prefix, doc.doc_id, doc.version, n)
        batch = [c.model_dump(mode="json") for c in chunks[start : start + size]]
        objects.write_json(settings.artifacts_bucket, key, batch)
        batches.append(key)
    _advance(registry, doc, DocStatus.EMBEDDING, chunks=len(chunks))
    return ChunkResult(doc=doc, title=result.title, chunks=len(chunks), batches=batches)


# --- Embed, Index (one batch per Map iteration) -------------------------------------------------


def embed_batch(
    task: BatchTask, *, objects: Objects, embedder: Embedder, settings: EmbedSettings
) -> BatchResult:
    """Embed one batch of chunks and store the vectors beside it."""
    chunks = _read_chunks(objects, settings, task.batch_key)
    vectors = embed_chunks(chunks, embedder=embedder)
    objects.write_vectors(settings.artifacts_bucket, vectors_key(task.batch_key), vectors)
    return BatchResult(doc=task.doc, batch_key=task.batch_key, chunks=len(chunks))


def index_batch(
    task: BatchTask,
    *,
    objects: Objects,
    index: ChunkStore,
    settings: IndexSettings,
    model_id: str,
) -> BatchResult:
    """Write one embedded batch to the search index."""
    chunks = [
        c.model_copy(update={"embedding_model": model_id})
        for c in _read_chunks(objects, settings, task.batch_key)
    ]
    vectors = objects.read_vectors(settings.artifacts_bucket, vectors_key(task.batch_key))
    index.write_chunks(chunks, vectors)
    return BatchResult(doc=task.doc, batch_key=task.batch_key, chunks=len(chunks))


# --- Finalize, Remove ----------------------------------------------------------------


def finalize(
    task: FinalizeTask,
    *,
    index: ChunkStore,
    registry: Registry,
    objects: Objects,
    artifacts_bucket: str,
) -> StepResult:
    """Drop the old version's chunks and page text and mark the document INDEXED, if this is
    still the current version; otherwise drop this run's own."""
    doc = task.doc
    current = registry.get(doc.doc_id)
    if current is None:
        index.delete_document(doc.doc_id)
        drop_pages(objects, artifacts_bucket, doc.doc_id)
        return StepResult(doc_id=doc.doc_id, status="removed", detail="deleted meanwhile")
    removed = index.finalize_document(doc.doc_id, current.version)
    drop_pages(objects, artifacts_bucket, doc.doc_id, keep=current.version)
    if current.version != doc.version:
        return StepResult(doc_id=doc.doc_id, status="superseded", detail=json.dumps(removed))
    _advance(
        registry,
        doc,
        DocStatus.INDEXED,
        chunks=task.chunks,
        error="",
        error_code="",
        index=index.location,
    )
    return StepResult(doc_id=doc.doc_id, status=DocStatus.INDEXED.value, detail=json.dumps(removed))


def remove(
    task: StepEvent,
    *,
    objects: Objects,
    index: ChunkStore,
    registry: Registry,
    artifacts_bucket: str = "",
) -> StepResult:
    """The current object was deleted: remove its chunks and its registry entry, unless it was
    uploaded again after the deletion.

    S3 also reports the permanent deletion of one version; while the key still has a current
    object (an older version deleted by hand, or the newest one, which makes the previous version
    current again), nothing is removed: the result is "present" and the state machine hands the
    event to Register, which ingests the current object if its bytes are not the indexed ones."""
    ref = task.event.object_ref()
    doc_id = doc_id_for(ref.source)
    if objects.exists(ref.bucket, ref.key):
        return StepResult(
            doc_id=doc_id, status="present", detail="the key still has a current object"
        )
    sequencer = normalized_sequencer(ref.sequencer)
    current = registry.get(doc_id)
    if newer(current, sequencer):
        return StepResult(doc_id=doc_id, status="kept", detail="uploaded again after deletion")
    index.delete_document(doc_id)
    if current is not None and artifacts_bucket:
        drop_pages(objects, artifacts_bucket, doc_id)
        objects.delete(artifacts_bucket, notes_key(doc_id))
    registry.delete(doc_id, sequencer=sequencer)
    return StepResult(doc_id=doc_id, status="removed")


# --- helpers ----------------------------------------------------------------------------------


def _advance(registry: Registry, doc: DocRef, status: DocStatus, **fields: object) -> None:
    try:
        registry.update(doc.doc_id, doc.version, status=status.value, **fields)
    except StaleWriteError as exc:
        raise SupersededError(
            f"{doc.key}: a newer upload or a deletion took over this document"
        ) from exc


def _read_chunks(objects: Objects, settings: Artifacts, key: str) -> list[Chunk]:
    return [Chunk.model_validate(c) for c in _read_list(objects, settings, key)]


def _read_list(objects: Objects, settings: Artifacts, key: str) -> list[object]:
    stored = objects.read_json(settings.artifacts_bucket, key)
    assert isinstance(stored, list)
    return stored


__all__ = [
    "chunk",
    "convert",
    "convert_with_ocr",
    "embed_batch",
    "finalize",
    "index_batch",
    "ocr_range",
    "register",
    "remove",
]
