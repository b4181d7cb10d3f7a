"""Which period (issue 28): a question naming a year searches the reports whose title names it
first, a quoted row whose table has that year's column comes before one whose table has not,
and the extractive answer names the asked year's cell of a quoted row."""

from __future__ import annotations

from pathlib import Path

from docchat.answer.extractive import QuoteWeights, answer_quotes
from docchat.search.sentences import column_names
from docchat.search.terms import years
from tests.chatkit import DEFAULTS
from tests.unit.test_table_quotes import AMAZON_PAGE, _ask, _chunk, _library, _page

WEIGHTS = QuoteWeights.of(DEFAULTS)
# Amazon.com, Inc. Form 10-K 2017, its income statement (p. 38), as page text: the same rows
# as the 2019 report's, for 2015 to 2017.
AMAZON_2017_TOTAL = "| Total net sales | 107,006 | 135,987 | 177,866 |"
AMAZON_2017_PAGE = "\n".join(
    [
        "# Consolidated Statements of Operations",
        "(in millions, except per share data)",
        "|  | Year Ended December 31, |  |  |",
        "|  | 2015 | 2016 | 2017 |",
        "| --- | --- | --- | --- |",
        "| Net product sales | $ 79,268 | $ 94,665 | $ 118,573 |",
        "| Net service sales | 27,738 | 41,322 | 59,293 |",
        AMAZON_2017_TOTAL,
        "| Operating income | 2,233 | 4,186 | 4,106 |",
    ]
)
AMAZON_2019_TOTAL = "| Total net sales | 177,866 | 232,887 | 280,522 |"
TITLES = {
    "amzn-2017": "AMAZON.COM, INC. Form 10-K, fiscal year ended December 31, 2017",
    "amzn-2019": "AMAZON.COM, INC. Form 10-K, fiscal year ended December 31, 2019",
    "ba-2019": "THE BOEING COMPANY Form 10-K, fiscal year ended December 31, 2019",
}


def test_years_named_in_text() -> None:
    assert years("What were Amazon's total net sales in fiscal 2019?") == {"2019"}
    assert years("fiscal year ended December 31, 2019 and 12/31/2009") == {"2019", "2009"}
    assert years("Campylobacter in fresh pig meat, 2003-2007") == {
        "2003",
        "2004",
        "2005",
        "2006",
        "2007",
    }
    # Not a year: inside a name, an amount or a number
    assert years("2019-nCoV cost $2019 or 2,019 units, 2019.5 on average") == set()


def test_a_question_naming_a_year_searches_the_reports_of_that_year(tmp_path: Path) -> None:
    library = _library(
        tmp_path,
        {"amzn-2017": [_page(38, AMAZON_2017_PAGE)], "amzn-2019": [_page(37, AMAZON_PAGE)]},
        titles=TITLES,
    )
    catalog = library.catalog()
    assert catalog.dated("What were Amazon's total net sales in 2019?") == ["amzn-2019"]
    assert catalog.dated("Net sales in fiscal 2017?") == ["amzn-2017"]
    # No title names 2018 (both reports hold it), nor does a question without a year
    assert catalog.dated("Net sales in 2018?") == []
    assert catalog.dated("What were the net sales?") == []
    assert catalog.dated("Net sales in 2019?", ["amzn-2017"]) == []

    # The 2017 report's row says 2017's total too; asked for 2017, that report answers
    text, citations = _ask(library, "What were Amazon's total net sales in 2017?")
    assert (citations[0].doc_id, citations[0].quote) == ("amzn-2017", AMAZON_2017_TOTAL)
    assert "(2017: 177,866)" in text
    text, citations = _ask(library, "What were Amazon's total net sales in 2019?")
    assert (citations[0].doc_id, citations[0].quote) == ("amzn-2019", AMAZON_2019_TOTAL)
    assert "(2019: 280,522)" in text


def test_a_row_whose_table_has_the_asked_years_column_comes_first() -> None:
    # Given two reports' income statements, the one without a 2019 column retrieved first
    older = _chunk(AMAZON_2017_PAGE, doc_id="amzn-2017", title=TITLES["amzn-2017"], page=38)
    newer = _chunk(AMAZON_PAGE, doc_id="amzn-2019", title=TITLES["amzn-2019"])

    quotes = answer_quotes(
        "What were total net sales in 2019?", [older, newer], threshold=0.25, weights=WEIGHTS
    )

    # Then the row of the table with a 2019 column is quoted first, with its 2019 cell named
    first = quotes[0]
    assert (first.chunk.doc_id, first.text) == ("amzn-2019", AMAZON_2019_TOTAL)
    assert first.figures == ("2019: 280,522",)
    # and the older report's row, still quoted, names no 2019 cell
    assert all(not q.figures for q in quotes if q.chunk.doc_id == "amzn-2017")


def test_column_names_span_over_the_header_rows_below() -> None:
    # ICDAR 2013 eu-018's two header rows: each year spans its "N" and "% Pos" columns
    header = (
        "| Country | Sample size | 2007 |  | 2006 |  |",
        "|  |  | N | % Pos | N | % Pos |",
    )
    assert column_names(header) == [
        "Country",
        "Sample size",
        "2007 N",
        "2007 % Pos",
        "2006 N",
        "2006 % Pos",
    ]
    # The last header row spans nothing; a spanning head names the columns under it
    assert column_names(("|  | Year Ended December 31, |  |  |", "|  | 2017 | 2018 | 2019 |")) == [
        "",
        "Year Ended December 31, 2017",
        "Year Ended December 31, 2018",
        "Year Ended December 31, 2019",
    ]
    assert column_names(("| Years ended December 31, | 2019 |  |",)) == [
        "Years ended December 31,",
        "2019",
        "",
    ]


def test_a_row_with_amounts_only_in_its_label_holds_no_amount() -> None:
    # Boeing's 2019 10-K: a deferred tax row whose label holds "$102", its cells empty, led
    # the answer to "What was Boeing's net loss in 2019?" over the row holding the loss
    carryovers = "| Net operating loss carryovers (net of allowance of $102 and $77) |  |  |"
    page = "\n".join(
        [
            "|  | 2019 | 2018 |",
            "| --- | --- | --- |",
            carryovers,
            "| Net loss attributable to the company | (636) | 10,460 |",
        ]
    )
    quotes = answer_quotes(
        "What was the net loss in 2019?", [_chunk(page)], threshold=0.25, weights=WEIGHTS
    )

    assert (quotes[0].text, quotes[0].amount) == (
        "| Net loss attributable to the company | (636) | 10,460 |",
        True,
    )
    # Its cells empty, the carryovers row is a caption: not quoted at all (issue 42)
    assert carryovers not in [q.text for q in quotes]


def test_a_year_chooses_among_one_companys_reports_and_passes_over_no_other_company(
    tmp_path: Path,
) -> None:
    # Given one shelf: Amazon's 10-Ks of two years, an 8-K whose title names no year and another
    # company's 10-K of the year asked about (FinanceBench's setting: all filings in one store)
    titles = {
        **TITLES,
        "jnj-8k": "Johnson & Johnson Form 8-K",
        "amcor-2023": "Amcor plc Form 10-K, fiscal year ended June 30, 2023",
    }
    pages = {
        "amzn-2017": [_page(38, AMAZON_2017_PAGE)],
        "amzn-2019": [_page(37, AMAZON_PAGE)],
        "jnj-8k": [_page(4, "Kenvue shares exchanged on August 30, 2023 for cash proceeds.")],
        "amcor-2023": [_page(66, "Net sales were $14,694 million in fiscal 2023.")],
    }
    catalog = _library(tmp_path, pages, titles=titles).catalog()

    # When a question names a year, only a report of the same company naming another year is
    # passed over; the undated 8-K and the other companies' reports are still searched
    assert sorted(catalog.dated("What were Amazon's total net sales in 2019?")) == [
        "amcor-2023",
        "amzn-2019",
        "jnj-8k",
    ]
    assert catalog.dated("What were the cash proceeds as of August 30, 2023?") == []
