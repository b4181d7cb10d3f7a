"""PDF bytes -> one markdown page per PDF page (pypdfium2), with headings and paragraphs: the
entry point of conversion, which reads each page and hands its lines to the other modules."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docchat.errors import (
    ConversionTimeoutError,
    EmptyPdfError,
    EncryptedPdfError,
    MalformedPdfError,
    NeedsOcrError,
    PdfTooLargeError,
)
from docchat.ingest.convert.forms import form_fields
from docchat.ingest.convert.headings import (
    mark_outline_headings,
    mark_size_headings,
    outline_by_page,
)
from docchat.ingest.convert.margins import footnotes_last, without_margin_notes
from docchat.ingest.convert.page import Line, RawPage, text_chars
from docchat.ingest.convert.paragraphs import page_markdown, paragraphs_of, split_at_bullets
from docchat.ingest.convert.running import drop_running_lines
from docchat.ingest.convert.tables.find import ocr_tables
from docchat.ingest.convert.textlayer import Probes, on_page, table_line, text_lines, with_tables
from docchat.ingest.convert.titles import document_title
from docchat.models import ConvertedDocument, Page

ProgressFn = Callable[[int, int], None]


class PageOcr(Protocol):
    """Where the lines of a page without a usable text layer come from: the local engine
    reading the rendered page, or the results the cloud's OCR step computed."""

    def available(self) -> bool:
        """Whether pages can be read at all here (the engine is installed)."""
        ...

    def page_lines(self, document: pdfium.PdfDocument, index: int) -> list[Line] | None:
        """The OCR lines of page `index` in PDF points, in reading order; None where they are
        read elsewhere, later (the page is then listed in `ocr_pending`)."""
        ...


_OCR_SHARE = 0.5

# A page with fewer characters of text than this, and something drawn on it, is read by OCR:
# a scan with a stamped page number has a text layer, but not a usable one.
_MIN_TEXT_CHARS = 16


@dataclass(frozen=True)
class ConvertLimits:
    """Bounds that keep a pathological PDF from running away with the process."""

    max_pages: int = 5000
    timeout_s: float = 300.0


def pages_from_pdf(
    data: bytes,
    *,
    fallback_title: str = "",
    limits: ConvertLimits = ConvertLimits(),
    ocr: PageOcr | None = None,
    on_page: ProgressFn | None = None,
) -> ConvertedDocument:
    """Convert PDF bytes to markdown pages; raises a `ConversionError` subclass on bad input.

    With `LocalOcr`, pages without a usable text layer are rendered and read by OCR; with
    `OcrResults`, their lines come from those results (the pages missing there are listed in
    `ocr_pending`); without either (or where the OCR engine is not installed), a PDF of mostly
    such pages is refused with `NeedsOcrError`."""
    if not data:
        raise EmptyPdfError("the file is empty (0 bytes): upload the PDF again")
    document = open_pdf(data)
    try:
        return _convert(
            document, fallback_title=fallback_title, limits=limits, ocr=ocr, on_page=on_page
        )
    except pdfium.PdfiumError as exc:
        raise damaged_error(exc) from exc
    finally:
        document.close()


def open_pdf(data: bytes) -> pdfium.PdfDocument:
    """The PDF opened with its forms; a typed `ConversionError` where it cannot be."""
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == pdfium_c.FPDF_ERR_PASSWORD:
            raise EncryptedPdfError(
                "the PDF is encrypted with a password: upload a copy without a password"
            ) from exc
        if not data.lstrip()[:5].startswith(b"%PDF"):
            raise MalformedPdfError(
                "the file is not a PDF (no %PDF header): upload the document as a PDF"
            ) from exc
        raise damaged_error(exc) from exc
    # Before any page is loaded: PDFium then tracks the pages' form fields, whose values become
    # page text and appear in renders for OCR. A broken form leaves the page text as it is.
    with contextlib.suppress(pdfium.PdfiumError):
        document.init_forms()
    return document


def damaged_error(exc: pdfium.PdfiumError) -> MalformedPdfError:
    """The error for a PDF that PDFium cannot read."""
    return MalformedPdfError(
        f"the PDF is damaged and cannot be read ({exc}): "
        "re-export or repair it, then upload it again"
    )


def _convert(
    document: pdfium.PdfDocument,
    *,
    fallback_title: str,
    limits: ConvertLimits,
    ocr: PageOcr | None,
    on_page: ProgressFn | None,
) -> ConvertedDocument:
    count = len(document)
    if count == 0:
        raise EmptyPdfError("the PDF has no pages: upload a PDF with content")
    if count > limits.max_pages:
        raise PdfTooLargeError(
            f"the PDF has {count} pages; the limit is {limits.max_pages} "
            "(DOCCHAT_MAX_PAGES): split the document or raise the limit"
        )
    deadline = time.monotonic() + limits.timeout_s
    probes = Probes()
    if ocr is not None and not ocr.available():
        ocr = None
    raw_pages: list[RawPage] = []
    for index in range(count):
        if time.monotonic() > deadline:
            raise ConversionTimeoutError(
                f"conversion stopped after {limits.timeout_s:g} s at page {index + 1} of {count} "
                "(DOCCHAT_CONVERT_TIMEOUT_S): split the document or raise the limit"
            )
        raw_pages.append(_read_page(document, index, ocr, probes))
        if on_page:
            on_page(index + 1, count)

    # After the pages are loaded PDFium finds an outline entry's page quickly.
    outline = outline_by_page(document, count)
    textless = sum(page.chars == 0 for page in raw_pages)
    pending = [i + 1 for i, page in enumerate(raw_pages) if page.ocr_pending]
    if ocr is None:
        _check_has_text(raw_pages, textless)
    elif textless == count and not pending:
        _check_ocr_found_text(raw_pages)
    drop_running_lines(raw_pages)
    for page in raw_pages:
        built = paragraphs_of(page.lines)
        page.paragraphs = split_at_bullets(built) + page.fields
    if outline:
        mark_outline_headings(raw_pages, outline)
    else:
        mark_size_headings(raw_pages)
    pages = [
        Page(
            number=i + 1,
            markdown=page_markdown(page),
            chars=page.chars,
            image_only=page.image_only,
            ocr=page.ocr,
        )
        for i, page in enumerate(raw_pages)
    ]
    return ConvertedDocument(
        title=document_title(document, raw_pages, fallback_title),
        pages=pages,
        pages_without_text=textless,
        used_outline=bool(outline),
        ocr_pending=pending,
    )


def _check_has_text(raw_pages: list[RawPage], textless: int) -> None:
    total = len(raw_pages)
    image_only = sum(page.image_only for page in raw_pages)
    if textless == total and image_only == 0:
        raise EmptyPdfError(f"none of the {total} pages has any text or image: nothing to index")
    if textless == total or image_only >= _OCR_SHARE * total:
        raise NeedsOcrError(
            f"no text layer on {textless} of {total} pages (scanned images): "
            "run OCR on it (for example with ocrmypdf) and upload the result"
        )


def _check_ocr_found_text(raw_pages: list[RawPage]) -> None:
    total = len(raw_pages)
    if not any(page.image_only or page.ocr for page in raw_pages):
        raise EmptyPdfError(f"none of the {total} pages has any text or image: nothing to index")
    raise EmptyPdfError(
        f"none of the {total} pages has any text, and OCR found none in their images: "
        "nothing to index (if the pages do show text, scan them again at a higher resolution)"
    )


def _read_page(
    document: pdfium.PdfDocument,
    index: int,
    ocr: PageOcr | None,
    probes: Probes,
) -> RawPage:
    try:
        page = document[index]
    except pdfium.PdfiumError:
        return RawPage(lines=[], chars=0, image_only=False)  # a damaged page reads as blank
    try:
        textpage = page.get_textpage()
        try:
            lines, tables = text_lines(page, textpage, probes)
            box = page.get_cropbox()
            lines = footnotes_last(without_margin_notes(on_page(lines, box)))
            lines = with_tables(lines, on_page(tables, box))
        finally:
            textpage.close()
        chars = text_chars(lines)
        image_only = chars == 0 and _has_image(page)
        wants_ocr = ocr is not None and _needs_ocr(page, chars)
        fields = form_fields(document, page)
    finally:
        # Closing the page frees the images PDFium decoded to draw it (a scan's can take
        # hundreds of MiB) before OCR needs its own memory.
        page.close()
    ocr_lines = ocr.page_lines(document, index) if ocr is not None and wants_ocr else None
    # What the page shows wins over a text layer as short, which is then often glyph codes of a
    # font that maps none to characters ('"7+%-' where the page shows "Phone").
    if ocr_lines and text_chars(ocr_lines) >= chars:
        ocr_lines = _with_ocr_tables(ocr_lines)
        return RawPage(
            lines=ocr_lines,
            chars=text_chars(ocr_lines),
            image_only=image_only,
            ocr=True,
            fields=fields,
        )
    return RawPage(
        lines=lines,
        chars=chars + sum(text_chars(p.lines) for p in fields),
        image_only=image_only and not fields,
        fields=fields,
        ocr_pending=wants_ocr and ocr_lines is None,
    )


def _with_ocr_tables(lines: list[Line]) -> list[Line]:
    """An OCR'd page's lines with its tables as lines of their own (as a text layer's)."""
    kept, found = ocr_tables(lines)
    return with_tables(kept, [table_line(table) for table in found])


def _needs_ocr(page: pdfium.PdfPage, chars: int) -> bool:
    return chars < _MIN_TEXT_CHARS and _has_drawing(page)


def _has_image(page: pdfium.PdfPage) -> bool:
    return _has_object(page, (pdfium_c.FPDF_PAGEOBJ_IMAGE, pdfium_c.FPDF_PAGEOBJ_FORM))


def _has_drawing(page: pdfium.PdfPage) -> bool:
    """Whether anything is drawn on the page that could show text: an image, a form object,
    vector paths (text drawn as outlines) or text in fonts that map no glyph to a character."""
    return int(pdfium_c.FPDFPage_CountObjects(page.raw)) > 0


def _has_object(page: pdfium.PdfPage, kinds: tuple[int, ...]) -> bool:
    raw = page.raw
    for i in range(min(pdfium_c.FPDFPage_CountObjects(raw), 1000)):
        if pdfium_c.FPDFPageObj_GetType(pdfium_c.FPDFPage_GetObject(raw, i)) in kinds:
            return True
    return False


def page_furniture(data: bytes) -> list[tuple[int, str]]:
    """(page number, text) of each running header, footer and bare page number that
    conversion leaves out of a PDF's pages."""
    document = open_pdf(data)
    try:
        probes = Probes()
        raw_pages = [_read_page(document, index, None, probes) for index in range(len(document))]
    finally:
        document.close()
    return [
        (number, line.text)
        for number, lines in enumerate(drop_running_lines(raw_pages), start=1)
        for line in lines
    ]
