"""OCR of pages without a text layer (rapidocr with the models from its wheel, no network)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pytest
from reportlab.pdfgen.canvas import Canvas

from docchat.errors import ModelFileError, NeedsOcrError
from docchat.ingest import ocr
from docchat.ingest.convert.pageocr import LocalOcr
from docchat.ingest.convert.pdf import pages_from_pdf
from docchat.ingest.ocr import OcrOptions
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
    document = pages_from_pdf(scan, ocr=LocalOcr(OPTIONS))

    # Then the page's text is read, in order, and marked as OCR'd
    [page] = document.pages
    assert page.ocr and page.image_only
    assert "Invoice number 4711" in page.markdown
    assert page.markdown.index("4711") < page.markdown.index("250 euros")
    assert document.pages_without_text == 0


def test_ocr_leaves_pages_with_a_text_layer_alone() -> None:
    born_digital = _text_pdf("Invoice number 4711", "Total due: 250 euros")

    document = pages_from_pdf(born_digital, ocr=LocalOcr(OPTIONS))

    assert not document.pages[0].ocr
    assert "Invoice number 4711" in document.pages[0].markdown


def test_ocr_reads_only_the_pages_that_lack_text() -> None:
    # Given a PDF whose second page is a scan, the first and third born digital
    text = _text_pdf("First page typed text")
    scan = scanned_copy(_text_pdf("Second page was scanned"))
    pdf = _joined([text, scan, text])

    document = pages_from_pdf(pdf, ocr=LocalOcr(OPTIONS))

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
        pages_from_pdf(scan, ocr=LocalOcr(OPTIONS))


def _joined(pdfs: list[bytes]) -> bytes:
    import pypdfium2 as pdfium

    out = pdfium.PdfDocument.new()
    for data in pdfs:
        source = pdfium.PdfDocument(data)
        out.import_pages(source)
    buffer = io.BytesIO()
    out.save(buffer)
    return buffer.getvalue()


def test_ocr_tiles_are_even_and_overlap() -> None:
    assert ocr._count(1650, 3200) == 1
    assert ocr._spans(1650, 1) == [ocr._Span(0, 1650, 0.0, 1650.0)]
    # Three tiles of 1504 px over 4000 px, each overlap (256 px) split at its middle.
    assert ocr._count(4000, 1600) == 3
    assert ocr._spans(4000, 3) == [
        ocr._Span(0, 1504, 0.0, 1376.0),
        ocr._Span(1248, 2752, 1376.0, 2624.0),
        ocr._Span(2496, 4000, 2624.0, 4000.0),
    ]


def test_ocr_a_letter_page_at_150_dpi_is_one_tile_and_a_huge_one_many() -> None:
    calls: list[tuple[int, int]] = []

    class Counting(ocr.OcrEngine):
        def _tile_lines(self, tile: ocr.Image, left: int, top: int) -> list[ocr.OcrLine]:
            calls.append(tile.shape[:2])
            return []

    Counting().lines(np.zeros((1650, 1275), dtype=np.uint8))
    assert calls == [(1650, 1275)]
    calls.clear()

    Counting().lines(np.zeros((4000, 4000), dtype=np.uint8))
    # two columns of 2128 px, four rows of 1192 px: each tile under TILE * TILE pixels
    assert calls == [(1192, 2128)] * 8 and ocr.TILE * ocr.TILE >= 1192 * 2128


def test_ocr_reading_order_is_rows_top_down_each_left_to_right() -> None:
    def line(text: str, left: float, top: float) -> ocr.OcrLine:
        return ocr.OcrLine(text, left, top, left + 80, top + 20, 0.99)

    # "Name:" sits 3 px lower than its value; the next row starts 30 px further down.
    found = [line("Smith", 200, 97), line("Date:", 10, 130), line("Name:", 10, 100)]

    assert [x.text for x in ocr.reading_order(found)] == ["Name:", "Smith", "Date:"]


DMCA = Path(__file__).resolve().parents[2] / "examples" / "pdfs" / "dmca.pdf"


@pytest.mark.slow  # a whole letter page through OCR: 5 s on an idle machine, over 60 loaded
def test_ocr_reads_a_clean_line_its_classifier_turns_upside_down() -> None:
    # Given the first page of the DMCA summary as a scanner makes it (300 DPI, no text layer),
    # where rapidocr's orientation classifier, which sees each line squeezed into 192 x 48
    # pixels, takes one upright line of body text for an upside-down one
    scan = scanned_copy(DMCA.read_bytes(), dpi=300, pages=[0])

    # When it is converted with OCR at the default 150 DPI
    [page] = pages_from_pdf(scan, ocr=LocalOcr(OPTIONS)).pages

    # Then that line is read as printed, not as "er ou o aer os es e ae e"
    text = " ".join(page.markdown.split())
    assert "by activating a computer for purposes of maintenance or repair" in text


def test_ocr_reads_a_page_scanned_upside_down() -> None:
    # Given a scanned page image turned upside down (the classifier turns each line back)
    scan = scanned_copy(_text_pdf("Invoice number 4711", "Total due: 250 euros"), dpi=150)
    document = pdfium.PdfDocument(scan)
    image = np.ascontiguousarray(document[0].render(scale=150 / 72, grayscale=True).to_numpy())
    document.close()

    # When OCR reads it
    lines = ocr.engine(threads=1).lines(np.rot90(image, 2).copy())

    # Then each line is read the right way up
    texts = [line.text for line in lines]
    assert "Invoice number 4711" in texts and "Total due: 250 euros" in texts


def test_a_corrupt_ocr_model_file_names_the_ocr_install_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check borrowed the local embedder's, whose message told the reader to reinstall
    # the embedding model.
    fake = tmp_path / "det.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(ocr, "packaged_file", lambda package, relative, *, hint: fake)

    with pytest.raises(ModelFileError) as refused:
        ocr._model_paths()

    assert "the file is corrupt" in str(refused.value)
    assert "requirements/ocr.txt" in str(refused.value)
    assert "local model" not in str(refused.value)
