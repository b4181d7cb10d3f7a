"""A question's fiscal quarter chooses among the named company's quarterly reports, in the
company's own fiscal calendar (issue 42: "asked about the first quarter of 2023, it reads another
quarter's filing"). Three companies whose fiscal years end in January (Best Buy), December in
52/53-week years (Pfizer) and June (Amcor), their covers typed from real filings and titled as
ingestion titles them (`docchat.ingest.filings.filing_title`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from docchat.search.library import Library
from docchat.search.quarters import quarter_of, quarters_asked, year_end_month
from tests.unit.test_shelf import _cover, filed, searched

BBY = ("BEST BUY CO., INC.", "BBY", "New York Stock Exchange")
PFE = ("PFIZER INC.", "PFE", "New York Stock Exchange")
AMCR = ("AMCOR PLC", "AMCR", "New York Stock Exchange")


def _quarterly(ended: str, company: tuple[str, str, str], fact: str) -> list[str]:
    return [_cover("10-Q", f"quarterly period ended {ended}", *company), fact]


SHELF = {
    "bby-10k": [
        _cover("10-K", "fiscal year ended January 28, 2023", *BBY),
        "Store count. We operated 982 stores at the end of the fiscal year.",
    ],
    "bby-10q1": _quarterly("April 29, 2023", BBY, "Store count. We operated 978 stores."),
    "bby-10q2": _quarterly("July 29, 2023", BBY, "Store count. We operated 969 stores."),
    "pfe-10k": [
        _cover("10-K", "fiscal year ended December 31, 2022", *PFE),
        "Revenues. Total revenues were $100,330 million.",
    ],
    "pfe-10q1": _quarterly("April 2, 2023", PFE, "Revenues. Total revenues were $18,282 million."),
    "pfe-10q2": _quarterly("July 2, 2023", PFE, "Revenues. Total revenues were $12,734 million."),
    "pfe-release": [
        "FOR IMMEDIATE RELEASE\nPfizer Reports Second-Quarter 2023 Results\nNEW YORK, "
        "August 1, 2023 - Pfizer Inc. (NYSE: PFE) reported financial results.",
        "Revenues. Revenues were $12.7 billion.",
    ],
    "amcr-10k": [
        _cover("10-K", "fiscal year ended June 30, 2023", *AMCR),
        "Net sales. Net sales were $14,694 million.",
    ],
    "amcr-10q2": _quarterly("December 31, 2022", AMCR, "Net sales. Net sales were $3,641 million."),
    "amcr-10q3": _quarterly("March 31, 2023", AMCR, "Net sales. Net sales were $3,706 million."),
}


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Library:
    return filed(tmp_path_factory.mktemp("quarters"), SHELF)


def _searched(shelf: Library, question: str) -> set[str]:
    return searched(shelf, question, top_k=8)


@pytest.mark.parametrize(
    ("question", "documents"),
    [
        ("How many stores did Best Buy operate at the end of Q2 of FY2024?", {"bby-10q2"}),
        (
            "How many stores did Best Buy operate in the second quarter of fiscal 2024?",
            {"bby-10q2"},
        ),
        ("How many stores did Best Buy operate in 2Q24?", {"bby-10q2"}),
        ("How many stores did Best Buy operate in the first quarter of fiscal 2024?", {"bby-10q1"}),
        ("What were Pfizer's total revenues in the first quarter of 2023?", {"pfe-10q1"}),
        ("What were Pfizer's total revenues in Q2 2023?", {"pfe-10q2", "pfe-release"}),
        # an annual report is never passed over for a quarter: its year decides
        ("What were Amcor's net sales in Q3 of fiscal 2023?", {"amcr-10q3", "amcr-10k"}),
    ],
)
def test_a_quarter_chooses_among_the_companys_quarterly_reports(
    shelf: Library, question: str, documents: set[str]
) -> None:
    # Before, only the year scoped a search: every report of the year was searched
    assert _searched(shelf, question) == documents


def test_the_quarter_a_report_covers_is_in_its_companys_fiscal_calendar() -> None:
    def ended(day: str, year_ends: int | None) -> tuple[int, int] | None:
        return quarter_of(f"X Form 10-Q, quarterly period ended {day}", year_ends)

    assert ended("July 29, 2023", 1) == (2, 2024)  # fiscal year ending in January
    assert ended("January 28, 2023", 1) == (4, 2023)
    assert ended("December 31, 2022", 6) == (2, 2023)  # ending in June
    assert ended("July 2, 2023", 12) == (2, 2023)  # a 52/53-week quarter ends June's
    assert ended("January 1, 2023", None) == (4, 2022)
    # IBM's covers: "quarter ended JUNE 30, 2025", "year ended DECEMBER 31, 2024"
    assert quarter_of("IBM (IBM) Form 10-Q, quarter ended JUNE 30, 2025") == (2, 2025)
    assert year_end_month("IBM (IBM) Form 10-K, year ended DECEMBER 31, 2024") == 12
    assert quarter_of("Pfizer Reports Second-Quarter 2023 Results") == (2, 2023)
    # Johnson & Johnson's releases, their hyphens dropped where a line broke them
    assert quarter_of("Johnson & Johnson (JNJ): results for secondquarter 2023") == (2, 2023)
    assert quarter_of("J&J: results for fourthquarter and full year 2022") == (4, 2022)
    assert quarter_of("PFIZER INC. (PFE) Form 10-K, fiscal year ended December 31, 2022") is None


@pytest.mark.parametrize(
    "question",
    [
        "Q2 of FY2024",
        "Q2 FY2024",
        "FY2024 Q2",
        "2Q24",
        "Q2'24",
        "the second quarter of fiscal 2024",
        "second-quarter fiscal 2024",
        "fiscal 2024 second quarter",
        "the second quarter and full year of fiscal 2024",
    ],
)
def test_a_quarter_is_read_however_it_is_written(question: str) -> None:
    assert quarters_asked(f"What did it earn in {question}?") == {(2, 2024)}


def test_a_year_alone_names_no_quarter() -> None:
    assert quarters_asked("What did Pfizer earn in 2023 and FY2022?") == set()


@pytest.mark.parametrize(
    "printed",
    ["Fourth Quarter Results", "Fourth-Quarter Results", "fourth\u2011quarter results"],
)
def test_a_quarter_a_page_prints_with_a_hyphen_holds_the_questions_quarter(printed: str) -> None:
    # Releases print "Fourth-Quarter"; `words` joins hyphenated words ("1040-NR"), so before,
    # "Q4" was not held by it and the release's sentences lost the question's period.
    from docchat.search.variants import periods_held

    assert periods_held("What was Boeing's Q4 revenue?", f"Boeing Reports {printed}") == {"q4"}


@pytest.mark.parametrize(
    ("question", "searched_for"),
    [
        # the quarter's own reports are searched: their pages print it as dates, so its words
        # are not searched for
        ("What was Best Buy's revenue in the second quarter of fiscal 2024?", False),
        ("What was Best Buy's revenue in Q2 of FY2024?", False),
        ("What were Pfizer's total revenues in Q2 2023?", False),
        # the annual report is searched too: the quarter's words tell its pages apart
        ("What were Amcor's net sales in Q3 of fiscal 2023?", True),
    ],
)
def test_the_quarters_words_are_not_searched_for_inside_its_own_reports(
    shelf: Library, question: str, searched_for: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Best Buy's 10-Q discussion repeats "the second quarter of fiscal 2024" on every page; its
    # statement prints "Three Months Ended July 29, 2023" and the revenue once. Searched for
    # the quarter's words, the discussion filled the candidates and the statement was not
    # among them (FinanceBench's Best Buy and Pfizer 10-Qs, stop 60).
    asked: list[str] = []
    search = shelf.index.keyword_search

    def keyword_search(query: str, **kwargs: object) -> object:
        asked.append(query)
        return search(query, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(shelf.index, "keyword_search", keyword_search)

    shelf.search(question, top_k=3)

    [keywords] = asked
    assert "revenue" in keywords or "net sales" in keywords
    assert bool(quarters_asked(keywords)) is searched_for, keywords


# A page of EDGAR's printed 10-Q: a running "Table of Contents" link above the statement, the
# page converted as one table from the link down, the statement's title a row of it.
_BALANCE_SHEET = "\n".join(
    [
        "|  |  |  | Table of Contents |",
        "| --- | --- | --- | --- |",
        "| PART I — FINANCIAL INFORMATION |  |  |  |",
        "| Condensed Consolidated Balance Sheets |  |  |  |",
        "| $ in millions (unaudited) |  |  |  |",
        "|  | July 29, 2023 | January 28, 2023 | July 30, 2022 |",
        "| Merchandise inventories | 5,651 | 5,140 | 6,043 |",
        "| Total current assets | 8,304 | 8,802 | 8,344 |",
        "| Total assets | 15,318 | 15,803 | 15,419 |",
    ]
)
_ASSETS_PROSE = (
    "# Liquidity\nTotal assets of the Domestic segment and total assets of the International "
    "segment at the end of the second quarter of fiscal 2024 reflected lower merchandise "
    "inventories and total assets held for sale."
)


@pytest.mark.parametrize(
    ("question", "row"),
    [
        ("What were Best Buy's total assets at the end of Q2 of fiscal 2024?", "15,318"),
        (
            "What were Best Buy's merchandise inventories in the second quarter of fiscal 2024?",
            "5,651",
        ),
    ],
)
def test_a_statement_titled_inside_its_table_is_read_as_that_statement(
    tmp_path: Path, question: str, row: str
) -> None:
    # Given Best Buy's 10-Q whose balance sheet's title is a row of its table, and prose on
    # total assets and inventories
    shelf = dict(SHELF)
    shelf["bby-10q2"] = [*SHELF["bby-10q2"], _ASSETS_PROSE, _BALANCE_SHEET]
    library = filed(tmp_path, shelf)

    # When the question asks for a balance sheet's line item
    found = library.search(question, top_k=3).passages

    # Then the balance sheet comes first, read as the statement its title row names (before:
    # under no heading but the form's, it was not known to print the item)
    assert row in found[0].chunk.text, [p.chunk.text[:60] for p in found]
