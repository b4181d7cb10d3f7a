"""ocrmypdf's hostile scans through the isolated converter with OCR, within the default memory
cap: each is read (slow: one OCR'd page each, hugemono.pdf in nine tiles)."""

from __future__ import annotations

import pytest

from docchat.errors import EmptyPdfError
from docchat.ingest.convert.pageocr import LocalOcr, ocr_pages
from docchat.ingest.convert.pdf import ConvertLimits, pages_from_pdf
from docchat.ingest.isolate import pages_from_pdf_isolated
from docchat.ingest.ocr import OcrOptions
from tests.conftest import SHARED_PDFS

pytestmark = pytest.mark.slow
OCRMYPDF = SHARED_PDFS / "ocrmypdf-test-resources" / "tests" / "resources"

HOSTILE = {
    # a 9000 x 9000 pixel image on one page
    "enormous.pdf": "9000x9000 pixels",
    # a 116-inch square page of one bit per pixel with one small line of text
    "hugemono.pdf": "tiny amount of text",
    # a page scanned at 2400 DPI (a Dutch recipe)
    "2400dpi.pdf": "linzen",
    # the same scan rotated and skewed, CCITT G4 and JBIG2 compressed
    "rotated_skew.pdf": "LinnSequencer",
    "ccitt.pdf": "LinnSequencer",
    "jbig2.pdf": "LinnSequencer",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_ocr_hostile_scan_is_read_within_the_caps(name: str) -> None:
    data = (OCRMYPDF / name).read_bytes()

    document = pages_from_pdf_isolated(
        data, limits=ConvertLimits(timeout_s=300), ocr=LocalOcr(OcrOptions()), memory_mib=2048
    )

    [page] = document.pages
    assert page.ocr
    assert HOSTILE[name].casefold() in page.markdown.casefold()


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        # glyphs of a Type 3 font with no character mapping: the text layer is empty
        ("type3_font_nomapping.pdf", "ua"),
        # a TrueType font whose glyph codes extract as '"7+%-' where the page shows "Phone"
        ("truetype_font_nomapping.pdf", "Phone"),
        # text drawn as vector outlines
        ("vector.pdf", "Sample Vector PDF for Testing"),
    ],
)
def test_ocr_reads_text_the_text_layer_does_not_hold(name: str, shown: str) -> None:
    data = (OCRMYPDF / name).read_bytes()

    [page] = pages_from_pdf(data, ocr=LocalOcr(OcrOptions())).pages

    assert page.ocr
    assert page.markdown.startswith(shown)


def test_ocr_reads_small_print_in_a_drawing_it_misses_at_the_render_dpi() -> None:
    # pdfminer's sample: a face drawn in a JBIG2 image with a speech bubble in 9 pt, "It
    # Doesn't Work?!?!?!"; at 150 and 200 DPI the detector finds nothing on the page.
    data = (SHARED_PDFS / "pdfminer.six-samples/samples/contrib/pdf-with-jbig2.pdf").read_bytes()

    [page] = pages_from_pdf(data, ocr=LocalOcr(OcrOptions())).pages
    [cloud] = ocr_pages(data, [1], options=OcrOptions())

    assert page.ocr and page.markdown.startswith("It Doesn't")
    assert [line.text for line in cloud.lines][:2] == ["It", "Doesn't"]


def test_ocr_reads_no_text_into_a_drawing_without_any() -> None:
    # pdfminer's sample of two drawn lines: read closer, the detector took a stroke for "_"
    data = (
        SHARED_PDFS / "pdfminer.six-samples/samples/contrib/issue_1165_linewidth.pdf"
    ).read_bytes()

    with pytest.raises(EmptyPdfError):
        pages_from_pdf(data, ocr=LocalOcr(OcrOptions()))
