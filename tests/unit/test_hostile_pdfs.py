"""Hostile input: every case converts or fails with a typed error, in bounded time and memory,
and never takes the calling process down (conversion runs in a child process)."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docchat.errors import (
    ConversionCrashedError,
    ConversionError,
    ConversionTimeoutError,
    EmptyPdfError,
    EncryptedPdfError,
    MalformedPdfError,
    NeedsOcrError,
    PdfTooLargeError,
)
from docchat.ingest import isolate
from docchat.ingest.convert.pdf import ConvertLimits
from docchat.ingest.isolate import pages_from_pdf_isolated
from docchat.models import ConvertedDocument
from tests.conftest import EXAMPLES, examples
from tests.pdfgen import make_pdf

REPORT = make_pdf(
    [
        [("h1", f"Part {n}"), *[("body", f"Line {i} of part {n}.") for i in range(20)]]
        for n in range(3)
    ]
)
QUICK = ConvertLimits(max_pages=5000, timeout_s=20)


def _outcome(data: bytes, limits: ConvertLimits = QUICK) -> ConvertedDocument | ConversionError:
    try:
        return pages_from_pdf_isolated(data, limits=limits, memory_mib=1024)
    except ConversionError as exc:
        return exc


# What a damaged file may fail with: the file's own fault, named for the user. The engine's
# failures (ConversionCrashedError, ConversionTimeoutError, PdfTooLargeError for memory) would
# mean a broken byte sank the engine rather than being recognised.
DAMAGE = (MalformedPdfError, EmptyPdfError, EncryptedPdfError, NeedsOcrError)


def _converted_or_refused_as_damaged(outcome: ConvertedDocument | ConversionError) -> None:
    if isinstance(outcome, ConvertedDocument):  # PDFium repairs what it can
        assert outcome.pages
        assert [p.number for p in outcome.pages] == list(range(1, len(outcome.pages) + 1))
    else:
        assert isinstance(outcome, DAMAGE), repr(outcome)


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.99])
def test_truncated_pdf_converts_or_fails_typed(fraction: float) -> None:
    data = (EXAMPLES / "dmca.pdf").read_bytes()

    outcome = _outcome(data[: int(len(data) * fraction)])

    _converted_or_refused_as_damaged(outcome)


def test_zero_bytes_and_text_named_pdf() -> None:
    assert isinstance(_outcome(b""), EmptyPdfError)
    text = _outcome(b"Quarterly report\nRevenue grew.\n" * 100)
    assert isinstance(text, MalformedPdfError) and "not a PDF (no %PDF header)" in str(text)


def test_broken_xref_is_repaired_or_refused() -> None:
    data = re.sub(rb"startxref\s+\d+", b"startxref\n999999999", REPORT)
    data = re.sub(rb"xref\s+0 \d+", b"xref\n0 99999", data)

    outcome = _outcome(data)

    _converted_or_refused_as_damaged(outcome)
    if isinstance(outcome, ConvertedDocument):
        assert "Line 3 of part 1." in outcome.pages[1].markdown


def test_page_bomb_is_refused_before_any_work(tmp_path: Path) -> None:
    document = pdfium.PdfDocument.new()
    for _ in range(6000):
        document.new_page(10, 10)
    path = tmp_path / "bomb.pdf"
    document.save(path)
    started = time.monotonic()

    outcome = _outcome(path.read_bytes(), ConvertLimits(max_pages=5000, timeout_s=20))

    assert isinstance(outcome, PdfTooLargeError)
    assert "has 6000 pages; the limit is 5000 (DOCCHAT_MAX_PAGES)" in str(outcome)
    assert time.monotonic() - started < 10


def test_deeply_nested_outline_converts() -> None:
    from io import BytesIO

    from reportlab.pdfgen.canvas import Canvas

    buffer = BytesIO()
    canvas = Canvas(buffer)
    for level in range(60):
        canvas.drawString(72, 700, f"Section at depth {level} with some text.")
        canvas.bookmarkPage(f"b{level}")
        canvas.addOutlineEntry(f"Depth {level}", f"b{level}", level=level)
        canvas.showPage()
    canvas.save()

    outcome = _outcome(buffer.getvalue())

    assert isinstance(outcome, ConvertedDocument)
    assert len(outcome.pages) == 60 and outcome.used_outline


def _crash(*args: object, **kwargs: object) -> ConvertedDocument:
    os.kill(os.getpid(), signal.SIGSEGV)
    raise AssertionError("unreachable")


def _hang(*args: object, **kwargs: object) -> ConvertedDocument:
    time.sleep(3600)
    raise AssertionError("unreachable")


def _hog(*args: object, **kwargs: object) -> ConvertedDocument:
    chunks = []
    while True:
        chunks.append(bytearray(64 * 1024 * 1024))


def test_engine_crash_costs_the_child_not_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolate, "pages_from_pdf", _crash)

    with pytest.raises(ConversionCrashedError, match=r"crashed the PDF engine \(SIGSEGV\)"):
        pages_from_pdf_isolated(REPORT)


def test_engine_hang_is_stopped_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolate, "pages_from_pdf", _hang)
    monkeypatch.setattr(isolate, "GRACE_S", 0.2)
    started = time.monotonic()

    with pytest.raises(ConversionTimeoutError, match=r"did not finish within 0\.5 s"):
        pages_from_pdf_isolated(REPORT, limits=ConvertLimits(timeout_s=0.5))

    assert time.monotonic() - started < 5


def test_engine_memory_flood_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolate, "pages_from_pdf", _hog)

    with pytest.raises(PdfTooLargeError, match="needs more than 300 MiB of memory"):
        pages_from_pdf_isolated(REPORT, memory_mib=300)


def test_progress_is_reported_from_the_child() -> None:
    seen: list[tuple[int, int]] = []

    pages_from_pdf_isolated(REPORT, on_page=lambda done, total: seen.append((done, total)))

    assert seen == [(1, 3), (2, 3), (3, 3)]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, len(REPORT) - 1), st.integers(0, 255)), min_size=1, max_size=30
    )
)
def test_fuzzed_pdf_converts_or_fails_typed(flips: list[tuple[int, int]]) -> None:
    data = bytearray(REPORT)
    for position, value in flips:
        data[position] = value

    outcome = _outcome(bytes(data), ConvertLimits(max_pages=100, timeout_s=10))

    if isinstance(outcome, PdfTooLargeError):  # a flipped /Count: refused by page count
        assert "pages; the limit is 100 (DOCCHAT_MAX_PAGES)" in str(outcome)
    else:
        _converted_or_refused_as_damaged(outcome)
