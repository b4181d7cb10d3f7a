"""A cited table row in headless Chromium (Debian's), over a real uvicorn: the answer's quote
shows the row under its table's header rows, and the viewer opens the cited page with the row's
cells highlighted on their line of the page. The PDFs are real ones from the ICDAR 2013 table
competition (../shared/data/tables), and the rows are checked against the annotators' cells: a
bank's loan table, whose rows pdf.js reads in one piece, and a study's table that its PDF draws
column by column, so that no row's text is anywhere in one piece."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import squash
from tests.web.browser import expect
from tests.web.serving import LocalServer
from tests.web.test_viewer import DESKTOP, _indexed

ICDAR = Path(__file__).resolve().parents[2].parent / "shared/data/tables/icdar2013"
LOANS = ICDAR / "us-004.pdf"
STUDY = ICDAR / "us-008.pdf"
CASES = [
    # (pdf, cited page, question, the annotators' CSV, its header rows)
    (LOANS, 2, "How much were BNY Mellon's lease financing receivables?", "us-004.p2.t0.csv", 2),
    (STUDY, 3, "What percent of the control group had no Year 1 Head Start participation?",
     "us-008.p3.t0.csv", 1),
]  # fmt: skip

if not (LOANS.is_file() and STUDY.is_file()):
    pytest.skip(f"real PDFs not available under {ICDAR}", allow_module_level=True)


def _expected(name: str) -> list[list[str]]:
    with (ICDAR / name).open(encoding="utf-8", newline="") as f:
        return [[" ".join(cell.split()) for cell in row] for row in csv.reader(f)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    with LocalServer(tmp_path_factory.mktemp("table-rows-data")) as running:
        _indexed(running, LOANS)
        _indexed(running, STUDY)
        yield running


@pytest.mark.parametrize(("pdf", "cited", "question", "expected", "heads"), CASES)
def test_a_cited_table_row_shows_its_header_and_is_highlighted_on_its_page(
    browser: Any,
    server: LocalServer,
    pdf: Path,
    cited: int,
    question: str,
    expected: str,
    heads: int,
) -> None:
    annotated = _expected(expected)
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.goto(server.url)
    # Given an extractive answer whose first quote is a row of the table
    page.locator("#question").fill(question)
    page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=20_000)
    chip = answer.locator(".chip").first
    expect(chip).to_contain_text(f"p. {cited}")

    # When its citation is opened
    chip.click()

    # Then the quote under the answer (the first the answer took from that passage) is one of
    # the annotated rows, cell by cell, under the table's annotated header rows
    table = answer.locator(".quote table.quote-table").first
    expect(table).to_be_visible()
    header = [row.locator("th").all_inner_texts() for row in table.locator("thead tr").all()]
    assert header == annotated[:heads]
    row = table.locator("tbody td").all_inner_texts()
    assert row in annotated[heads:], row

    # And the viewer shows the cited page with that row highlighted: each cell marked, all on
    # one line, left to right, and nothing else of the page
    viewer = page.locator("#viewer")
    expect(viewer).to_have_attribute("data-state", "ready", timeout=20_000)
    expect(viewer).to_have_attribute("data-page", str(cited))
    expect(viewer).to_have_attribute("data-highlight", "full")
    expect(page.locator("#viewer-status")).to_contain_text("the table row is highlighted")
    marks = page.locator("#viewer .textLayer mark")
    assert squash("".join(marks.all_inner_texts())) == squash("".join(row))
    boxes = [box for mark in marks.all() if (box := mark.bounding_box())]
    assert len(boxes) == marks.count() >= 2
    middles = [box["y"] + box["height"] / 2 for box in boxes]
    assert max(middles) - min(middles) < min(box["height"] for box in boxes)
    assert [box["x"] for box in boxes] == sorted(box["x"] for box in boxes)
    expect(marks.first).to_be_in_viewport()
    # The viewer's own quote is the row as a table too
    assert page.locator(".viewer-quote tbody td").all_inner_texts() == row
    context.close()
