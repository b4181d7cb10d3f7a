"""Scanned PDFs through `docchat ingest`, `status` and `ask`: OCR'd pages are indexed and cited
like any others (real OCR, the real offline embedder, extractive answers; slow: ~6 pages OCR'd)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.cli.run import run
from tests.conftest import SHARED_PDFS, squash

pytestmark = pytest.mark.slow
OCRMYPDF = SHARED_PDFS / "ocrmypdf-test-resources" / "tests" / "resources"


@pytest.fixture(scope="module")
def scans(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("scans")
    for name in ("linn.pdf", "multipage.pdf"):
        shutil.copy(OCRMYPDF / name, folder / name)
    return folder


def _cited(capsys: pytest.CaptureFixture[str], data: str, question: str) -> list[dict[str, str]]:
    code, out, _ = run(capsys, "ask", question, "--data-dir", data, "--json")
    assert code == 0
    answer = json.loads(out)
    assert answer["mode"] == "extractive"
    citations: list[dict[str, str]] = answer["citations"]
    return citations


def test_ocr_ingest_indexes_scans_and_answers_from_their_pages(
    scans: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")

    # When both scans are ingested (linn.pdf: one scanned page; multipage.pdf: 6 pages, one of
    # them with a text layer)
    code, out, _ = run(capsys, "ingest", str(scans), "--data-dir", data)

    # Then both are indexed, with the OCR'd pages counted
    assert code == 0, out
    code, out, _ = run(capsys, "status", "--json", "--data-dir", data)
    by_name = {Path(d["source"]).name: d for d in json.loads(out)["documents"]}
    assert by_name["linn.pdf"]["status"] == "INDEXED"
    assert (by_name["linn.pdf"]["pages"], by_name["linn.pdf"]["pages_ocr"]) == (1, 1)
    assert by_name["multipage.pdf"]["status"] == "INDEXED"
    assert (by_name["multipage.pdf"]["pages"], by_name["multipage.pdf"]["pages_ocr"]) == (6, 5)
    code, out, _ = run(capsys, "status", "--data-dir", data)
    assert re.search(r"│\s+6 \(5 OCR\)\s+│", out), out

    # And questions about the scanned text are answered with citations of the right pages
    citations = _cited(capsys, data, "How many notes does the LinnSequencer disk hold?")
    assert citations
    first = citations[0]
    assert Path(first["source"]).name == "linn.pdf" and first["page"] == 1
    assert "110,000 notes" in squash(first["quote"]) or any(
        "110,000" in c["quote"] for c in citations
    )

    citations = _cited(capsys, data, "Who was setting in the kitchen door, listening?")
    assert citations
    first = citations[0]
    assert Path(first["source"]).name == "multipage.pdf" and first["page"] == 1
    assert "kitchen" in first["quote"].casefold()
