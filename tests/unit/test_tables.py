"""Tables in conversion: real multi-year tables from ../shared/data/tables (ICDAR 2013's EU and
US government reports, whose expected cells are the annotators') come out one row per line with
each row label beside its own numbers; a 10-K style income statement keeps its two-row header
and the caption and units line above it as paragraphs; prose yields no table."""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from functools import cache
from pathlib import Path

import pytest

from docchat.ingest.convert.pdf import pages_from_pdf
from docchat.ingest.convert.tables.find import looks_tabular

ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TABLES = ROOT / "tables"
PROSE = ROOT / "pdfs"


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"real PDF not available: {path} is absent (it lives under ../shared/data)")
    return path


@cache
def _page(pdf: str, number: int) -> str:
    return pages_from_pdf(_need(TABLES / pdf).read_bytes()).pages[number - 1].markdown


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def _rows(markdown: str) -> list[list[str]]:
    """The cells of every table row in a page's markdown."""
    return [
        [_norm(cell) for cell in line.strip("|").split(" | ")]
        for line in markdown.split("\n")
        if line.startswith("| ") and line.endswith(" |") and not line.startswith("| ---")
    ]


def _expected(name: str) -> list[list[str]]:
    with (_need(TABLES / name)).open(encoding="utf-8", newline="") as f:
        return [[_norm(c) for c in row] for row in csv.reader(f)]


@pytest.mark.parametrize(
    ("pdf", "page", "expected", "heads"),
    [
        # Two header rows: the years over "N | % Pos" pairs, as the annotators set them (the
        # page's second table too, after prose).
        ("icdar2013/eu-018.pdf", 1, "icdar2013/eu-018.p1.t0.csv", 2),
        ("icdar2013/eu-018.pdf", 1, "icdar2013/eu-018.p1.t1.csv", 2),
        ("icdar2013/us-002.pdf", 1, "icdar2013/us-002.p1.t0.csv", 0),
        ("icdar2013/eu-016.pdf", 3, "icdar2013/eu-016.p3.t0.csv", 0),
        # Periods as row labels ("Q2 2006 - Q1 2010", a dash between), countries as columns.
        ("icdar2013/eu-011.pdf", 3, "icdar2013/eu-011.p3.t0.csv", 1),
    ],
)
def test_tables_real_multi_year_rows_keep_their_numbers(
    pdf: str, page: int, expected: str, heads: int
) -> None:
    # Given a whitespace-aligned table of a real report and its annotated rows
    markdown = _page(pdf, page)
    rows = _rows(markdown)
    annotated = _expected(expected)
    labelled = [row for row in annotated if _is_body_row(row)]
    assert len(labelled) >= 4

    # Then its annotated header rows are a table's header rows, above its delimiter line
    if heads:
        lines = markdown.split("\n")
        at = [_squeezed(x) for x in lines].index(_squeezed(_line(annotated[0])))
        delimiter = _line(["---"] * len(annotated[0]))
        want = [*map(_line, annotated[:heads]), delimiter]
        assert [_squeezed(x) for x in lines[at : at + heads + 1]] == [_squeezed(x) for x in want]

    # Then each annotated row label is the first cell of one line that holds its numbers, in
    # order (labels that repeat, as "Doctorate-granting" under two headings, in turn)
    found, at = 0, 0
    for want in labelled:
        label = _squeezed(want[0])
        match = next((i for i in range(at, len(rows)) if _squeezed(rows[i][0]) == label), None)
        if match is None:
            continue  # a label the annotators split differently (a section name over it)
        found, at = found + 1, match + 1
        assert [_squeezed(c) for c in rows[match] if c] == [_squeezed(c) for c in want if c]
    assert found >= 0.8 * len(labelled)


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _squeezed(text: str) -> str:
    # Annotators and PDFs part words differently ("Total(4MSs)"), and ICDAR's have typos in case.
    return "".join(text.split()).casefold()


def _is_body_row(row: list[str]) -> bool:
    """A row label and numbers (a header row of years is none)."""
    numbers = [c for c in row[1:] if re.fullmatch(r"[-$(]*[\d.,]+[)%]*", c)]
    years = [c for c in numbers if re.fullmatch(r"(19|20)\d\d", c)]
    return bool(re.search(r"[^\W\d]", row[0])) and len(numbers) >= 2 and len(years) < len(numbers)


def test_tables_multi_row_header_over_years() -> None:
    rows = _rows(_page("icdar2013/eu-018.pdf", 1))
    markdown = _page("icdar2013/eu-018.pdf", 1)

    header, delimiter = markdown.split("\n| --- ")[0].split("\n")[-2:], "| --- |"
    assert delimiter in markdown
    assert [c for c in _rows(header[0])[0] if c] == [
        "Country",
        "Sample unit",
        "Sample size",
        "2007",
        "2006",
        "2005",
        "2004",
        "2003",
    ]
    assert [c for c in _rows(header[1])[0] if c] == ["N", "% Pos"] * 5
    assert rows[3][:9] == ["Germany", "Single", "25g", "123", "0.8", "290", "0.7", "391", "0.5"]


def test_tables_income_statement_keeps_header_caption_and_units() -> None:
    reportlab = pytest.importorskip("reportlab", reason="reportlab draws the statement")
    del reportlab
    markdown = pages_from_pdf(_income_statement()).pages[0].markdown

    lines = markdown.split("\n")
    table = [line for line in lines if line.startswith("|")]
    assert table[:3] == [
        "|  | Year Ended December 31, |  |  |",
        "|  | 2017 | 2018 | 2019 |",
        "| --- | --- | --- | --- |",
    ]
    assert "| Net product sales | $ 118,573 | $ 141,915 | $ 160,408 |" in table
    assert "| Total net sales | 177,866 | 232,887 | 280,522 |" in table
    assert "| Equity-method investment activity, net of tax | (4) | 9 | — |" in table
    above = markdown[: markdown.index("\n|")]
    assert "CONSOLIDATED STATEMENTS OF OPERATIONS" in above
    assert above.rstrip().endswith("(in millions, except per share data)")
    assert "See accompanying notes" in markdown[markdown.rindex("|") :]


def test_tables_header_set_above_the_rules_of_a_ruled_statement_heads_it() -> None:
    # Nike's 2019 10-K rules its income statement from "Revenues" down and prints the years
    # above the rules: they were left a paragraph, and "Revenues | $ 39,117 | ..." headed the
    # table, so no number had its year.
    pytest.importorskip("reportlab", reason="reportlab draws the statement")
    markdown = pages_from_pdf(_income_statement(ruled_rows=True)).pages[0].markdown

    table = [line for line in markdown.split("\n") if line.startswith("|")]
    assert table[:4] == [
        "|  | Year Ended December 31, |  |  |",
        "|  | 2017 | 2018 | 2019 |",
        "| --- | --- | --- | --- |",
        "| Net sales: |  |  |  |",
    ]
    assert "| Net product sales | $ 118,573 | $ 141,915 | $ 160,408 |" in table
    assert "| Total net sales | 177,866 | 232,887 | 280,522 |" in table
    # The header's words are in the table, not also a paragraph; the title and units stay text
    above = markdown[: markdown.index("\n|")]
    assert "2017" not in above and "Year Ended" not in above
    assert above.rstrip().endswith("(in millions, except per share data)")


def test_tables_a_page_that_is_all_table_converts() -> None:
    # A page holding nothing but a table (Amazon's 2019 10-K has one) read as columns before
    # its table was found, and failed the whole PDF with "min() arg is an empty sequence".
    pytest.importorskip("reportlab", reason="reportlab draws the statement")
    markdown = pages_from_pdf(_income_statement(only_table=True)).pages[0].markdown

    assert markdown.startswith("|  | 2017 | 2018 | 2019 |\n| --- | --- | --- | --- |\n")
    assert "| Total net sales | 177,866 | 232,887 | 280,522 |" in markdown.splitlines()


@pytest.mark.parametrize(
    ("pdf", "page"),
    [
        # A two-column paper's first page: justified prose, a wide gutter, no table.
        ("pdfminer.six-samples/samples/nonfree/naacl06-shinyama.pdf", 1),
        ("pdfminer.six-samples/samples/nonfree/naacl06-shinyama.pdf", 3),
        ("py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf", 2),
        ("py-pdf-sample-files/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 115),  # an index
    ],
)
def test_tables_prose_pages_yield_no_table(pdf: str, page: int) -> None:
    converted = pages_from_pdf(_need(PROSE / pdf).read_bytes())

    markdown = converted.pages[page - 1].markdown
    assert len(markdown) > 500
    assert "| --- |" not in markdown


ROWS = [
    ("Net sales:", 0, None, False),
    ("Net product sales", 10, ("118,573", "141,915", "160,408"), True),
    ("Net service sales", 10, ("59,293", "90,972", "120,114"), False),
    ("Total net sales", 20, ("177,866", "232,887", "280,522"), False),
    ("Operating expenses:", 0, None, False),
    ("Cost of sales", 10, ("111,934", "139,156", "165,536"), False),
    ("Fulfillment", 10, ("25,249", "34,027", "40,232"), False),
    ("Total operating expenses", 20, ("173,760", "220,466", "265,981"), False),
    ("Operating income", 0, ("4,106", "12,421", "14,541"), False),
    ("Other income (expense), net", 0, ("346", "(183)", "203"), False),
    ("Equity-method investment activity,", 0, None, False),  # wraps onto the next line
    ("net of tax", 10, ("(4)", "9", "—"), False),
    ("Net income", 0, ("3,033", "10,073", "11,588"), True),
]


def _income_statement(*, only_table: bool = False, ruled_rows: bool = False) -> bytes:
    """A page set as a 10-K sets its income statement: title, units line, a spanning header
    with a rule under it over the years, label rows, dollar signs in their own column; or,
    `only_table`, the years and rows alone (a statement's second page); or, `ruled_rows`, a
    rule above and under every row from the first label down and rules between the columns
    there, none in the header (as Nike's 2019 10-K sets it)."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    c = canvas.Canvas(buffer, pagesize=letter)
    c.setFont("Helvetica", 9)
    if not only_table:
        c.setFont("Helvetica-Bold", 11)
        c.drawCentredString(306, 716, "CONSOLIDATED STATEMENTS OF OPERATIONS")
        c.setFont("Helvetica", 9)
        c.drawCentredString(306, 703, "(in millions, except per share data)")
        c.drawCentredString(432, 680, "Year Ended December 31,")
        c.setLineWidth(0.5)
        if not ruled_rows:
            c.line(300, 676, 534, 676)
    for x, year in zip((372, 452, 532), ("2017", "2018", "2019"), strict=True):
        c.drawRightString(x, 666, year)
    if not only_table and not ruled_rows:
        c.line(300, 662, 534, 662)
    y = 650
    if ruled_rows:
        c.line(72, y + 10, 534, y + 10)
    for label, indent, values, dollars in ROWS:
        if ruled_rows:
            c.line(72, y - 3, 534, y - 3)
        c.drawString(72 + indent, y, label)
        for x, value in zip((372, 452, 532), values or (), strict=False):
            c.drawRightString(x, y, value)
            if dollars:
                c.drawString(x - 60, y, "$")
        y -= 12
    if ruled_rows:
        for x in (300, 382, 462):  # and between the columns, from the first row down
            c.line(x, y + 9, x, 660)
    if not only_table:
        c.setFont("Helvetica", 8)
        c.drawString(72, y - 14, "See accompanying notes to consolidated financial statements.")
    c.showPage()
    c.save()
    return buffer.getvalue()


@pytest.mark.slow  # OCR of a 200 DPI page: seconds, the engine's start included
def test_tables_on_an_ocr_page_keep_rows_and_numbers() -> None:
    pytest.importorskip("rapidocr", reason="the OCR engine (requirements/ocr.txt) reads the scan")
    from docchat.ingest.convert.pageocr import LocalOcr
    from docchat.ingest.ocr import OcrOptions
    from tests.pdfgen import scanned_copy

    # Given the income statement as an image only (a scan), read by OCR
    scan = scanned_copy(_income_statement(), dpi=200)
    [page] = pages_from_pdf(scan, ocr=LocalOcr(OcrOptions(dpi=200, threads=1))).pages

    # Then its rows come out as table rows, each label with its own three numbers
    assert page.ocr
    rows = {row[0]: row[1:] for row in _rows(page.markdown)}
    assert [c for c in rows["Total net sales"] if c] == ["177,866", "232,887", "280,522"]
    assert [c for c in rows["Operating income"] if c] == ["4,106", "12,421", "14,541"]
    # and the note under the table stays text, after it (no OCR line is lost to the table)
    assert page.markdown.endswith("See accompanying notes to consolidated financial statements.")


def test_tables_a_sign_left_in_the_cell_before_goes_to_its_number() -> None:
    # Nike's 2019 10-K sets each "$" just left of its right-aligned number, within the column
    # before it: "| Revenues | $ 39,117 | $ 36,397 $ | 34,350 $ | 32,376 $ | 30,601 |" it read
    from docchat.ingest.convert.tables.cells import join_currency

    rows = [
        ["", "2019", "2018", "2017", "2016"],
        ["Revenues", "$ 39,117", "$ 36,397 $", "34,350 $", "32,376"],
        ["Gross profit", "17,474", "15,956", "15,312", "14,971"],
    ]
    joined, _ = join_currency([list(r) for r in rows], [[None] * 5 for _ in rows])

    assert joined[1] == ["Revenues", "$ 39,117", "$ 36,397", "$ 34,350", "$ 32,376"]
    assert joined[2] == rows[2]


@pytest.mark.parametrize(
    ("text", "numbers", "expected"),
    [
        # Three rows ending in two numbers, PDFium's \r\n and trailing spaces included.
        ("Sales 1,234 (56)\r\nCost 12 3.5% \r\nNet — 7\r\n", 2, True),
        # Calls and index entries end in a parenthesis or a page number, not in two numbers.
        ("plot(x)\r\nsummary(fit)\r\nlm(y ~ x)\r\nf(1) (2)x\r\n", 2, False),
        ("Index, 12\r\nPlots, 3\r\nTables, 45\r\n", 1, False),
        # One number set apart is enough for `numbers=1`; a parenthesis after a percentage too.
        ("Cash 12\r\nDebt (4%)\r\nEquity 9\r\n", 1, True),
        # Two rows only, or rows whose numbers are not set apart by a space.
        ("Sales 1 2\r\nCost 3 4\r\n", 2, False),
        ("Sales1,2\r\nCost3-4\r\nNet5%6\r\n", 2, False),
    ],
)
def test_looks_tabular_reads_line_ends(text: str, numbers: int, expected: bool) -> None:
    assert looks_tabular(text, numbers=numbers) is expected
