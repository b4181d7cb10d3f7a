"""One bad file never stops a batch: `docchat ingest` of a folder holding a broken PDF of each
kind we can make ends each of them FAILED with its reason and indexes every other file."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from docchat.cli import main
from tests.conftest import EXAMPLES, SHARED_PDFS
from tests.pdfgen import make_pdf, scanned_copy


def _crop_outside_media_box() -> bytes:
    """A scanned page whose crop box lies outside its media box: PDFium renders it (for OCR)
    with "ValueError: Crop exceeds page dimensions", as a real-world file did."""
    scan = scanned_copy(make_pdf([[("h1", "Invoice"), ("body", "Invoice 4711 is due.")]]), dpi=80)
    document = pdfium.PdfDocument(scan)
    document[0].set_cropbox(2000, 2000, 2100, 2100)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _good(word: str) -> bytes:
    return make_pdf([[("h1", f"Notes on {word}"), ("body", f"The {word} reopen on Monday.")]])


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    here = tmp_path / "pdfs"
    here.mkdir()
    real = (EXAMPLES / "dmca.pdf").read_bytes()
    files = {
        "a-bridges.pdf": _good("bridges"),
        "b-crop-outside-media-box.pdf": _crop_outside_media_box(),
        "c-not-a-pdf.pdf": b"this is a text file with a .pdf name\n" * 20,
        "d-empty.pdf": b"",
        "e-truncated.pdf": real[: len(real) // 3],
        "f-header-only.pdf": b"%PDF-1.7\n",
        "g-tunnels.pdf": _good("tunnels"),
    }
    for name, data in files.items():
        (here / name).write_bytes(data)
    encrypted = SHARED_PDFS / "pypdfium2-tests" / "tests" / "resources" / "encrypted.pdf"
    if encrypted.is_file():
        shutil.copy(encrypted, here / "h-encrypted.pdf")
    return here


def test_batch_faults_one_bad_pdf_of_each_kind_never_stops_the_batch(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"

    code = main(["ingest", str(folder), "--data-dir", str(data)])
    out = capsys.readouterr().out

    # Then the run went through every file: the good ones are indexed, each bad one FAILED with
    # a reason (exit code 1: some failed), and nothing stopped with a traceback
    assert code == 1, out
    assert "Traceback" not in out
    assert main(["status", "--json", "--data-dir", str(data)]) == 0
    listed = json.loads(capsys.readouterr().out)["documents"]
    statuses = {Path(d["source"]).name: d for d in listed}
    assert set(statuses) == {path.name for path in folder.iterdir()}
    for name, record in statuses.items():
        good = name in ("a-bridges.pdf", "g-tunnels.pdf")
        assert record["status"] == ("INDEXED" if good else "FAILED"), (name, record)
        if not good:  # a reason, then what to do about it
            assert record["error_code"] and re.search(r":\s\S", record["error"]), record
    crop = statuses["b-crop-outside-media-box.pdf"]
    assert crop["error_code"] == "malformed_pdf"
    assert "Crop exceeds page dimensions" in crop["error"]
