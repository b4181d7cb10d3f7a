"""OCR of pages without a text layer (rapidocr with the models from its wheel, no network)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from reportlab.pdfgen.canvas import Canvas

from docchat import ocr
from docchat.convert import pages_from_pdf
from docchat.errors import ModelFileError, NeedsOcrError
from docchat.ocr import OcrOptions
from tests.pdfgen import scanned_copy

OPTIONS = OcrOptions(dpi=150, threads=1)


def _text_pdf(*lines: str, size: float = 18, page: tuple[float, float] = (360, 160)) -> bytes:
    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=page, invariant=1)
    canvas.setFont("Helvetica", size)
    y = page[1] - 40
    for line in lines:
        canvas.drawString(24, y, line)
        y -= size * 1.4
    canvas.showPage()
    canvas.save()
    return buffer.getvalue()


def test_ocr_reads_a_scanned_page_with_the_network_blocked() -> None:
    # Given a page that is only an image of two lines of text (the autouse fixture fails any
    # connection beyond loopback, so a model download would fail the test)
    scan = scanned_copy(_text_pdf("Invoice number 4711", "Total due: 250 euros"))

    # When it is converted with OCR
    document = pages_from_pdf(scan, ocr=OPTIONS)

    # Then the page's text is read, in order, and marked as OCR'd
    [page] = document.pages
    assert page.ocr and page.image_only
    assert "Invoice number 4711" in page.markdown
    assert page.markdown.index("4711") < page.markdown.index("250 euros")
    assert document.pages_without_text == 0


def test_ocr_leaves_pages_with_a_text_layer_alone() -> None:
    born_digital = _text_pdf("Invoice number 4711", "Total due: 250 euros")

    document = pages_from_pdf(born_digital, ocr=OPTIONS)

    assert not document.pages[0].ocr
    assert "Invoice number 4711" in document.pages[0].markdown


def test_ocr_reads_only_the_pages_that_lack_text() -> None:
    # Given a PDF whose second page is a scan, the first and third born digital
    text = _text_pdf("First page typed text")
    scan = scanned_copy(_text_pdf("Second page was scanned"))
    pdf = _joined([text, scan, text])

    document = pages_from_pdf(pdf, ocr=OPTIONS)

    assert [p.ocr for p in document.pages] == [False, True, False]
    assert "Second page was scanned" in document.pages[1].markdown


def test_ocr_off_still_refuses_a_scan_with_needs_ocr() -> None:
    scan = scanned_copy(_text_pdf("Invoice number 4711"))

    with pytest.raises(NeedsOcrError, match="OCR"):
        pages_from_pdf(scan)


def test_ocr_refuses_a_model_file_with_the_wrong_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    relative, _ = ocr.MODELS["Rec"]
    monkeypatch.setitem(ocr.MODELS, "Rec", (relative, "0" * 64))

    with pytest.raises(ModelFileError, match="SHA-256"):
        ocr.OcrEngine().lines(np.zeros((64, 64), dtype=np.uint8))


def test_ocr_without_the_engine_installed_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ocr, "_ENGINES", {})
    monkeypatch.setitem(ocr.MODELS, "Det", ("models/missing.onnx", "0" * 64))
    scan = scanned_copy(_text_pdf("Invoice number 4711"))

    with pytest.raises(NeedsOcrError, match="OCR is not available here"):
        pages_from_pdf(scan, ocr=OPTIONS)


def _joined(pdfs: list[bytes]) -> bytes:
    import pypdfium2 as pdfium

    out = pdfium.PdfDocument.new()
    for data in pdfs:
        source = pdfium.PdfDocument(data)
        out.import_pages(source)
    buffer = io.BytesIO()
    out.save(buffer)
    return buffer.getvalue()


def test_ocr_tiles_overlap_and_cover_a_large_image() -> None:
    assert ocr._spans(1600) == [(0, 1600)]
    assert ocr._spans(1700) == [(0, 1600), (1344, 1700)]
    assert ocr._spans(4000) == [(0, 1600), (1344, 2944), (2688, 4000)]


def test_ocr_each_line_in_an_overlap_belongs_to_one_tile() -> None:
    # The overlap 1344..1600 of the first two tiles of 4000 px is split at its middle, 1472.
    owners = [
        [ocr._in_core(c, start, end, 4000) for start, end in ocr._spans(4000)]
        for c in (0, 1471, 1472, 2815, 2816, 3999)
    ]

    assert owners == [
        [True, False, False],
        [True, False, False],
        [False, True, False],
        [False, True, False],
        [False, False, True],
        [False, False, True],
    ]


def test_ocr_reading_order_is_rows_top_down_each_left_to_right() -> None:
    def line(text: str, left: float, top: float) -> ocr.OcrLine:
        return ocr.OcrLine(text, left, top, left + 80, top + 20, 0.99)

    # "Name:" sits 3 px lower than its value; the next row starts 30 px further down.
    found = [line("Smith", 200, 97), line("Date:", 10, 130), line("Name:", 10, 100)]

    assert [x.text for x in ocr.reading_order(found)] == ["Name:", "Smith", "Date:"]
