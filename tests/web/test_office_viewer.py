"""Word, PowerPoint and Excel files in the page, in headless Chromium (Debian's) over a real
uvicorn: uploaded through the page's file input to INDEXED, answered with citations naming the
section, slide and sheet, and a citation opened in the viewer as the location's extracted text
(never handed to pdf.js) under its label, the quote highlighted (a table row as a row)."""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from docchat.models import DocStatus
from docchat.serve.access import ADMIN
from tests.conftest import squash
from tests.officegen import docx_file, pptx_file, xlsx_file
from tests.web.browser import expect
from tests.web.serving import LocalServer

DESKTOP = {"width": 1280, "height": 800}
INDEXING_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 20_000
# file: (question, the cited location's label, the quote, the nav button to another location
# and that location's label)
CASES = {
    "report.docx": (
        "What revenue and growth did Region 2 have?",
        "Section: Chapter 1 > Scope 1",
        "| Region 2 | 2,000 | 2% |",
        ("Previous", "Section: Chapter 1"),
    ),
    "book.xlsx": (
        "How many units did Region 2 sell and what revenue?",
        "Sheet 'Revenue' A1:E4",
        "| Region 2 | 20 | $2,469.00 | 2.0% | 2024-01-01 |",
        ("Next", "Sheet 'Costs' A1:B3"),
    ),
    "deck.pptx": (
        "Quarterly results 2: where did revenue grow?",
        "Slide 2: Quarterly results 2",
        "- Revenue grew in quarter 2",
        ("Next", "Slide 3: Quarterly results 3"),
    ),
}
BACK = {"Previous": "Next", "Next": "Previous"}


def _workbook() -> bytes:
    """The generated workbook with a second, different sheet to turn to."""
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(xlsx_file()))
    costs = book.create_sheet("Costs")
    for row in (["Item", "Cost"], ["Rent", 500], ["Power", 120]):
        costs.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _office_files(folder: Path) -> dict[str, Path]:
    """The three files, made with python-docx, openpyxl and python-pptx themselves."""
    made = {"report.docx": docx_file(), "book.xlsx": _workbook(), "deck.pptx": pptx_file(slides=3)}
    for name, data in made.items():
        (folder / name).write_bytes(data)
    return {name: folder / name for name in made}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _office_files(tmp_path_factory.mktemp("office-files"))


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, browser: Any, files: dict[str, Path]
) -> Iterator[LocalServer]:
    """A server with the three files uploaded through the page's file input and INDEXED."""
    with LocalServer(tmp_path_factory.mktemp("office-data")) as running:
        context = browser.new_context(viewport=DESKTOP)
        page = context.new_page()
        page.goto(running.url)
        page.set_input_files("#file", [str(p) for p in files.values()])
        for name in files:
            row = page.locator("#doc-list li.doc", has_text=name)
            expect(row).to_have_attribute("data-status", "INDEXED", timeout=INDEXING_TIMEOUT_MS)
            expect(row.locator(".badge")).to_have_text("INDEXED")
        context.close()
        yield running


class Watched:
    """A page whose requests are noted (to see that pdf.js and the file stay untouched)."""

    def __init__(self, context: Any) -> None:
        self.seen: list[str] = []
        context.on("request", lambda request: self.seen.append(urlsplit(request.url).path))


@pytest.fixture
def page(browser: Any, served: LocalServer) -> Iterator[tuple[Any, Watched]]:
    context = browser.new_context(viewport=DESKTOP)
    watched = Watched(context)
    opened = context.new_page()
    opened.goto(served.url)
    yield opened, watched
    context.close()


def _ask(page: Any, question: str) -> Any:
    page.locator("#question").fill(question)
    page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    return answer


def test_uploaded_office_files_are_indexed_with_their_locations(served: LocalServer) -> None:
    # The page's uploads (the fixture) reached INDEXED; each file's locations are its sections,
    # sheets and slides, as the viewer's route serves them
    records = {r.source.rsplit("/", 1)[-1]: r for r in served.index.documents()}
    assert set(records) == set(CASES)
    for name, (_, label, _, _) in CASES.items():
        pages = served.backend.library.extracted_pages(records[name].doc_id)
        assert label in [p.label for p in pages], (name, [p.label for p in pages])


@pytest.mark.parametrize("name", list(CASES))
def test_an_answer_cites_the_section_slide_or_sheet_and_opens_its_text_with_the_quote(
    page: tuple[Any, Watched], name: str
) -> None:
    opened, watched = page
    question, label, quote, (turn, other_label) = CASES[name]

    # Given an answer to a question about the file, its sources name the location, not a page
    answer = _ask(opened, question)
    chip = answer.locator(".chip", has_text=label).first
    expect(chip).to_be_visible()
    expect(chip.locator(".chip-page")).to_have_text(label)
    assert "p. " not in chip.inner_text()

    # When that citation is clicked
    chip.click()

    # Then the viewer shows the location's text under its label, the quote highlighted
    viewer = opened.locator("#viewer")
    expect(viewer).to_have_attribute("data-state", "ready", timeout=ANSWER_TIMEOUT_MS)
    expect(viewer).to_have_attribute("data-view", "text")
    expect(opened.locator("#viewer-where")).to_have_text(label)
    shown_quote = opened.locator(".viewer-quote").inner_text()
    # (a quoted row is shown under its table's header rows)
    assert squash(shown_quote).endswith(squash(quote)), (shown_quote, quote)
    marks = opened.locator("#viewer .viewer-text mark")
    marked = " ".join(marks.all_inner_texts())
    if quote.startswith("|"):
        # a table row: the whole row, every cell of it, and nothing else
        expect(viewer).to_have_attribute("data-highlight", "row")
        row = opened.locator("#viewer tr.quote-row")
        expect(row).to_have_count(1)
        cells = [c.strip() for c in quote.strip("|").split("|")]
        assert row.locator("td").all_inner_texts() == cells
        assert marks.all_inner_texts() == cells
        expect(opened.locator("#viewer-status")).to_contain_text("the quoted row is highlighted")
    else:
        expect(viewer).to_have_attribute("data-highlight", "full")
        assert squash(marked) == squash(quote), (marked, quote)
        expect(opened.locator("#viewer-status")).to_contain_text("the quote is highlighted")
    expect(marks.first).to_be_in_viewport()
    # the header of a cited table row is shown as the table's header
    if quote.startswith("|"):
        assert (
            opened.locator("#viewer tr.quote-row").evaluate(
                "row => row.closest('table').tHead.rows.length"
            )
            == 1
        )

    # And prev/next go through the document's locations, back to the quote
    opened.get_by_role("button", name=f"{turn} location").click()
    expect(opened.locator("#viewer-where")).to_have_text(other_label)
    expect(viewer).to_have_attribute("data-state", "ready")
    expect(marks).to_have_count(0)
    opened.get_by_role("button", name=f"{BACK[turn]} location").click()
    expect(opened.locator("#viewer-where")).to_have_text(label)
    expect(marks.first).to_be_visible()

    # And neither pdf.js nor the file itself was fetched: the text came from the page-text route
    assert not [p for p in watched.seen if "pdfjs" in p or p.endswith("/file")], watched.seen
    assert any(re.fullmatch(r"/documents/[^/]+/pages/\d+", p) for p in watched.seen)
    opened.keyboard.press("Escape")
    expect(viewer).to_be_hidden()


def test_document_text_goes_in_as_text_never_as_html(browser: Any, tmp_path: Path) -> None:
    # Given a Markdown file whose text is HTML markup
    hostile = tmp_path / "notes.md"
    hostile.write_text(
        "# Notes <img src=x onerror=alert(1)>\n\n"
        "The gate code is <b>4711</b> and <script>window.__ran = 1</script> stays text.\n"
    )
    with LocalServer(tmp_path / "data") as server:
        record = server.uploads.receive(
            hostile.name, hostile.read_bytes(), collection="default", writer=ADMIN
        )
        context = browser.new_context(viewport=DESKTOP)
        opened = context.new_page()
        dialogs: list[str] = []
        opened.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        expect_indexed(server, record.doc_id)

        # When a link to its first location with that quote is opened
        quote = "The gate code is <b>4711</b>"
        opened.goto(f"{server.url}#doc={record.doc_id}&page=1&quote={quote}")

        # Then the markup is shown as the characters it is, and none of it ran
        viewer = opened.locator("#viewer")
        expect(viewer).to_have_attribute("data-state", "ready", timeout=ANSWER_TIMEOUT_MS)
        expect(viewer).to_have_attribute("data-highlight", "full")
        text = opened.locator("#viewer .viewer-text")
        expect(text).to_contain_text("<script>window.__ran = 1</script>")
        expect(text).to_contain_text("Notes <img src=x onerror=alert(1)>")
        assert opened.locator("#viewer .viewer-text :is(img, b, script)").count() == 0
        assert opened.evaluate("window.__ran") is None
        assert dialogs == []
        assert squash(opened.locator("#viewer .viewer-text mark").inner_text()) == squash(quote)
        context.close()


def expect_indexed(server: LocalServer, doc_id: str) -> None:
    """Waits until the document is INDEXED (failing with its error if it failed)."""
    deadline = time.monotonic() + 60
    while (current := server.index.document(doc_id)) is None or current.status not in (
        DocStatus.INDEXED,
        DocStatus.FAILED,
    ):
        assert time.monotonic() < deadline, f"{doc_id} is still {current}"
        time.sleep(0.1)
    assert current.status == DocStatus.INDEXED, current.error
