"""PDF bytes -> one markdown page per PDF page (pypdfium2), with headings and paragraphs."""

from __future__ import annotations

import contextlib
import ctypes
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docchat.errors import (
    ConversionTimeoutError,
    EmptyPdfError,
    EncryptedPdfError,
    MalformedPdfError,
    ModelFileError,
    NeedsOcrError,
    PdfTooLargeError,
)
from docchat.ingest.ocr import Image, OcrLine, OcrOptions, available, engine
from docchat.models import ConvertedDocument, OcrPage, OcrText, Page

ProgressFn = Callable[[int, int], None]
_T = TypeVar("_T")

_LINE = re.compile(r"\S(?:[^\r\n]*\S)?")  # a line without its outer spaces
_SPACES = re.compile(r" +")
_SYMBOLIC = 4  # the Symbolic flag of a PDF font descriptor (PDF 32000-1, 9.8.2)
_TRAILING_MARK = re.compile(r" +(\d{1,3}|[*\u2020\u2021]{1,3})$")
# PDFium marks a hyphen it found at a line break with U+FFFE (or U+0002).
_SOFT_HYPHENS = "\ufffe\x02\xad"
_NEEDS_CLEANING = re.compile(r"[\x00-\x1f\x7f\xad\ufffe\ufeff⟦⟧]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\ufeff]")
_SENTENCE_END = (".", "!", "?", ":", ";")
_MARKDOWN_START = re.compile(r"^(#|```|~~~|>)")
_OCR_SHARE = 0.5
# The resolution a page OCR found nothing on is read at once more (`_ocr_closer`).
CLOSER_DPI = 250
# A page with fewer characters of text than this, and something drawn on it, is read by OCR:
# a scan with a stamped page number has a text layer, but not a usable one.
_MIN_TEXT_CHARS = 16
_MAX_OUTLINE_ITEMS = 10_000
_MAX_LEVEL = 3
_MAX_HEADING = 120  # characters
_COLUMN_PROBE = 12  # wide lines looked at for columns run together
_COLUMN_MISSES = 8  # wide lines without a column gap that settle it
_COLUMN_PROBE_PAGES = 10  # pages without columns run together after which none are expected


@dataclass(frozen=True)
class ConvertLimits:
    """Bounds that keep a pathological PDF from running away with the process."""

    max_pages: int = 5000
    timeout_s: float = 300.0


@dataclass
class _Line:
    text: str
    size: float
    bold: bool
    x: float
    y: float
    right: float
    y_end: float = 0.0  # baseline of the last glyph: PDFium joins hyphenated lines itself


@dataclass
class _Paragraph:
    lines: list[_Line]
    heading_level: int = 0

    @property
    def size(self) -> float:
        return self.lines[0].size

    @property
    def text(self) -> str:
        return _join_lines([line.text for line in self.lines])


@dataclass
class _RawPage:
    lines: list[_Line]
    chars: int
    image_only: bool
    # Built from `lines` once the running headers and footers are gone.
    paragraphs: list[_Paragraph] = field(default_factory=list)
    ocr: bool = False
    # The page's filled-in form fields, after its text.
    fields: list[_Paragraph] = field(default_factory=list)
    # The page needs OCR that `OcrResults` did not bring (read elsewhere, later).
    ocr_pending: bool = False


@dataclass(frozen=True)
class OcrResults:
    """OCR read elsewhere, by page number: the cloud's OCR step (`ocr_pages`) runs the engine
    and Convert reads its results. A page that needs OCR but is not here is reported in
    `ConvertedDocument.ocr_pending` and read without it."""

    lines: dict[int, list[_Line]] = field(default_factory=dict)

    @classmethod
    def of(cls, pages: Iterable[OcrPage]) -> OcrResults:
        return cls({page.number: [_from_text(line) for line in page.lines] for page in pages})


OcrSource = OcrOptions | OcrResults


def pages_from_pdf(
    data: bytes,
    *,
    fallback_title: str = "",
    limits: ConvertLimits = ConvertLimits(),
    ocr: OcrSource | None = None,
    on_page: ProgressFn | None = None,
) -> ConvertedDocument:
    """Convert PDF bytes to markdown pages; raises a `ConversionError` subclass on bad input.

    With `ocr` options, pages without a usable text layer are rendered and read by OCR; with
    `OcrResults`, their lines come from those results (the pages missing there are listed in
    `ocr_pending`); without either (or where the OCR engine is not installed), a PDF of mostly
    such pages is refused with `NeedsOcrError`."""
    if not data:
        raise EmptyPdfError("the file is empty (0 bytes): upload the PDF again")
    document = _open(data)
    try:
        return _convert(
            document, fallback_title=fallback_title, limits=limits, ocr=ocr, on_page=on_page
        )
    except pdfium.PdfiumError as exc:
        raise _damaged(exc) from exc
    finally:
        document.close()


def _open(data: bytes) -> pdfium.PdfDocument:
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
        raise _damaged(exc) from exc
    # Before any page is loaded: PDFium then tracks the pages' form fields, whose values become
    # page text and appear in renders for OCR. A broken form leaves the page text as it is.
    with contextlib.suppress(pdfium.PdfiumError):
        document.init_forms()
    return document


def _damaged(exc: pdfium.PdfiumError) -> MalformedPdfError:
    return MalformedPdfError(
        f"the PDF is damaged and cannot be read ({exc}): "
        "re-export or repair it, then upload it again"
    )


def _convert(
    document: pdfium.PdfDocument,
    *,
    fallback_title: str,
    limits: ConvertLimits,
    ocr: OcrSource | None,
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
    probe = _ColumnProbe()
    if isinstance(ocr, OcrOptions) and not available():
        ocr = None
    raw_pages: list[_RawPage] = []
    for index in range(count):
        if time.monotonic() > deadline:
            raise ConversionTimeoutError(
                f"conversion stopped after {limits.timeout_s:g} s at page {index + 1} of {count} "
                "(DOCCHAT_CONVERT_TIMEOUT_S): split the document or raise the limit"
            )
        raw_pages.append(_read_page(document, index, ocr, probe))
        if on_page:
            on_page(index + 1, count)

    # After the pages are loaded PDFium finds an outline entry's page quickly.
    outline = _outline_by_page(document, count)
    textless = sum(page.chars == 0 for page in raw_pages)
    pending = [i + 1 for i, page in enumerate(raw_pages) if page.ocr_pending]
    if ocr is None:
        _check_has_text(raw_pages, textless)
    elif textless == count and not pending:
        _check_ocr_found_text(raw_pages)
    _drop_running_lines(raw_pages)
    for page in raw_pages:
        built = _paragraphs(page.lines)
        page.paragraphs = _split_at_bullets(built) + page.fields
    if outline:
        _mark_outline_headings(raw_pages, outline)
    else:
        _mark_size_headings(raw_pages)
    pages = [
        Page(
            number=i + 1,
            markdown=_markdown(page),
            chars=page.chars,
            image_only=page.image_only,
            ocr=page.ocr,
        )
        for i, page in enumerate(raw_pages)
    ]
    return ConvertedDocument(
        title=_title(document, raw_pages, fallback_title),
        pages=pages,
        pages_without_text=textless,
        used_outline=bool(outline),
        ocr_pending=pending,
    )


def _check_has_text(raw_pages: list[_RawPage], textless: int) -> None:
    total = len(raw_pages)
    image_only = sum(page.image_only for page in raw_pages)
    if textless == total and image_only == 0:
        raise EmptyPdfError(f"none of the {total} pages has any text or image: nothing to index")
    if textless == total or image_only >= _OCR_SHARE * total:
        raise NeedsOcrError(
            f"no text layer on {textless} of {total} pages (scanned images): "
            "run OCR on it (for example with ocrmypdf) and upload the result"
        )


def _check_ocr_found_text(raw_pages: list[_RawPage]) -> None:
    total = len(raw_pages)
    if not any(page.image_only or page.ocr for page in raw_pages):
        raise EmptyPdfError(f"none of the {total} pages has any text or image: nothing to index")
    raise EmptyPdfError(
        f"none of the {total} pages has any text, and OCR found none in their images: "
        "nothing to index (if the pages do show text, scan them again at a higher resolution)"
    )


# --- reading a page -------------------------------------------------------------------------


def _read_page(
    document: pdfium.PdfDocument,
    index: int,
    ocr: OcrSource | None,
    probe: _ColumnProbe | None = None,
) -> _RawPage:
    try:
        page = document[index]
    except pdfium.PdfiumError:
        return _RawPage(lines=[], chars=0, image_only=False)  # a damaged page reads as blank
    try:
        textpage = page.get_textpage()
        try:
            lines = _footnotes_last(
                _without_margin_notes(
                    _on_page(_lines(textpage, page.get_width(), probe), page.get_cropbox())
                )
            )
        finally:
            textpage.close()
        chars = _chars(lines)
        image_only = chars == 0 and _has_image(page)
        wants_ocr = ocr is not None and _needs_ocr(page, chars)
        render = _render(page, ocr) if wants_ocr and isinstance(ocr, OcrOptions) else None
        fields = _form_fields(document, page)
    finally:
        # Closing the page frees the images PDFium decoded to draw it (a scan's can take
        # hundreds of MiB) before OCR needs its own memory.
        page.close()
    ocr_lines: list[_Line] | None = None
    if render and isinstance(ocr, OcrOptions):
        ocr_lines = _ocr_lines(*render, threads=ocr.threads) or _ocr_closer(document, index, ocr)
    elif wants_ocr and isinstance(ocr, OcrResults):
        ocr_lines = ocr.lines.get(index + 1)
    # What the page shows wins over a text layer as short, which is then often glyph codes of a
    # font that maps none to characters ('"7+%-' where the page shows "Phone").
    if ocr_lines and _chars(ocr_lines) >= chars:
        return _RawPage(
            lines=ocr_lines,
            chars=_chars(ocr_lines),
            image_only=image_only,
            ocr=True,
            fields=fields,
        )
    return _RawPage(
        lines=lines,
        chars=chars + sum(_chars(p.lines) for p in fields),
        image_only=image_only and not fields,
        fields=fields,
        ocr_pending=ocr_lines is None and wants_ocr and isinstance(ocr, OcrResults),
    )


def ocr_pages(data: bytes, numbers: Iterable[int], *, options: OcrOptions) -> list[OcrPage]:
    """The OCR lines of the pages `numbers` (1-based) of a PDF, read exactly as
    `pages_from_pdf` reads a page without a usable text layer: the cloud's OCR step runs this
    where the engine is installed, and Convert takes the results as `OcrResults`."""
    document = _open(data)
    try:
        found = []
        for number in numbers:
            try:
                page = document[number - 1]
            except (pdfium.PdfiumError, IndexError):
                found.append(OcrPage(number=number, lines=[]))  # a damaged page reads as blank
                continue
            try:
                render = _render(page, options)
            finally:
                page.close()  # its decoded images go before OCR needs the memory
            lines = _ocr_lines(*render, threads=options.threads)
            lines = lines or _ocr_closer(document, number - 1, options)
            found.append(OcrPage(number=number, lines=[_to_text(line) for line in lines]))
        return found
    except pdfium.PdfiumError as exc:
        raise _damaged(exc) from exc
    finally:
        document.close()


def _to_text(line: _Line) -> OcrText:
    return OcrText(
        text=line.text, size=line.size, x=line.x, y=line.y, right=line.right, y_end=line.y_end
    )


def _from_text(line: OcrText) -> _Line:
    return _Line(line.text, line.size, False, line.x, line.y, line.right, line.y_end)


# --- form fields ----------------------------------------------------------------------------

_MAX_FIELDS = 2000  # per page
_CHOICE_FIELDS = (pdfium_c.FPDF_FORMFIELD_COMBOBOX, pdfium_c.FPDF_FORMFIELD_LISTBOX)
_TICKED_FIELDS = (pdfium_c.FPDF_FORMFIELD_CHECKBOX, pdfium_c.FPDF_FORMFIELD_RADIOBUTTON)


def _form_fields(document: pdfium.PdfDocument, page: pdfium.PdfPage) -> list[_Paragraph]:
    """The page's filled-in AcroForm fields, one "label: value" paragraph each, in the order
    of the page's widgets. The text layer never holds them: they live in the form."""
    form = document.formenv
    if form is None:
        return []
    found: list[_Paragraph] = []
    seen: set[tuple[str, str]] = set()
    for index in range(min(pdfium_c.FPDFPage_GetAnnotCount(page.raw), _MAX_FIELDS)):
        annot = pdfium_c.FPDFPage_GetAnnot(page.raw, index)
        if not annot:
            continue
        try:
            field = _field_text(form.raw, annot)
        finally:
            pdfium_c.FPDFPage_CloseAnnot(annot)
        if field and field not in seen:  # radio buttons: one widget per choice, one value
            seen.add(field)
            line = _Line(f"{field[0]}: {field[1]}", 0.0, False, 0.0, 0.0, 0.0)
            found.append(_Paragraph([line]))
    return found


def _field_text(form: Any, annot: Any) -> tuple[str, str] | None:
    if pdfium_c.FPDFAnnot_GetSubtype(annot) != pdfium_c.FPDF_ANNOT_WIDGET:
        return None
    kind = pdfium_c.FPDFAnnot_GetFormFieldType(form, annot)
    if kind in _TICKED_FIELDS:
        if not pdfium_c.FPDFAnnot_IsChecked(form, annot):
            return None
        export = _utf16(pdfium_c.FPDFAnnot_GetFormFieldExportValue, form, annot)
        value = export if export and export.casefold() not in ("on", "yes") else "yes"
    elif kind == pdfium_c.FPDF_FORMFIELD_TEXTFIELD or kind in _CHOICE_FIELDS:
        value = _utf16(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annot)
    else:
        return None  # push buttons, signatures: no value a reader fills in
    value = _CONTROL.sub(" ", value).strip()
    if not value:
        return None
    label = _utf16(pdfium_c.FPDFAnnot_GetFormFieldAlternateName, form, annot) or _short_name(
        _utf16(pdfium_c.FPDFAnnot_GetFormFieldName, form, annot)
    )
    return _CONTROL.sub(" ", label).strip() or "field", value


def _short_name(name: str) -> str:
    """A field's own name without its parents' ("form1[0].page1[0].city[0]" -> "city")."""
    return re.sub(r"\[\d+\]$", "", name.rsplit(".", 1)[-1])


def _utf16(getter: Callable[..., int], form: Any, annot: Any) -> str:
    """A UTF-16 string from one of PDFium's two-call getters (size first, then the text)."""
    size = getter(form, annot, None, 0)
    if size <= 2:
        return ""
    buffer = ctypes.create_string_buffer(size)
    getter(form, annot, ctypes.cast(buffer, ctypes.POINTER(pdfium_c.FPDF_WCHAR)), size)
    return buffer.raw[: size - 2].decode("utf-16-le", errors="replace")


def _chars(lines: list[_Line]) -> int:
    return sum(len(line.text) - line.text.count(" ") for line in lines)


def _needs_ocr(page: pdfium.PdfPage, chars: int) -> bool:
    return chars < _MIN_TEXT_CHARS and _has_drawing(page)


def _render(page: pdfium.PdfPage, options: OcrOptions) -> tuple[Image, float]:
    """The page as a grey image for OCR (a copy PDFium no longer owns), and its pixels per
    point: `options.dpi`, less where the page is so large the image would pass `max_pixels`."""
    width, height = page.get_size()
    scale = min(options.dpi / 72, (options.max_pixels / max(width * height, 1.0)) ** 0.5)
    bitmap = page.render(scale=scale, grayscale=True, may_draw_forms=True)
    try:
        image: Image = bitmap.to_numpy().copy()
    finally:
        bitmap.close()
    return image, scale


def _ocr_closer(document: pdfium.PdfDocument, index: int, options: OcrOptions) -> list[_Line]:
    """A page OCR found nothing on, read once more at CLOSER_DPI: the detector misses small
    print set apart in a drawing at 150 and 200 DPI (the 9 pt speech bubble of pdfminer's
    `pdf-with-jbig2.pdf`) and finds it at 250; a blank scan costs a second, larger read."""
    if options.dpi >= CLOSER_DPI:
        return []
    page = document[index]
    try:
        render = _render(page, replace(options, dpi=CLOSER_DPI))
    finally:
        page.close()
    return _ocr_lines(*render, threads=options.threads)


def _ocr_lines(image: Image, scale: float, *, threads: int) -> list[_Line]:
    """The lines OCR reads in a page image, in PDF points, in reading order."""
    try:
        found = engine(threads=threads).lines(image)
    except ModelFileError as exc:
        raise NeedsOcrError(
            f"a page has no text layer and OCR is not available here ({exc}); or run OCR "
            "on the file (for example with ocrmypdf) and upload the result"
        ) from exc
    # A line with no letter or digit is the detector reading a stroke of a drawing ("_").
    words = [line for line in found if any(c.isalnum() for c in line.text)]
    lines = _even_sizes([_ocr_line(line, scale, image.shape[0]) for line in words])
    if _looks_multi_column(lines, image.shape[1] / scale):
        return _column_order(lines)
    return lines


def _even_sizes(lines: list[_Line]) -> list[_Line]:
    """OCR boxes of one font size differ by a point or two: lines near the page's typical
    height get exactly that height, so only clearly larger lines can become headings."""
    if not lines:
        return lines
    typical = sorted(line.size for line in lines)[len(lines) // 2]
    for line in lines:
        if abs(line.size - typical) <= 0.25 * typical:
            line.size = typical
    return lines


# A list item's bullet ("!" is how PDFium reads a symbol font's bullet when the line is not
# measured glyph by glyph).
_BULLET = re.compile(r"[•▪◦○●■□❏➢►!]\s")


def _split_at_bullets(paragraphs: list[_Paragraph]) -> list[_Paragraph]:
    """A list item starts a paragraph: its lines are not run into the item before it."""
    out: list[_Paragraph] = []
    for paragraph in paragraphs:
        current = _Paragraph([], paragraph.heading_level)
        for line in paragraph.lines:
            if current.lines and _BULLET.match(line.text):
                out.append(current)
                current = _Paragraph([])
            current.lines.append(line)
        out.append(current)
    return out


def _ocr_line(line: OcrLine, scale: float, image_height: int) -> _Line:
    # The box's bottom stands for the baseline and its height for the font size: both are
    # only compared with other lines' (paragraph breaks, headings), never taken as exact.
    bottom = (image_height - line.bottom) / scale
    text = _clean(line.text) if _NEEDS_CLEANING.search(line.text) else line.text
    return _Line(
        text=text,
        size=float(round((line.bottom - line.top) / scale)),
        bold=False,
        x=line.left / scale,
        y=bottom,
        right=line.right / scale,
        y_end=bottom,
    )


def _on_page(lines: list[_Line], box: tuple[float, float, float, float]) -> list[_Line]:
    """Lines that start inside the visible page: text placed off the page is never seen."""
    left, bottom, right, top = box
    if not any(line.size for line in lines):  # no geometry to judge by
        return lines
    margin = 2.0
    return [
        line
        for line in lines
        if left - margin <= line.x <= right + margin and bottom - margin <= line.y <= top + margin
    ]


@dataclass
class _ColumnProbe:
    """Whether to look for columns run into single lines: a document that has them shows them
    within its first pages; one that does not is not searched on every page."""

    pages: int = 0
    found: bool = False

    def wanted(self) -> bool:
        return self.found or self.pages < _COLUMN_PROBE_PAGES

    def record(self, *, found: bool) -> None:
        self.pages += 1
        self.found = self.found or found


def _lines(
    textpage: pdfium.PdfTextPage, width: float, probe: _ColumnProbe | None = None
) -> list[_Line]:
    """Lines of a page in reading order, each with its first glyph's size and place."""
    count = textpage.count_chars()
    if count <= 0:
        return []
    text = textpage.get_text_range(0, count)
    if len(text) != count:
        # PDFium's text leaves out some hyphen markers inside lines (IRS forms): rebuild it
        # glyph by glyph so that indices line up with PDFium's and the geometry stays usable.
        text = _text_by_glyph(textpage, count)
    if len(text) != count:  # indices would not line up with PDFium's: keep its order, no geometry
        return [_Line(line.strip(), 0.0, False, 0.0, 0.0, 0.0) for line in _plain_lines(text)]
    glyphs = _Glyphs(textpage)
    spans = [glyphs.without_mark(text, *m.span()) for m in _LINE.finditer(text)]
    lines = [glyphs.line(text, start, end) for start, end in spans]
    columns = _looks_multi_column(lines, width)
    if not columns and probe and probe.wanted():
        columns = _runs_columns_together(glyphs, text, spans, lines, width)
        probe.record(found=columns)
    if columns:
        # PDFium runs side-by-side columns that share a baseline into one line: split them at
        # gaps, then read each column top to bottom. A wide space in justified text is no
        # column gap: cut where the text jumps back left, where the gap is very wide, or where
        # the text after it starts at a left edge that many pieces of the page share.
        gaps = [glyphs.gaps(text, *span) for span in spans]
        edges = [line.x for line in lines] + [gap.next_x for found in gaps for gap in found]
        starts = _column_starts(edges, tolerance=3.0, share=0.1)
        spans = [
            piece
            for span, found in zip(spans, gaps, strict=True)
            for piece in _pieces(*span, [g for g in found if _is_column_gap(g, starts)])
        ]
    # A margin note run into a line of text is set in another size ("CAUTION to file Form
    # 3520-A" has the note in 4 pt, the text in 9 pt): it becomes a line of its own.
    cut = [piece for span in spans for piece in _pieces(*span, glyphs.note_cuts(text, *span))]
    if columns or len(cut) != len(spans):
        lines = [glyphs.line(text, start, end) for start, end in cut]
    return _column_order(lines) if columns else lines


def _text_by_glyph(textpage: pdfium.PdfTextPage, count: int) -> str:
    """The page's text with exactly one character per PDFium glyph index."""
    unicode = pdfium_c.FPDFText_GetUnicode
    raw = textpage.raw
    chars = []
    for index in range(count):
        code = unicode(raw, index)
        valid = 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF
        chars.append(chr(code) if valid else " ")
    return "".join(chars)


def _plain_lines(text: str) -> Iterator[str]:
    for match in _LINE.finditer(text):
        line = _clean(match.group())
        if line.strip():
            yield line


class _Glyphs:
    """Per-glyph geometry through PDFium's C API: one call per glyph asked about."""

    def __init__(self, textpage: pdfium.PdfTextPage) -> None:
        self._raw = textpage.raw
        self._rect = pdfium_c.FS_RECTF()

    def box(self, index: int) -> tuple[float, float, float, float]:
        """The glyph's loose box (left, bottom, right, height): the font's full height, so
        every glyph of one font and size gets the same bottom and height."""
        rect = self._rect
        pdfium_c.FPDFText_GetLooseCharBox(self._raw, index, rect)
        return rect.left, rect.bottom, rect.right, rect.top - rect.bottom

    def line(self, text: str, start: int, end: int) -> _Line:
        raw = self._raw
        x, y, _right, size = self.box(start)
        _left, y_end, right, _height = self.box(end - 1)
        # A bullet is set in a font of its own: the line's size and weight are its text's.
        bullet = _BULLET.match(text, start, end)
        first = start + len(bullet.group()) if bullet and bullet.end() < end else start
        if first != start:
            size = self.box(first)[3]
        weight = pdfium_c.FPDFText_GetFontWeight
        # Only short lines can be headings; a long line's weight is never asked for.
        bold = end - start <= _MAX_HEADING and weight(raw, first) >= 600 <= weight(raw, end - 1)
        content = text[start:end]
        if _NEEDS_CLEANING.search(content):
            content = _clean(content)
        if bullet and content[0].isascii() and self._symbolic(start):
            content = "•" + content[1:]  # a symbol font's bullet that PDFium reads as "!"
        return _Line(content.strip(), round(size, 1), bold, x, y, right, y_end)

    def _symbolic(self, index: int) -> bool:
        """Whether the glyph's font is a symbol font (Wingdings, WP Typographic Symbols), whose
        character codes say nothing of the glyph drawn."""
        flags = ctypes.c_int()
        pdfium_c.FPDFText_GetFontInfo(self._raw, index, None, 0, ctypes.byref(flags))
        return bool(flags.value & _SYMBOLIC)

    def without_mark(self, text: str, start: int, end: int) -> tuple[int, int]:
        """The line without a footnote mark that PDFium put at its end though it is set back
        in the line, raised and smaller ("… services that 2" / "are used", the "2" after a
        word further left): it would read as a word of the sentence."""
        if not (text[end - 1].isdigit() or text[end - 1] in "*\u2020\u2021"):
            return start, end  # most lines: no regex run over them
        tail = _TRAILING_MARK.search(text, max(start, end - 8), end)
        if tail is None or tail.start() == start:
            return start, end
        mark, before = self.box(tail.start(1)), self.box(tail.start() - 1)
        smaller = mark[3] < 0.75 * before[3]
        back_and_up = mark[0] < before[0] and mark[1] > before[1]
        return (start, tail.start()) if smaller and back_and_up else (start, end)

    def note_cuts(self, text: str, start: int, end: int) -> list[_Gap]:
        """Where a margin note set in another size or weight runs into the line's text, at its
        start or its end, apart from it by more than a word space: the space between them."""
        # Most lines neither start nor end with capitals or an icon: no glyph is asked about.
        head, tail = text[start : start + 3], text[max(start, end - 3) : end]
        if not (head.isupper() or tail.isupper() or _ICON.match(head) or _ICON.match(tail[-1])):
            return []
        line = text[start:end]
        if not (
            _looks_like_note(line.partition(" ")[0]) or _looks_like_note(line.rpartition(" ")[2])
        ):
            return []
        if not self._style_differs(start, end - 1):
            return []
        spaces = list(_SPACES.finditer(text, start, end))
        for space in (spaces[:1] + spaces[-1:]) if spaces else []:
            before, after = space.start() - 1, space.end()
            left, right = self.box(before), self.box(after)
            size = max(left[3], right[3], 1.0)
            apart = not -size <= right[0] - left[2] < 0.45 * size
            if not apart or not self._style_differs(before, after):
                continue
            leading = space is spaces[0]
            note = text[start : space.start()] if leading else text[space.end() : end]
            # One icon opening a line is its bullet ("! The provider must…" in the DMCA).
            if _looks_like_note(note) and not (leading and len(note) == 1):
                return [_Gap(space.start(), space.end(), right[0], 0.0)]
        return []

    def _style_differs(self, one: int, other: int) -> bool:
        if _size_differs(self.box(one)[3], self.box(other)[3]):
            return True
        weight = pdfium_c.FPDFText_GetFontWeight
        bold = bool(weight(self._raw, one) >= 600)
        return bold != bool(weight(self._raw, other) >= 600)

    def gaps(self, text: str, start: int, end: int) -> list[_Gap]:
        """Places in a line where a column may end: wide gaps and jumps back to the left."""
        size = max(self.box(start)[3], 1.0)
        found = []
        for match in _SPACES.finditer(text, start, end):
            if not pdfium_c.FPDFText_IsGenerated(self._raw, match.start()):
                continue  # a space the PDF itself contains separates words, not columns
            before = self.box(match.start() - 1)[2]
            after = self.box(match.end())[0]
            if not -size < after - before < 1.1 * size:
                found.append(
                    _Gap(match.start(), match.end(), after, (after - before) / size, before)
                )
        return found


def _size_differs(a: float, b: float) -> bool:
    return max(a, b) > 1.5 * max(min(a, b), 0.1)


@dataclass(frozen=True)
class _Gap:
    start: int
    end: int
    next_x: float  # where the text after the gap begins
    width: float  # in font sizes; negative for a jump back to the left
    before_x: float = 0.0  # where the text before the gap ends


def _is_column_gap(gap: _Gap, starts: list[float]) -> bool:
    if gap.width < 0 or gap.width >= 2.0:
        return True
    return any(abs(gap.next_x - x) <= 3 for x in starts)


def _pieces(start: int, end: int, cuts: list[_Gap]) -> Iterator[tuple[int, int]]:
    for cut in cuts:
        yield start, cut.start
        start = cut.end
    yield start, end


def _looks_multi_column(lines: list[_Line], width: float) -> bool:
    if len(lines) < 6 or width <= 0:
        return False
    margin = min(line.x for line in lines)
    inner = sum(line.x > margin + 0.25 * width for line in lines)
    return inner >= max(3, 0.15 * len(lines))


def _runs_columns_together(
    glyphs: _Glyphs, text: str, spans: list[tuple[int, int]], lines: list[_Line], width: float
) -> bool:
    """Whether PDFium ran side-by-side columns into single lines all down the page (every line
    then starts at the left margin): several wide lines hold a gap of two type sizes or more.
    Only the first wide lines are looked at, so that a page costs little."""
    wide = [
        (span, line)
        for span, line in zip(spans, lines, strict=True)
        if line.right - line.x > width / 2
    ]
    found = 0
    for probed, (span, line) in enumerate(wide[:_COLUMN_PROBE]):
        if probed - found >= _COLUMN_MISSES:
            return False
        gaps = [gap for gap in glyphs.gaps(text, *span) if gap.width >= 0]
        # Pieces of prose on both sides of a wide gap; a table's cells are narrower.
        starts = [line.x] + [gap.next_x for gap in gaps]
        ends = [gap.before_x for gap in gaps] + [line.right]
        pieces = [end - start for start, end in zip(starts, ends, strict=True)]
        found += any(
            gap.width >= 2.0 and min(pieces[i], pieces[i + 1]) > width / 5
            for i, gap in enumerate(gaps)
        )
        if found >= 3:
            return True
    return False


def _column_order(segments: list[_Line]) -> list[_Line]:
    """Read columns left to right within bands that full-width lines separate."""
    if not segments:
        return segments
    size = max(Counter(s.size for s in segments).most_common(1)[0][0], 1.0)
    starts = _column_starts([s.x for s in segments], tolerance=2 * size)
    ordered: list[_Line] = []
    band: list[list[_Line]] = [[] for _ in starts]
    for segment in sorted(segments, key=lambda s: (-round(s.y), s.x)):
        column = max(i for i, x in enumerate(starts) if x <= segment.x + 2 * size or i == 0)
        spans_next = column + 1 < len(starts) and segment.right > starts[column + 1] + 2 * size
        if spans_next:
            ordered.extend(line for col in band for line in col)
            band = [[] for _ in starts]
            ordered.append(segment)
        else:
            band[column].append(segment)
    ordered.extend(line for col in band for line in col)
    return ordered


def _column_starts(xs: list[float], *, tolerance: float, share: float = 0.05) -> list[float]:
    """Left edges shared by at least three pieces of text (and `share` of all): columns."""
    clusters = _clusters(xs, key=float, tolerance=tolerance)
    starts = [min(c) for c in clusters if len(c) >= max(3, share * len(xs))]
    return starts or [min(xs)]


def _clean(line: str) -> str:
    """Keep PDFium's hyphen marker as a trailing '\x02' and drop other control characters."""
    hyphenated = line.rstrip().endswith(tuple(_SOFT_HYPHENS))
    line = _CONTROL.sub("", line).replace("\xad", "").replace("⟦", "[").replace("⟧", "]")
    return line.rstrip() + "\x02" if hyphenated else line


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


def _paragraphs(lines: list[_Line]) -> list[_Paragraph]:
    paragraphs: list[_Paragraph] = []
    widest = _column_rights(lines)
    for prev, line in zip([None, *lines], lines, strict=False):
        if prev is None or _starts_paragraph(prev, line, widest[_bucket(prev.x)]):
            paragraphs.append(_Paragraph([line]))
        else:
            paragraphs[-1].lines.append(line)
    return paragraphs


def _bucket(x: float) -> int:
    return int(x // 12)


def _column_rights(lines: list[_Line]) -> dict[int, float]:
    """For each left edge (in 12 pt steps), the right edge of the widest line starting near it."""
    rights: dict[int, float] = {}
    for line in lines:
        bucket = _bucket(line.x)
        rights[bucket] = max(rights.get(bucket, 0.0), line.right)
    return {bucket: max(rights.get(bucket + step, 0.0) for step in (-1, 0, 1)) for bucket in rights}


def _starts_paragraph(prev: _Line, line: _Line, widest: float) -> bool:
    height = max(prev.size, line.size, 1.0)
    gap = prev.y_end - line.y
    ends_sentence = prev.text.endswith(_SENTENCE_END)
    if gap < -0.5 * height:  # up the page: the next column, where a sentence may go on
        return ends_sentence or not line.text[:1].islower()
    if gap > 1.7 * height:  # blank space
        return True
    if abs(prev.size - line.size) > 0.15 * height or prev.bold != line.bold:
        return True
    short = prev.right < widest - 4 * height
    indented = line.x > prev.x + 0.8 * height
    return ends_sentence and (short or indented)


def _join_lines(lines: list[str]) -> str:
    out = ""
    for line in lines:
        if not out:
            out = line
        elif out.endswith("\x02") or (
            out.endswith("-") and out[-2:-1].isalpha() and line[:1].islower()
        ):
            out = out.rstrip("\x02-") + line
        else:
            out = f"{out} {line}"
    return out.replace("\x02", "-")


# A margin note's label: one word in capitals ("CAUTION", "TIP") or an icon ("!").
_ICON = re.compile(r"[!?*\u2020\u2021\u2022\u25a0-\u27bf]")
_NOTE = re.compile(rf"[A-Z]{{3,15}}|{_ICON.pattern}{{1,3}}")


def _looks_like_note(text: str) -> bool:
    return len(text) <= 20 and bool(_NOTE.fullmatch(text.strip()))


def _without_margin_notes(lines: list[_Line]) -> list[_Line]:
    """Lines without the short labels set in the margin beside the text ("CAUTION", "TIP",
    a "!" icon): read in order they would land inside the sentence they stand next to."""
    if not any(line.size for line in lines):
        return lines
    labels = [line for line in lines if line.size and _looks_like_note(line.text)]
    notes = [line for line in labels if _is_margin_note(line, lines)]
    if not notes:
        return lines
    # A label stacked on a note found beside the text ("!" above "CAUTION") is part of it.
    drop = {id(label) for label in labels for note in notes if _stacked(label, note)}
    return [line for line in lines if id(line) not in drop]


# A footnote's mark in the text: a number or a dagger raised above the line it follows.
_MARK = re.compile(r"\d{1,3}|[*\u2020\u2021]{1,3}")


def _footnotes_last(lines: list[_Line]) -> list[_Line]:
    """Lines without the footnote marks in the text (a raised "1" in a line is read as a line
    of its own, which would end the paragraph there), and with the lines a PDF draws first at
    the foot of the page (footnotes, a footer) read after the rest, as the page is read."""
    if not lines or not all(line.size for line in lines):
        return lines
    kept = [
        line
        for prev, line in zip([None, *lines], lines, strict=False)
        if prev is None or not _is_footnote_mark(line, prev)
    ]
    heights = sorted(line.y for line in kept)
    low = heights[len(heights) // 5]  # the foot: the lowest fifth of the page's lines
    lead = next((i for i, line in enumerate(kept) if line.y > low), 0)
    return kept[lead:] + kept[:lead]


def _is_footnote_mark(mark: _Line, prev: _Line) -> bool:
    """A short mark in under three quarters of the previous line's size, raised above its
    baseline by less than a line, within that line's width."""
    height = max(prev.size, 1.0)
    return (
        bool(_MARK.fullmatch(mark.text.strip()))
        and mark.size < 0.75 * prev.size
        and 0 < mark.y - prev.y_end < height
        and prev.x <= mark.x <= prev.right + 0.5 * height
    )


def _is_margin_note(note: _Line, lines: list[_Line]) -> bool:
    """A short label left of a line of text, set in another size or weight than that text,
    where the text is set in from its column's edge to make room for it."""
    if not note.size or not _looks_like_note(note.text):
        return False
    for other in lines:
        if other is note or not other.size or _looks_like_note(other.text):
            continue
        height = max(other.size, 1.0)
        beside = _overlap(note, other) > 0 or abs(other.y - note.y) <= 0.6 * height
        styled = _size_differs(note.size, other.size) or (note.bold and not other.bold)
        after = -0.5 * height <= other.x - note.right <= 4 * height and other.x > note.x + height
        if beside and styled and after and _set_in(other, lines, edge=note.x - 1.5 * height):
            return True
    return False


def _set_in(text: _Line, lines: list[_Line], *, edge: float) -> bool:
    """Whether lines near `text` start left of it, at `edge` or right of it."""
    height = max(text.size, 1.0)
    return any(
        line.size and edge <= line.x < text.x - height and abs(line.y - text.y) <= 6 * height
        for line in lines
        if not _looks_like_note(line.text)
    )


def _overlap(one: _Line, other: _Line) -> float:
    """How far the two lines' heights overlap (negative: the space between them)."""
    return min(one.y + one.size, other.y + other.size) - max(one.y, other.y)


def _stacked(line: _Line, note: _Line) -> bool:
    across = min(line.right, note.right) - max(line.x, note.x) > 0
    return across and _overlap(line, note) > -0.5 * line.size


# Books set one header on left-hand pages and another on right-hand ones: each is on half.
_RUNNING_SHARE = 0.4
_RUNNING_LINES = 2  # rows at the top and at the bottom of a page where headers and footers sit
_MONTHS = re.compile(
    r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|\d+", re.IGNORECASE
)
_ROMAN = r"(?=[ivxlcdm])m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})"
_DASH = r"[-\u2013\u2014]"
_PAGE_NUMBER = re.compile(
    rf"(page|p\.|seite|pág\.?)?\s*({_DASH}|[(\[])?\s*(\d{{1,4}}|{_ROMAN})\s*({_DASH}|[)\]])?"
    r"(\s*(of|/|von|de)\s*\d{1,4})?",
    re.IGNORECASE,
)


_NUMBER_WORDS = {"0", "page", "of", "p"}


def running_key(text: str) -> str:
    """What a running header or footer keeps from page to page: its numbers and month names
    (page numbers, dates) may change, and so may the dashes and spaces around them."""
    words = re.sub(r"[\W_]+", " ", _MONTHS.sub("0", text.casefold())).split()
    # A page number at either end moves from one end to the other on facing pages.
    while words and words[0] in _NUMBER_WORDS:
        words.pop(0)
    while words and words[-1] in _NUMBER_WORDS:
        words.pop()
    return " ".join(words)


def page_furniture(data: bytes) -> list[tuple[int, str]]:
    """(page number, text) of each running header, footer and bare page number that
    conversion leaves out of a PDF's pages."""
    document = _open(data)
    try:
        probe = _ColumnProbe()
        raw_pages = [_read_page(document, index, None, probe) for index in range(len(document))]
    finally:
        document.close()
    return [
        (number, line.text)
        for number, lines in enumerate(_drop_running_lines(raw_pages), start=1)
        for line in lines
    ]


def _drop_running_lines(raw_pages: list[_RawPage]) -> list[list[_Line]]:
    """Remove page headers and footers (lines that many pages repeat at the same height near the
    top or the bottom, whatever their numbers and dates) and bare page numbers; return the
    lines removed from each page."""
    body = _line_body_size(raw_pages)
    edges = [_edge_lines(page.lines) for page in raw_pages]
    running = {id(line) for line in running_lines(edges, body=body)}
    removed: list[list[_Line]] = []
    for page, edge in zip(raw_pages, edges, strict=True):
        numbers = [line for line in edge if not body or line.size < body * 1.15]
        running.update(id(line) for line in numbers if _is_page_number(line, page.lines))
        kept = [line for line in page.lines if id(line) not in running]
        if not kept:  # a page that says nothing but its header is left as it is
            removed.append([])
            continue
        removed.append([line for line in page.lines if id(line) in running])
        page.lines = kept
    return removed


def running_lines(edges: list[list[_Line]], *, body: float) -> list[_Line]:
    """The lines among each page's edge lines that 40% of the pages (at least 3) repeat at
    one height, numbers and dates aside."""
    pages = len(edges)
    if pages < 3:
        return []
    by_text: dict[str, list[tuple[float, int, _Line]]] = {}
    for number, lines in enumerate(edges):
        for line in lines:
            if body and line.size >= body * 1.15:
                # Text that only its numbers tell apart from other pages' ("Chapter 3") is the
                # document's, not a running header: headers are no larger than the body text.
                continue
            key = running_key(line.text)
            if re.search(r"[^\W\d_]", key):  # numbers alone: a table's last row, say
                by_text.setdefault(key, []).append((line.y, number, line))
    found: list[_Line] = []
    for repeated in by_text.values():
        for cluster in _clusters(repeated, key=lambda item: item[0], tolerance=8.0):
            if len({number for _, number, _ in cluster}) >= max(3, _RUNNING_SHARE * pages):
                found.extend(line for _, _, line in cluster)
    return found


def _edge_lines(lines: list[_Line]) -> list[_Line]:
    """The lines in the top and the bottom rows of a page (first and last lines without
    geometry)."""
    if not any(line.size for line in lines):
        return lines[:_RUNNING_LINES] + lines[_RUNNING_LINES:][-_RUNNING_LINES:]
    rows = list(_clusters(lines, key=lambda line: -line.y, tolerance=2.0))
    edge = rows[:_RUNNING_LINES] + rows[_RUNNING_LINES:][-_RUNNING_LINES:]
    return [line for row in edge for line in row]


def _is_page_number(line: _Line, lines: list[_Line]) -> bool:
    """A page number alone in the top or the bottom row, set apart from the text."""
    if not _PAGE_NUMBER.fullmatch(line.text) or not any(c.isalnum() for c in line.text):
        return False
    others = [other.y for other in lines if other is not line and abs(other.y - line.y) > 2]
    if not others:  # all the page says: keep it
        return False
    if not line.size:
        return True
    clear = 1.5 * line.size
    return all(y > line.y + clear for y in others) or all(y < line.y - clear for y in others)


def _line_body_size(raw_pages: list[_RawPage]) -> float:
    """The font size most of the text has (0 without text)."""
    weights: Counter[float] = Counter()
    for page in raw_pages:
        for line in page.lines:
            weights[line.size] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def _clusters(
    items: Iterable[_T], *, key: Callable[[_T], float], tolerance: float
) -> Iterator[list[_T]]:
    """The items sorted by `key`, in runs whose keys lie within `tolerance` of the run's first."""
    run: list[_T] = []
    for item in sorted(items, key=key):
        if run and key(item) - key(run[0]) <= tolerance:
            run.append(item)
            continue
        if run:
            yield run
        run = [item]
    if run:
        yield run


# --- headings -------------------------------------------------------------------------------


def _outline_by_page(
    document: pdfium.PdfDocument, count: int
) -> dict[int, list[tuple[int, str, float | None]]]:
    """Outline entries as {page index: [(level, title, y)]}; empty when the PDF has no outline."""
    by_page: dict[int, list[tuple[int, str, float | None]]] = {}
    try:
        # Deeper entries would all be level-3 headings; resolving each page costs time.
        items = document.get_toc(max_depth=_MAX_LEVEL)
        for n, item in enumerate(items):
            if n >= _MAX_OUTLINE_ITEMS:
                break
            dest = item.get_dest()
            title = _CONTROL.sub("", item.get_title() or "").strip()
            index = dest.get_index() if dest else None
            if not title or index is None or not 0 <= index < count:
                continue
            _mode, view = dest.get_view()
            y = view[1] if len(view) >= 2 and view[1] else None
            by_page.setdefault(index, []).append((min(item.level + 1, _MAX_LEVEL), title, y))
    except pdfium.PdfiumError:
        return {}
    return by_page


def _mark_outline_headings(
    raw_pages: list[_RawPage], outline: dict[int, list[tuple[int, str, float | None]]]
) -> None:
    for index, entries in outline.items():
        page = raw_pages[index]
        for level, title, y in entries:
            match = _find_title(page.paragraphs, title)
            if match is not None:
                match.heading_level = level
                continue
            line = _Line(title, 0.0, False, 0.0, y or 0.0, 0.0)
            at = _insert_position(page.paragraphs, y)
            page.paragraphs.insert(at, _Paragraph([line], heading_level=level))


def _key(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


def _find_title(paragraphs: list[_Paragraph], title: str) -> _Paragraph | None:
    wanted = _key(title)
    if not wanted:
        return None
    for paragraph in paragraphs:
        if paragraph.heading_level:
            continue
        first = _key(paragraph.lines[0].text)
        whole = _key(paragraph.text)
        for candidate in (first, whole):
            numbered = re.sub(r"^(chapter|section|part|appendix)?[0-9ivxlcA-Z]{0,6}", "", candidate)
            if candidate == wanted or numbered == wanted:
                if candidate == whole or len(paragraph.lines) == 1:
                    return paragraph
                return _split_first_line(paragraphs, paragraph)
    return None


def _split_first_line(paragraphs: list[_Paragraph], paragraph: _Paragraph) -> _Paragraph:
    """A heading run into its paragraph's first line becomes a paragraph of its own."""
    heading = _Paragraph([paragraph.lines[0]])
    paragraph.lines = paragraph.lines[1:]
    paragraphs.insert(paragraphs.index(paragraph), heading)
    return heading


def _insert_position(paragraphs: list[_Paragraph], y: float | None) -> int:
    if y is None:
        return 0
    for i, paragraph in enumerate(paragraphs):
        if paragraph.lines[0].y <= y + 1:
            return i
    return len(paragraphs)


def _body_size(raw_pages: list[_RawPage]) -> float:
    """The font size most of the text has (0 without text)."""
    weights: Counter[float] = Counter()
    for page in raw_pages:
        for paragraph in page.paragraphs:
            for line in paragraph.lines:
                weights[line.size] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def _mark_size_headings(raw_pages: list[_RawPage]) -> None:
    """Without an outline, larger-than-body short paragraphs become headings, largest first."""
    body = _body_size(raw_pages)
    if not body:
        return
    candidates = [
        paragraph
        for page in raw_pages
        for paragraph in page.paragraphs
        if _looks_like_heading(paragraph, body)
    ]
    sizes = sorted({p.size for p in candidates if p.size >= body * 1.15}, reverse=True)
    level_of = {size: min(i + 1, _MAX_LEVEL) for i, size in enumerate(sizes)}
    for paragraph in candidates:
        paragraph.heading_level = level_of.get(paragraph.size, _MAX_LEVEL)


def _looks_like_heading(paragraph: _Paragraph, body: float) -> bool:
    text = paragraph.text
    if len(paragraph.lines) > 3 or len(text) > _MAX_HEADING or not any(c.isalpha() for c in text):
        return False
    if text.endswith((".", ",", ";")) or _BULLET.match(text):  # a list item is no heading
        return False
    if paragraph.size >= body * 1.15:
        return True
    bold = all(line.bold for line in paragraph.lines)
    # Loose glyph boxes differ a little between the regular and the bold cut of a font.
    return bold and paragraph.size >= body * 0.95 and len(text) <= 80 and text[0].isalnum()


# --- output ---------------------------------------------------------------------------------


def _markdown(page: _RawPage) -> str:
    blocks = []
    for paragraph in page.paragraphs:
        text = paragraph.text.strip()
        if not text:
            continue
        if paragraph.heading_level:
            blocks.append(f"{'#' * paragraph.heading_level} {text}")
        else:
            blocks.append(_MARKDOWN_START.sub(r"\\\1", text))
    return "\n\n".join(blocks)


def _title(document: pdfium.PdfDocument, raw_pages: list[_RawPage], fallback: str) -> str:
    """The metadata title when it names this document, else the first heading that does (on
    the first pages), else `fallback` (the file name)."""
    try:
        title = _CONTROL.sub("", document.get_metadata_dict().get("Title", "")).strip()
    except (pdfium.PdfiumError, UnicodeDecodeError):
        title = ""
    if names_document(title):
        return title
    for page in raw_pages[:_TITLE_PAGES]:
        for paragraph in page.paragraphs:
            if paragraph.heading_level and names_document(heading := paragraph.text.strip()):
                return heading
    return fallback


_TITLE_PAGES = 3  # a heading further on names a part of the document, not the document
# Titles that many documents share: a word processor's or scanner's default, a section name,
# the bare name of a form. Compared in lower case, without punctuation.
_GENERIC_TITLES = frozenset(
    [
        "abstract",
        "agreement",
        "appendix",
        "book1",
        "chapter 1",
        "contents",
        "contract",
        "cover",
        "cover page",
        "default",
        "document",
        "draft",
        "exhibit",
        "form",
        "general",
        "heading",
        "home",
        "image",
        "index",
        "introduction",
        "invoice",
        "letter",
        "memo",
        "memorandum",
        "new document",
        "no title",
        "none",
        "notice",
        "overview",
        "page",
        "preface",
        "presentation",
        "print",
        "printed by",
        "proxy statement",
        "prospectus",
        "report",
        "scan",
        "scanned document",
        "schedule",
        "sheet1",
        "summary",
        "table of contents",
        "title",
        "unknown",
        "untitled",
    ]
)
# "Form 10-K", "FORM 8-K", "Schedule 13D", "Exhibit 99.1", "Page 1", "Slide 3".
_FORM_NAME = re.compile(
    r"(form|schedule|exhibit|annex|appendix|attachment|page|slide|part|item)\s*[\w.-]{0,8}", re.I
)
# Set by the document's producer rather than its author.
_PRODUCER_TITLE = re.compile(
    r"untitled.*|microsoft (word|excel|powerpoint) - .*|.* - notepad|adobe photoshop pdf"
    r"|.*\w\.(docx?|xlsx?|pptx?|odt|ods|odp|rtf|txt|pdf|tex|dvi|indd|html?|jpe?g|png|tiff?)\b.*",
    re.I,
)
# Headings of SEC filings and other forms that every filing of its kind carries.
_BOILERPLATE = re.compile(
    r"((annual|quarterly|current|transition) report pursuant to|for the (fiscal )?"
    r"(year|quarter|period) ended|commission file number|washington,? d\.?c\.?"
    r"|securities and exchange commission)",
    re.I,
)
# An agency's name in capitals: the issuer of many documents, not the name of one.
_AGENCY_WORDS = re.compile(
    r"\b(COMMISSION|DEPARTMENT|AGENCY|SERVICE|OFFICE|BUREAU|MINISTRY|ADMINISTRATION|BOARD"
    r"|COURT|UNITED STATES|GOVERNMENT|STATE OF)\b"
)


def names_document(title: str) -> bool:
    """Whether `title` could name one document: not empty, generic, a producer's default,
    a form's bare name, a filing's boilerplate or an agency's name in capitals."""
    text = " ".join(title.split())
    letters = sum(c.isalpha() for c in text)
    if not re.search(r"(?<!\w)[^\W\d_]{2,}", text):  # not one word: "H 0,05 A"
        return False
    if len(text) > 10 and letters <= 0.4 * len(text.replace(" ", "")):  # a code, a table row
        return False
    if " " not in text and len(text) <= 3:  # "abc", "PDF"
        return False
    plain = " ".join(re.sub(r"[\W_]+", " ", text.casefold()).split())
    if plain in _GENERIC_TITLES or _FORM_NAME.fullmatch(text) or _PRODUCER_TITLE.fullmatch(text):
        return False
    if _BOILERPLATE.search(text):
        return False
    return not (text.isupper() and _AGENCY_WORDS.search(text))
