"""A shelf of several companies' filings in one index (issue 42, FinanceBench's setting): a
question finds the company it names however it names it (legal name, ticker, initials), the
period however it is written, the statement row under the name the statement prints, and quotes
evidence before the certifications every filing carries.

The covers and statement rows are typed from real filings (FinanceBench's pdfs/: Johnson &
Johnson's 10-K for 2022, Amcor's for fiscal 2023, Best Buy's 10-K for fiscal 2023 and 10-Q for
the second quarter of fiscal 2024, 3M's 10-K for 2018); titles come from the covers as ingestion
makes them (`docchat.ingest.filings.filing_title`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from docchat.evaluate.qa import verbatim
from docchat.ingest.filings import filing_title
from docchat.models import Page
from docchat.search.library import Library
from tests.unit.test_table_quotes import _ask, _library, _page


def _cover(form: str, period: str, name: str, symbol: str, exchange: str) -> str:
    return "\n".join(
        [
            "UNITED STATES",
            "SECURITIES AND EXCHANGE COMMISSION",
            "Washington, D.C. 20549",
            f"FORM {form}",
            f"For the {period}",
            "Commission File Number 1-3215",
            name,
            "(Exact name of registrant as specified in its charter)",
            "Securities registered pursuant to Section 12(b) of the Act:",
            "Title of each class Trading Symbol(s) Name of each exchange on which registered",
            f"Common Stock, par value $1.00 per share {symbol} {exchange}",
        ]
    )


def _statement(heading: str, header: str, rows: list[str]) -> str:
    return "\n".join(
        [f"# {heading}", "(Dollars in millions)", header, "| --- | --- | --- |", *rows]
    )


# A certification each filing carries (Exhibit 31), word for word but for the officer's name.
CERTIFICATION = (
    "Based on my knowledge, this report does not contain any untrue statement of a material fact "
    "or omit to state a material fact necessary to make the statements made, in light of the "
    "circumstances under which such statements were made, not misleading with respect to the "
    "period covered by this report."
)

SHELF: dict[str, list[str]] = {
    "jnj-2022": [
        _cover(
            "10-K",
            "fiscal year ended January 1, 2023",
            "JOHNSON & JOHNSON",
            "JNJ",
            "New York Stock Exchange",
        ),
        _statement(
            "Consolidated Statements of Earnings",
            "|  | 2022 | 2021 |",
            [
                "| Sales to customers | $ 94,943 | $ 93,775 |",
                "| Cost of products sold | 31,089 | 29,855 |",
                "| Selling, marketing and administrative expenses | 24,765 | 24,659 |",
                "| Net earnings | 17,941 | 20,878 |",
            ],
        ),
        f"Certification. I, Joaquin Duato, certify that: {CERTIFICATION}",
    ],
    "amcor-2023": [
        _cover(
            "10-K",
            "fiscal year ended June 30, 2023",
            "AMCOR PLC",
            "AMCR",
            "New York Stock Exchange",
        ),
        _statement(
            "Consolidated Statement of Income",
            "|  | 2023 | 2022 |",
            [
                "| Net sales | $ 14,694 | $ 14,544 |",
                "| Cost of sales | (11,724) | (11,969) |",
                "| Selling, general, and administrative expenses | (1,246) | (1,284) |",
                "| Net income | 1,058 | 815 |",
            ],
        ),
        f"Certification. I, Ronald Delia, certify that: {CERTIFICATION}",
    ],
    "bby-2023": [
        _cover(
            "10-K",
            "fiscal year ended January 28, 2023",
            "BEST BUY CO., INC.",
            "BBY",
            "New York Stock Exchange",
        ),
        _statement(
            "Consolidated Statements of Earnings",
            "|  | January 28, 2023 | January 29, 2022 |",
            [
                "| Revenue | $ 46,298 | $ 51,761 |",
                "| Cost of sales | 36,386 | 40,121 |",
                "| Net earnings | 1,419 | 2,454 |",
            ],
        ),
        "Store count. At the end of fiscal 2023 we operated 982 stores in the U.S. and Canada.",
        f"Certification. I, Corie Barry, certify that: {CERTIFICATION}",
    ],
    "bby-2024q2": [
        _cover(
            "10-Q",
            "quarterly period ended July 29, 2023",
            "BEST BUY CO., INC.",
            "BBY",
            "New York Stock Exchange",
        ),
        "Store count. At the end of the second quarter of fiscal 2024 we operated 969 stores in "
        "the U.S. and Canada.",
        f"Certification. I, Corie Barry, certify that: {CERTIFICATION}",
    ],
    "mmm-2018": [
        _cover(
            "10-K",
            "fiscal year ended December 31, 2018",
            "3M COMPANY",
            "MMM",
            "New York Stock Exchange",
        ),
        _statement(
            "Consolidated Statement of Cash Flows",
            "|  | 2018 | 2017 |",
            [
                "| Net income including noncontrolling interest | $ 5,363 | $ 4,869 |",
                "| Purchases of property, plant and equipment (PP&E) | (1,577) | (1,373) |",
                "| Proceeds from sale of PP&E and other assets | 262 | 49 |",
            ],
        ),
        _statement(
            "Consolidated Balance Sheet",
            "|  | 2018 | 2017 |",
            [
                "| Total current assets | 13,709 | 14,277 |",
                "| Property, plant and equipment — net | 8,738 | 8,866 |",
                "| Total current liabilities | 7,244 | 7,687 |",
                "| Total assets | $ 36,500 | $ 37,987 |",
            ],
        ),
        f"Certification. I, Michael Roman, certify that: {CERTIFICATION}",
    ],
}


def _pages(texts: list[str]) -> list[Page]:
    return [_page(n, text) for n, text in enumerate(texts, start=1)]


def filed(directory: Path, shelf: dict[str, list[str]]) -> Library:
    """A shelf of documents typed as pages (doc_id -> each page's text), titled from their
    covers as ingestion titles them (`filing_title`), indexed in `directory`."""
    documents = {doc_id: _pages(texts) for doc_id, texts in shelf.items()}
    titles = {doc_id: filing_title(pages) or doc_id for doc_id, pages in documents.items()}
    return _library(directory, documents, titles=titles)


def searched(library: Library, question: str, *, top_k: int) -> set[str]:
    """The documents of the first `top_k` passages a search for `question` finds."""
    return {p.chunk.doc_id for p in library.search(question, top_k=top_k).passages}


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Library:
    return filed(tmp_path_factory.mktemp("shelf"), SHELF)


def test_a_cover_titles_its_filing_with_the_company_symbol_and_period(shelf: Library) -> None:
    titles = {r.doc_id: r.title for r in shelf.documents()}
    assert (
        titles["jnj-2022"] == "JOHNSON & JOHNSON (JNJ) Form 10-K, fiscal year ended January 1, 2023"
    )
    assert titles["bby-2024q2"] == (
        "BEST BUY CO., INC. (BBY) Form 10-Q, quarterly period ended July 29, 2023"
    )


@pytest.mark.parametrize("name", ["JnJ", "J&J", "JNJ", "Johnson & Johnson"])
def test_a_company_named_by_ticker_or_initials_is_answered_from_its_filing(
    shelf: Library, name: str
) -> None:
    # Best Buy's statement has a "Net earnings" row too
    text, citations = _ask(shelf, f"What were {name}'s net earnings in 2022?")

    assert citations, text
    assert citations[0].doc_id == "jnj-2022"
    assert "17,941" in citations[0].quote


@pytest.mark.parametrize("ticker", ["AMCR", "BBY", "MMM"])
def test_every_company_is_found_by_its_trading_symbol(shelf: Library, ticker: str) -> None:
    found = shelf.search(f"{ticker} net income", top_k=3).passages

    assert found
    assert {p.chunk.doc_id.split("-")[0] for p in found} == {
        {"AMCR": "amcor", "BBY": "bby", "MMM": "mmm"}[ticker]
    }


@pytest.mark.parametrize(
    "question",
    [
        "How many stores did Best Buy operate at the end of Q2 of FY2024?",
        "How many stores did Best Buy operate at the end of the second quarter of fiscal 2024?",
        "How many stores did Best Buy operate at the end of FY2024 Q2?",
    ],
)
def test_a_quarter_written_three_ways_finds_the_same_filing(shelf: Library, question: str) -> None:
    text, citations = _ask(shelf, question)

    assert citations, text
    assert citations[0].doc_id == "bby-2024q2"
    assert "969" in citations[0].quote


@pytest.mark.parametrize(
    ("question", "doc_id", "figure"),
    [
        # The statement prints "Purchases of property, plant and equipment (PP&E)".
        ("What was 3M's capital expenditure in 2018?", "mmm-2018", "(1,577)"),
        # "Cost of sales" and "Cost of products sold" for cost of goods sold.
        ("What was Amcor's cost of goods sold in 2023?", "amcor-2023", "(11,724)"),
        ("What was the COGS of Johnson & Johnson in 2022?", "jnj-2022", "31,089"),
        # "Revenue" for net sales, "Net sales" for revenue.
        ("What were Best Buy's net sales in fiscal 2023?", "bby-2023", "46,298"),
        ("What was Amcor's revenue in 2023?", "amcor-2023", "14,694"),
        # An initialism the row spells out: property, plant and equipment.
        ("What was 3M's PPNE in 2018?", "mmm-2018", "8,738"),
    ],
)
def test_a_row_is_found_by_the_concept_it_reports(
    shelf: Library, question: str, doc_id: str, figure: str
) -> None:
    text, citations = _ask(shelf, question)

    assert citations, text
    assert citations[0].doc_id == doc_id
    assert figure in citations[0].quote, citations[0].quote


@pytest.mark.parametrize(
    "question",
    [
        "Does Johnson & Johnson's report state any material fact about its cost of products "
        "sold in 2022?",
        "What untrue statement of a material fact did 3M make about its capital expenditure?",
    ],
)
def test_a_certification_in_every_filing_is_never_the_first_quote(
    shelf: Library, question: str
) -> None:
    text, citations = _ask(shelf, question)

    assert citations, text
    assert "Based on my knowledge" not in citations[0].quote
    # It is still there to be quoted, after the evidence
    assert any(c.quote[:1].isdigit() or "|" in c.quote for c in citations)


def test_boilerplate_is_what_many_documents_hold(shelf: Library) -> None:
    fact = "At the end of fiscal 2023 we operated 982 stores in the U.S. and Canada."
    assert shelf.boilerplate([CERTIFICATION, fact]) == {CERTIFICATION}


def test_a_shelf_of_two_documents_has_no_boilerplate(tmp_path: Path) -> None:
    documents = {d: _pages(SHELF[d]) for d in ("jnj-2022", "amcor-2023")}
    titles = {d: filing_title(p) or d for d, p in documents.items()}
    library = _library(tmp_path, documents, titles=titles)

    assert library.boilerplate([CERTIFICATION]) == set()


def test_a_spreadsheet_row_is_found_by_a_cells_value(tmp_path: Path) -> None:
    # Given a workbook whose rows hold 58 and 89 in several columns, converted as ingestion does
    import io

    import openpyxl

    from docchat.ingest.formats import convert

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Scores"
    sheet.append(["Sample", "Alpha", "Beta", "Gamma"])
    rows = [("S01", 58, 12, 89), ("S02", 89, 58, 40), ("S03", 40, 89, 58), ("S04", 12, 40, 12)]
    for row in rows * 5:
        sheet.append(list(row))
    data = io.BytesIO()
    book.save(data)
    converted = convert("scores.xlsx", data.getvalue())
    library = _library(tmp_path, {"scores": converted.pages}, titles={"scores": "Scores"})

    # When a question names a column and a value in it
    for column, value, sample in [("Alpha", 89, "S02"), ("Beta", 89, "S03"), ("Gamma", 58, "S03")]:
        text, citations = _ask(library, f"Which sample has a {column} of {value}?")

        # Then the first quote is the row holding that value in that column
        assert citations, text
        assert citations[0].quote.startswith(f"| {sample} |"), (column, citations[0].quote)


def test_a_quote_that_starts_at_the_end_of_a_page_ends_on_the_next(tmp_path: Path) -> None:
    # Given Boeing's forecast sentence, which a page break cuts (10-K 2022, pp. 8-9)
    first = (
        "# Commercial Airplanes\n"
        "We continue to see demand for our airplanes across the market. We are forecasting "
        "production rate changes for the 737 and 787 programs in 2023, and if production rate "
        "changes at any of our"
    )
    second = (
        "facilities are delayed, we could incur abnormal production costs in 2023.\n"
        "Our backlog includes more than 4,500 airplanes."
    )
    library = _library(
        tmp_path, {"ba": _pages([first, second])}, titles={"ba": "The Boeing Company Form 10-K"}
    )

    text, citations = _ask(library, "What production rate changes is Boeing forecasting for 2023?")

    # Then the cut sentence is quoted whole, cited at the page it starts on to the one it ends
    cited = next(c for c in citations if "if production rate" in c.quote)
    assert cited.quote.endswith("abnormal production costs in 2023."), cited.quote
    assert (cited.page, cited.page_end) == (1, 2)
    assert "…" not in text.split(cited.quote)[1][:3]
    # and each page's part is on that page, word for word
    head, tail = cited.quote.split(" facilities")
    assert verbatim(head, first) and verbatim("facilities" + tail, second)


def test_a_model_narrows_its_search_by_company_year_and_form(shelf: Library) -> None:
    from docchat.answer.tools import SEARCH_DOCUMENTS, SearchDocumentsInput, input_schema

    catalog = shelf.catalog()
    # The search tool offers the filters to the model (the agent's and MCP's `search`)
    assert {"company", "year", "form", "quarter", "collection"} <= set(
        input_schema(SearchDocumentsInput)["properties"]
    )
    assert SEARCH_DOCUMENTS.input is SearchDocumentsInput

    def documents(**filters: str) -> list[str] | None:
        return SearchDocumentsInput(query="stores", **filters).documents(catalog, None)

    assert documents(company="Best Buy") == ["bby-2023", "bby-2024q2"]
    assert documents(company="BBY", form="10-Q") == ["bby-2024q2"]
    assert documents(company="J&J", year="FY2022") == ["jnj-2022"]
    assert documents(year="2018") == ["mmm-2018"]
    assert documents(company="Pfizer") == []
    # a quarter in the company's own fiscal calendar: Best Buy's year ends in January, so the
    # quarter ended July 29, 2023 is the second of fiscal 2024
    assert documents(quarter="Q2 FY2024") == ["bby-2024q2"]
    assert documents(company="Best Buy", quarter="the second quarter of fiscal 2024") == [
        "bby-2024q2"
    ]
    assert documents(quarter="Q2 2023") == []
    # and the listing says which quarter a quarterly report covers, as the filter reads it
    assert catalog.quarter_named("bby-2024q2") == "Q2 FY2024"
    assert catalog.quarter_named("bby-2023") == ""
    assert documents(collection="default") == [r.doc_id for r in shelf.documents()]
    assert documents(collection="finance") == []
    assert documents() is None
    # and never widens what the chat may use
    assert SearchDocumentsInput(query="x", company="BBY").documents(catalog, ["bby-2023"]) == [
        "bby-2023"
    ]


def test_a_model_is_told_when_its_quarter_names_none(shelf: Library) -> None:
    from pydantic import ValidationError

    from docchat.answer.tools import SearchDocumentsInput

    with pytest.raises(ValidationError, match="names no fiscal quarter"):
        SearchDocumentsInput(query="stores", quarter="summer")


def test_the_document_listing_says_each_documents_company_and_years(shelf: Library) -> None:
    from docchat.search.titles import about

    record = next(r for r in shelf.documents() if r.doc_id == "jnj-2022")
    assert about(record.title) == (
        ", company johnson johnson (JNJ), form 10-K, years 2022, 2023, date 2023-01-01"
    )


@pytest.mark.parametrize(
    "question",
    [
        "How many stores did Best Buy operate according to its most recent 10-Q?",
        "How many stores did Best Buy operate at the end of the last quarter?",
    ],
)
def test_the_most_recent_report_is_the_latest_the_shelf_holds(
    shelf: Library, question: str
) -> None:
    assert sorted(shelf.catalog().latest(question)) == sorted(
        d for d in SHELF if not d.startswith("bby") or d == "bby-2024q2"
    )
    text, citations = _ask(shelf, question)
    assert citations and citations[0].doc_id == "bby-2024q2", text


def test_a_question_naming_a_statement_reads_the_passages_under_its_heading_first(
    shelf: Library,
) -> None:
    found = shelf.search(
        "What did 3M report for 2018? Answer from the cash flow statement.", top_k=3
    ).passages

    assert "Consolidated Statement of Cash Flows" in found[0].chunk.headings


def test_a_release_of_a_years_results_is_about_the_next_year_too() -> None:
    # Johnson & Johnson's release of January 24, 2023 gives its guidance for 2023
    from docchat.search.titles import title_years

    release = "Johnson & Johnson (JNJ): results for fourth-quarter and full year 2022"
    assert title_years(release) == {"2022", "2023"}
    assert title_years("Johnson & Johnson (JNJ): results for second-quarter 2023") == {"2023"}


# Filer-status rows of filing covers as conversion extracts them, each in its filing's own check
# boxes (FinanceBench's pdfs/: Johnson & Johnson 2022, Nike 2018, Amazon 2017, Coca-Cola 2017).
FILER_ROWS = [
    "Large accelerated filer \u2611 Accelerated filer \u2610 Non-accelerated filer \u2610 "
    "Smaller reporting company \u2610 Emerging growth company \u2610",
    "Large accelerated filer \xfe Accelerated filer \xa8 Non-accelerated filer \xa8 "
    "Smaller reporting company \xa8 Emerging growth company \xa8",
    "Large accelerated filer x Accelerated filer Non-accelerated filer \xa8",
    "Large accelerated filer \xfd Accelerated filer o Non-accelerated filer o "
    "Smaller reporting company o",
]


def test_a_covers_row_of_check_boxes_is_boilerplate_on_any_shelf(tmp_path: Path) -> None:
    # A single filing: no text recurs across documents, and the cover's boxes are still a form's
    documents = {"jnj-2022": _pages(SHELF["jnj-2022"][:1])}
    library = _library(tmp_path, documents, titles={"jnj-2022": "JOHNSON & JOHNSON, Form 10-K"})
    prose = [
        "Sales grew 1.3% in 2022, a 2 x 3 grid of o and x aside.",
        "\uf0b7 Pharmaceutical \uf0b7 MedTech",  # a symbol font's bullets are no boxes
        # nor its Greek letters, though Wingdings 2 boxes in the same codes (COVID-QA's paper
        # on HeteSim, as extracted)
        "When the length n of path \uf050 is even, we can split it into \uf050 = \uf04c P P ( )",
    ]

    assert library.boilerplate([*FILER_ROWS, *prose]) == set(FILER_ROWS)


def test_a_covers_check_boxes_are_quoted_after_the_evidence(tmp_path: Path) -> None:
    # Given J&J's cover with its filer-status row, and the year's sales growth
    # (its Q4 2022 earnings release)
    cover = f"{SHELF['jnj-2022'][0]}\n{FILER_ROWS[0]}"
    growth = (
        "2022 Full-Year reported sales growth of 1.3% to $94.9 Billion primarily driven by "
        "strong commercial execution partially offset by unfavorable foreign exchange."
    )
    documents = {"jnj-2022": _pages([cover, growth])}
    library = _library(tmp_path, documents, titles={"jnj-2022": "JOHNSON & JOHNSON, Form 10-K"})

    text, citations = _ask(library, "Is Johnson & Johnson a high growth company?")

    # The row holds more of the question's words ("growth company") than the evidence does
    quotes = [c.quote for c in citations]
    boxed = [n for n, quote in enumerate(quotes) if "\u2610" in quote]
    growing = [n for n, quote in enumerate(quotes) if "1.3%" in quote]
    assert growing, text
    assert all(growing[0] < n for n in boxed), quotes
