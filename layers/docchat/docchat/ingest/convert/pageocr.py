"""OCR of pages without a usable text layer: read here by the local engine (`LocalOcr`) or
earlier by the cloud's OCR step (`ocr_pages`, then `OcrResults`); both are a `PageOcr`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import pypdfium2 as pdfium

from docchat.errors import (
    ModelFileError,
    NeedsOcrError,
)
from docchat.ingest.convert.columns import column_order, looks_multi_column
from docchat.ingest.convert.page import NEEDS_CLEANING, Line, clean
from docchat.ingest.convert.pdf import damaged_error, open_pdf
from docchat.ingest.ocr import Image, OcrLine, OcrOptions, available, engine
from docchat.models import OcrPage, OcrText

# The resolution a page OCR found nothing on is read at once more (`_ocr_closer`).
CLOSER_DPI = 250


@dataclass(frozen=True)
class LocalOcr:
    """OCR read here, as conversion goes: the engine reads each page that needs it, rendered
    as `options` say."""

    options: OcrOptions = field(default_factory=OcrOptions)

    def available(self) -> bool:
        """Whether the OCR engine is installed."""
        return available()

    def page_lines(self, document: pdfium.PdfDocument, index: int) -> list[Line]:
        """The lines the engine reads on page `index` (none where it reads nothing)."""
        page = document[index]
        try:
            render = _render(page, self.options)
        finally:
            page.close()  # its decoded images go before OCR needs the memory
        lines = _ocr_lines(*render, threads=self.options.threads)
        return lines or _ocr_closer(document, index, self.options)


@dataclass(frozen=True)
class OcrResults:
    """OCR read elsewhere, by page number: the cloud's OCR step (`ocr_pages`) runs the engine
    and Convert reads its results. A page that needs OCR but is not here is reported in
    `ConvertedDocument.ocr_pending` and read without it."""

    lines: dict[int, list[Line]] = field(default_factory=dict)

    @classmethod
    def of(cls, pages: Iterable[OcrPage]) -> OcrResults:
        """The results of the OCR step's pages."""
        return cls({page.number: [_from_text(line) for line in page.lines] for page in pages})

    def available(self) -> bool:
        """Always: the results were read where the engine is."""
        return True

    def page_lines(self, document: pdfium.PdfDocument, index: int) -> list[Line] | None:
        """The lines read for page `index`; None where the OCR step has not read it."""
        return self.lines.get(index + 1)


def ocr_pages(data: bytes, numbers: Iterable[int], *, options: OcrOptions) -> list[OcrPage]:
    """The OCR lines of the pages `numbers` (1-based) of a PDF, read exactly as
    `pages_from_pdf` reads a page without a usable text layer: the cloud's OCR step runs this
    where the engine is installed, and Convert takes the results as `OcrResults`."""
    local = LocalOcr(options)
    document = open_pdf(data)
    try:
        found = []
        for number in numbers:
            try:
                lines = local.page_lines(document, number - 1)
            except (pdfium.PdfiumError, IndexError):
                lines = []  # a damaged page reads as blank
            found.append(OcrPage(number=number, lines=[_to_text(line) for line in lines]))
        return found
    except pdfium.PdfiumError as exc:
        raise damaged_error(exc) from exc
    finally:
        document.close()


def _to_text(line: Line) -> OcrText:
    return OcrText(
        text=line.text, size=line.size, x=line.x, y=line.y, right=line.right, y_end=line.y_end
    )


def _from_text(line: OcrText) -> Line:
    return Line(line.text, line.size, False, line.x, line.y, line.right, line.y_end)


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


def _ocr_closer(document: pdfium.PdfDocument, index: int, options: OcrOptions) -> list[Line]:
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


def _ocr_lines(image: Image, scale: float, *, threads: int) -> list[Line]:
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
    if looks_multi_column(lines, image.shape[1] / scale):
        return column_order(lines)
    return lines


def _even_sizes(lines: list[Line]) -> list[Line]:
    """OCR boxes of one font size differ by a point or two: lines near the page's typical
    height get exactly that height, so only clearly larger lines can become headings."""
    if not lines:
        return lines
    typical = sorted(line.size for line in lines)[len(lines) // 2]
    for line in lines:
        if abs(line.size - typical) <= 0.25 * typical:
            line.size = typical
    return lines


def _ocr_line(line: OcrLine, scale: float, image_height: int) -> Line:
    # The box's bottom stands for the baseline and its height for the font size: both are
    # only compared with other lines' (paragraph breaks, headings), never taken as exact.
    bottom = (image_height - line.bottom) / scale
    text = clean(line.text) if NEEDS_CLEANING.search(line.text) else line.text
    return Line(
        text=text,
        size=float(round((line.bottom - line.top) / scale)),
        bold=False,
        x=line.left / scale,
        y=bottom,
        right=line.right / scale,
        y_end=bottom,
    )
