"""Cloud OCR: Convert without the engine finds the pages that need it, the OCR step reads them
with the code a local conversion uses, and Convert builds the same pages from those results."""

from __future__ import annotations

import io

import pypdfium2 as pdfium
import pytest

from docchat.config import Settings
from docchat.ingest.convert.pageocr import LocalOcr, OcrResults, ocr_pages
from docchat.ingest.convert.pdf import pages_from_pdf
from docchat.ingest.ocr import OcrOptions
from docchat.ingest.stages import ocr_options
from docchat.ingest.steps import ocr_ranges
from docchat.models import OcrPage
from docchat.payloads import DocRef
from docchat.processes import ConvertSettings
from tests.pdfgen import make_pdf, scanned_copy

OPTIONS = OcrOptions(dpi=150, threads=1)


def _page(number: int) -> list[tuple[str, str]]:
    return (
        [("body", "Harbour Authority Annual Report")]
        + [("h1", f"Section {number} of the report")]
        + [
            ("body", f"Line {i} of page {number} lists the quays and their tolls.")
            for i in range(6)
        ]
    )


def _mixed_pdf() -> bytes:
    """Four pages: the second and the fourth are scans (no text layer)."""
    typed = make_pdf([_page(n) for n in range(1, 5)])
    scans = {1: scanned_copy(typed, pages=[1]), 3: scanned_copy(typed, pages=[3])}
    out = pdfium.PdfDocument.new()
    source = pdfium.PdfDocument(typed)
    for index in range(4):
        if index in scans:
            out.import_pages(pdfium.PdfDocument(scans[index]))
        else:
            out.import_pages(source, [index])
    buffer = io.BytesIO()
    out.save(buffer)
    return buffer.getvalue()


# OCR runs (about 10 s each on 2 shared cores): `make unit` leaves them to `make test`.
@pytest.mark.slow
def test_cloud_ocr_pages_equal_a_local_conversion() -> None:
    pdf = _mixed_pdf()
    local = pages_from_pdf(pdf, ocr=LocalOcr(OPTIONS))

    # Convert without results: nothing is read by OCR, the pages that need it are listed
    first = pages_from_pdf(pdf, ocr=OcrResults())
    assert first.ocr_pending == [2, 4]
    assert first.pages_ocr == 0

    # The OCR step reads them; its results travel as JSON (an S3 artifact)
    read = ocr_pages(pdf, first.ocr_pending, options=OPTIONS)
    stored = [OcrPage.model_validate_json(page.model_dump_json()) for page in read]
    second = pages_from_pdf(pdf, ocr=OcrResults.of(stored))

    # Convert with them builds exactly the local conversion's pages, title and counts
    assert second == local
    assert second.ocr_pending == []
    assert [p.ocr for p in second.pages] == [False, True, False, True]
    assert "Line 3 of page 4 lists the quays" in second.pages[3].markdown


def test_cloud_ocr_text_only_pdf_has_nothing_pending() -> None:
    typed = make_pdf([_page(n) for n in range(1, 4)])

    converted = pages_from_pdf(typed, ocr=OcrResults())

    assert converted.ocr_pending == []
    assert converted == pages_from_pdf(typed, ocr=LocalOcr(OPTIONS))


@pytest.mark.slow
def test_cloud_ocr_page_missing_from_results_stays_pending() -> None:
    pdf = _mixed_pdf()
    read = ocr_pages(pdf, [2], options=OPTIONS)

    converted = pages_from_pdf(pdf, ocr=OcrResults.of(read))

    assert converted.ocr_pending == [4]
    assert [p.ocr for p in converted.pages] == [False, True, False, False]


def test_cloud_ocr_ranges_are_bounded_and_keyed_by_their_pages() -> None:
    doc = DocRef(doc_id="scan-1", version="abc", bucket="docs", key="scan.pdf")
    environ = {
        "DOCCHAT_OCR": "cloud",
        "DOCCHAT_OCR_PAGES_PER_TASK": "8",
        "DOCCHAT_DOCUMENTS_TABLE": "documents",
        "DOCCHAT_ARTIFACTS_BUCKET": "artifacts",
    }
    settings = ConvertSettings.from_env(environ, reader="the convert function")

    ranges = ocr_ranges(doc, [1, 2, *range(4, 22)], settings=settings)

    assert [(r.pages[0], r.pages[-1], len(r.pages)) for r in ranges] == [
        (1, 9, 8),
        (10, 17, 8),
        (18, 21, 4),
    ]
    assert [r.key for r in ranges] == [
        "artifacts/scan-1/abc/ocr/1-9.json",
        "artifacts/scan-1/abc/ocr/10-17.json",
        "artifacts/scan-1/abc/ocr/18-21.json",
    ]


def test_cloud_ocr_setting_still_reads_scans_in_a_local_run() -> None:
    # The local runner has no OCR step: with DOCCHAT_OCR=cloud it OCRs in process
    assert ocr_options(Settings.from_env({"DOCCHAT_OCR": "cloud", "DOCCHAT_OCR_DPI": "200"})) == (
        LocalOcr(OcrOptions(dpi=200))
    )
    assert ocr_options(Settings.from_env({"DOCCHAT_OCR": "off"})) is None
