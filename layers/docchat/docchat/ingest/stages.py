"""The stages both runners use, as plain functions: convert a PDF (in a child process, within
the settings' limits) and embed chunks. local.py runs them in one process; the cloud's Lambda
steps (steps.py) run each in its own function."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from docchat.config import Settings
from docchat.ingest.convert.pageocr import LocalOcr
from docchat.ingest.convert.pdf import ConvertLimits, PageOcr, ProgressFn
from docchat.ingest.filings import filing_title
from docchat.ingest.formats import format_of
from docchat.ingest.isolate import document_isolated, pages_from_pdf_isolated
from docchat.ingest.ocr import OcrOptions
from docchat.models import Chunk, ConvertedDocument
from docchat.ports import Embedder, Vectors
from docchat.processes import Conversion

#: (stage, done, total): "convert" pages, "notes" and "embed" chunks.
Progress = Callable[[str, int, int], None]


def convert_document(
    data: bytes,
    name: str,
    settings: Settings | Conversion,
    *,
    fallback_title: str,
    on_page: ProgressFn | None = None,
    ocr: PageOcr | None = None,
) -> ConvertedDocument:
    """A file's bytes -> markdown pages, by the type its `name` says (formats.FORMATS): a PDF
    as `convert_pdf` reads it, any other format by its converter in a child process within
    the same limits; a type docchat does not read is an UnsupportedFormatError. A filing or
    an earnings release, in any format (EDGAR's are HTML), is titled by what its cover says
    (company, form, period)."""
    if format_of(name).name == "pdf":
        return convert_pdf(data, settings, fallback_title=fallback_title, on_page=on_page, ocr=ocr)
    converted = document_isolated(
        name, data, timeout_s=settings.convert_timeout_s, memory_mib=settings.convert_memory_mib
    )
    if on_page:
        on_page(len(converted.pages), len(converted.pages))
    return _filing_titled(converted)


def convert_pdf(
    data: bytes,
    settings: Settings | Conversion,
    *,
    fallback_title: str,
    on_page: ProgressFn | None = None,
    ocr: PageOcr | None = None,
) -> ConvertedDocument:
    """PDF bytes -> markdown pages, in a child process within the settings' limits; pages
    without a text layer are read as `ocr` says, else as the settings say; a filing titled
    by its cover."""
    converted = pages_from_pdf_isolated(
        data,
        fallback_title=fallback_title,
        limits=ConvertLimits(max_pages=settings.max_pages, timeout_s=settings.convert_timeout_s),
        ocr=ocr if ocr is not None else ocr_options(settings),
        memory_mib=settings.convert_memory_mib,
        on_page=on_page,
    )
    return _filing_titled(converted)


def _filing_titled(converted: ConvertedDocument) -> ConvertedDocument:
    named = filing_title(converted.pages)
    return converted.model_copy(update={"title": named}) if named else converted


def ocr_options(settings: Settings | Conversion) -> LocalOcr | None:
    """How pages without a text layer are OCR'd in this process; None when OCR is off. With
    `cloud` the cloud pipeline hands OCR to its own step (steps.convert); a local run has no
    such step and reads them here."""
    return LocalOcr(OcrOptions(dpi=settings.ocr_dpi)) if settings.ocr != "off" else None


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
