"""Questions about a measure on a shelf of filings (issue 42): what a question asks is searched,
not what it tells the answerer to write when it does not apply, and a measure is found in the
statement rows it is computed from, whatever words the question uses for it. The statements
are tests/unit/test_shelf.py's, typed from real filings."""

from __future__ import annotations

from pathlib import Path

import pytest

from docchat.ingest.filings import filing_title
from docchat.search.concepts import as_asked, hinted
from docchat.search.terms import asked
from tests.unit.test_shelf import SHELF, _cover, _pages, _statement
from tests.unit.test_table_quotes import _ask, _library

# How a filing explains its own measures (the wording of many 10-Ks' "Non-GAAP measures"): the
# words of an instruction to the answerer, and no figure.
MEASURES = (
    "# Non-GAAP measures\nManagement believes these metrics are useful to investors and relevant "
    "to measure the performance of the company; for this company we explain why each metric is "
    "useful and state the most directly comparable GAAP measure."
)


@pytest.mark.parametrize(
    "question",
    [
        "Does 3M have a healthy liquidity profile based on its quick ratio for FY2018? If the "
        "quick ratio is not relevant to measure liquidity, please state that and explain why.",
        "Is 3M's working capital healthy in 2018? If working capital is not a useful or relevant "
        "metric for this company, then please state that and explain why.",
    ],
)
def test_an_instruction_for_when_a_question_does_not_apply_is_not_what_is_searched(
    tmp_path: Path, question: str
) -> None:
    # Given 3M's filing with its balance sheet, and a page saying why its measures are useful
    cover, *statements, _ = SHELF["mmm-2018"]
    pages = _pages([cover, MEASURES, *statements])
    library = _library(tmp_path, {"mmm-2018": pages}, titles={"mmm-2018": filing_title(pages)})

    # When the question ends with what to write if the measure does not apply
    found = library.search(question, top_k=3).passages

    # Then the rows the measure is computed from come first, not the page matching the
    # instruction's words
    assert "Total current assets" in found[0].chunk.text, found[0].chunk.text


@pytest.mark.parametrize(
    ("sentence", "kept"),
    [
        ("If gross margin is not a useful metric for a company like this, then state that.", False),
        ("If restructuring costs are not explicitly outlined then state 0.", False),
        ("If no dividend was paid, say so.", False),
        ("If the company has no debt, answer 0.", False),
        # A condition of the question itself is part of what is asked
        ("If we exclude the impact of M&A, which segment has dragged down 3M's growth?", True),
        ("If the plant closes, what happens to the note?", True),
    ],
)
def test_only_what_a_question_asks_is_searched(sentence: str, kept: bool) -> None:
    question = f"What was 3M's capital expenditure in 2018? {sentence}"

    assert asked(question) == (question if kept else "What was 3M's capital expenditure in 2018?")


def test_a_statement_row_a_measure_is_computed_from_outranks_prose_with_the_measures_word(
    tmp_path: Path,
) -> None:
    # Given 3M's filing with its balance sheet, and a covenant that speaks of "a ratio" in 2018
    covenant = (
        "# Credit facilities\nOur credit agreement requires a ratio of consolidated EBITDA to "
        "interest expense of not less than 3.0 to 1, which we met at the end of 2018."
    )
    cover, *statements, _ = SHELF["mmm-2018"]
    pages = _pages([cover, covenant, *statements])
    library = _library(tmp_path, {"mmm-2018": pages}, titles={"mmm-2018": filing_title(pages)})

    # When the quick ratio is asked for: no page prints it, the balance sheet prints its parts
    found = library.search("What was 3M's quick ratio in 2018?", top_k=3).passages

    # Then the reranker counts the rows as holding what was asked (before: the covenant led)
    assert "Total current assets" in found[0].chunk.text, found[0].chunk.text


def test_a_measure_computed_from_several_rows_finds_the_table_holding_them(tmp_path: Path) -> None:
    # Given 3M's cash flows, whose rows hold EBITDA's depreciation and the capital expenditure,
    # and a sentence that names EBITDA and the year but holds no figure of either
    cash_flows = _statement(
        "Consolidated Statement of Cash Flows",
        "|  | 2018 | 2017 |",
        [
            "| Net income including noncontrolling interest | $ 5,363 | $ 4,869 |",
            "| Depreciation and amortization | 1,488 | 1,544 |",
            "| Purchases of property, plant and equipment (PP&E) | (1,577) | (1,373) |",
        ],
    )
    release = (
        "# Non-GAAP measures\nAdjusted EBITDA, which we define as operating income before "
        "special items, rose in 2018."
    )
    pages = _pages([SHELF["mmm-2018"][0], release, cash_flows])
    library = _library(tmp_path, {"mmm-2018": pages}, titles={"mmm-2018": filing_title(pages)})

    found = library.search("What is 3M's FY2018 EBITDA less capex?", top_k=3).passages

    # Then the table leads: its rows answer together (before: the sentence led, no row alone
    # holding as much of the question as it does)
    assert "Depreciation and amortization" in found[0].chunk.text, found[0].chunk.text


@pytest.mark.parametrize(
    "question",
    [
        "Is 3M a capital-intensive business based on FY2022 data?",
        "Is Verizon a capital intensive business?",
        "How high is Boeing's capital intensity?",
    ],
)
def test_capital_intensity_is_searched_by_what_it_is_computed_from(question: str) -> None:
    searched = hinted(question)

    for printed in ("purchases of property plant and equipment", "total assets", "net sales"):
        assert printed in searched, searched


@pytest.mark.parametrize(
    ("question", "figure"),
    [
        ("How did Amcor's topline change in 2023?", "14,694"),
        ("What was Amcor's top-line in 2023?", "14,694"),
        ("What was Amcor's bottom-line in 2023?", "1,058"),
    ],
)
def test_a_line_item_asked_by_its_jargon_is_answered_from_its_row(
    tmp_path: Path, question: str, figure: str
) -> None:
    # Given Amcor's income statement, which prints "Net sales" and "Net income"
    pages = _pages(SHELF["amcor-2023"])
    library = _library(tmp_path, {"amcor": pages}, titles={"amcor": filing_title(pages)})

    # When the question says "topline" or "bottom-line", which no statement prints
    text, citations = _ask(library, question)

    # Then the row is quoted (before: "do not contain a passage that matches the question")
    assert citations, text
    assert figure in citations[0].quote, citations[0].quote


def test_jargon_is_not_searched_for() -> None:
    # "topline" is how questions say revenue, not how pages print it: a rare word in the
    # keyword search would outweigh the statement's own names
    assert "topline" not in hinted("What was Verizon's revenue in 2022?").split("?", 1)[1]


@pytest.mark.parametrize(
    ("row", "holds"),
    [
        ("| Net sales | $ 14,694 | $ 14,544 |", True),
        ("| Cost of sales | (11,724) | (11,969) |", False),
        ("| Total revenues | 66,608 | 62,286 |", True),
        ("| Cost of revenue | 2,165 | 1,865 |", False),
    ],
)
def test_a_name_inside_another_items_name_is_not_that_item(row: str, holds: bool) -> None:
    # "sales" in "Cost of sales" is the cost of goods sold, not revenue
    assert bool(as_asked("What was the company's revenue in 2023?", row)) == holds


@pytest.mark.parametrize("asked", ["What drove", "What caused", "What explains"])
def test_a_question_asking_what_drove_a_change_quotes_the_reason_not_the_row(
    tmp_path: Path, asked: str
) -> None:
    # Given a release (typed from Ulta Beauty's for fiscal 2023) with the balance and its reason
    # in prose, and the cash-flow row of the same change
    release = [
        "ULTA BEAUTY ANNOUNCES FOURTH QUARTER AND FISCAL 2023 RESULTS\nBalance Sheet\n"
        "Merchandise inventories, net at the end of fiscal 2023 totaled $1.8 billion compared to "
        "$1.6 billion at the end of fiscal 2022. The $104.4 million increase was primarily due to "
        "the opening of 47 new stores and inventory to support new brand launches.",
        _statement(
            "Consolidated Statements of Cash Flows",
            "|  | Fiscal 2023 | Fiscal 2022 |",
            [
                "| Net income | $ 1,242,408 | $ 985,837 |",
                "| Merchandise inventories | (104,233) | (331,003) |",
            ],
        ),
    ]
    pages = _pages(release)
    library = _library(tmp_path, {"ulta": pages}, titles={"ulta": "Ulta Beauty fiscal 2023"})

    question = f"{asked} the increase in Ulta Beauty's merchandise inventories in fiscal 2023?"
    text, citations = _ask(library, question)

    # Then the reason is quoted first (before: the row, which says how much, not why)
    assert citations, text
    assert "47 new stores" in citations[0].quote, citations[0].quote


@pytest.mark.parametrize(
    ("question", "text", "holds"),
    [
        # Revenue, which many measures are computed from, is not alone any one of them
        ("Is Adobe's operating margin improving?", "revenue-based metrics over three years", False),
        ("Is Boeing's gross margin improving?", "| Total revenues | 66,608 | 62,286 |", False),
        ("What is Pfizer's net profit margin?", "| Revenues | 81,288 | 41,651 |", False),
        # The item that sets the measure apart holds it; so do two of its items together
        ("Is Adobe's operating margin improving?", "| Operating income | 6,098 | 5,802 |", True),
        ("Is Boeing's operating margin improving?", "| Loss from operations | (3,547) |", True),
        (
            "Is Amcor's gross margin improving?",
            "| Net sales | 14,694 |\n| Cost of sales | 11,969 |",
            True,
        ),
        ("Is Best Buy's gross margin stable?", "| Gross profit | 9,912 | 11,640 |", True),
        # "Operating income" inside "Non-operating income" is another item
        ("Is Adobe's operating margin improving?", "| Non-operating income, net | (90) |", False),
    ],
)
def test_a_measure_is_held_by_the_items_that_set_it_apart(
    question: str, text: str, holds: bool
) -> None:
    assert ("margin" in as_asked(question, text)) == holds, as_asked(question, text)


def test_an_income_statement_outranks_prose_on_revenue_for_a_margin_question(
    tmp_path: Path,
) -> None:
    # Given a filing whose notes speak of revenue and margins, and its income statement
    notes = (
        "# Stock-based compensation\nPerformance shares vest on revenue-based financial metrics "
        "measured over three one-year performance periods; operating targets and margins of "
        "the plan are set by the committee for fiscal 2022."
    )
    income = _statement(
        "Consolidated Statements of Income",
        "|  | 2022 | 2021 | 2020 |",
        [
            "| Total revenue | 17,606 | 15,785 | 12,868 |",
            "| Total cost of revenue | 2,165 | 1,865 | 1,722 |",
            "| Operating income | 6,098 | 5,802 | 4,237 |",
        ],
    )
    cover = SHELF["mmm-2018"][0]
    pages = _pages([cover, notes, income])
    library = _library(tmp_path, {"adbe": pages}, titles={"adbe": "Adobe 10-K fiscal 2022"})

    found = library.search("Does Adobe have an improving operating margin in FY2022?", top_k=3)

    # Then the statement leads (before: "revenue" alone counted as the operating margin)
    assert "Operating income" in found.passages[0].chunk.text, found.passages[0].chunk.text


# An AOCI reclassification table, which names "the Income Statement" in its own header
RECLASSIFIED = _statement(
    "Reclassifications from Accumulated Other Comprehensive Loss",
    "|  | 2022 | 2021 | Affected Line Item in the Income Statement |",
    [
        "| Commodity contracts | (252) | (190) | Cost of sales |",
        "| Divestitures | — | 18 | Selling, general and administrative expenses |",
        "| Net losses after tax | 360 | 234 |  |",
    ],
)


@pytest.mark.parametrize(
    ("company", "caption", "figure"),
    [
        ("PEPSICO, INC.", "Restructuring and impairment charges", "411"),
        ("GENERAL MILLS, INC.", "Restructuring, impairment, and other exit costs", "170"),
        ("KELLOGG COMPANY", "Restructuring charges", "92"),
    ],
)
def test_restructuring_costs_are_found_by_the_charges_a_statement_prints(
    tmp_path: Path, company: str, caption: str, figure: str
) -> None:
    # Given a company's income statement, whose restructuring line has its own caption, and a
    # reclassification table whose header names the income statement
    statement = _statement(
        "Consolidated Statement of Income",
        "|  | 2022 | 2021 |",
        [
            "| Net revenue | 86,392 | 79,474 |",
            "| Cost of sales | 40,576 | 37,075 |",
            "| Selling, general and administrative expenses | 34,459 | 31,237 |",
            f"| {caption} | {figure} | 247 |",
            "| Operating profit | 11,512 | 11,162 |",
        ],
    )
    cover = _cover("10-K", "fiscal year ended December 31, 2022", company, "XX", "NYSE")
    pages = _pages([cover, RECLASSIFIED, statement])
    library = _library(tmp_path, {"co": pages}, titles={"co": filing_title(pages)})

    # When the question says "restructuring costs" (PepsiCo's FinanceBench question)
    text, citations = _ask(
        library,
        "What is the quantity of restructuring costs directly outlined in the company's income "
        "statements for FY2022? If restructuring costs are not explicitly outlined then state 0.",
    )

    # Then the statement's restructuring row is the first quote, not the reclassification
    # table's rows for the "Income Statement" in their header
    assert citations, text
    assert caption in citations[0].quote and figure in citations[0].quote, text


@pytest.mark.parametrize(
    "question",
    [
        "What were the company's restructuring costs in FY2022?",
        "How much did restructuring cost Kellogg in 2022?",
    ],
)
def test_restructuring_costs_are_searched_by_the_captions_statements_print(question: str) -> None:
    # Statements print "Restructuring charges", "Restructuring and impairment charges": before,
    # only the question's words were searched, and on PepsiCo's 10-K among 21 filings the row
    # (411) was not among the passages quoted
    searched = hinted(question).split("?", 1)[1]
    assert "restructuring charges" in searched
    assert "restructuring and impairment charges" in searched


# Prose a 10-K's accounting policies and audit report hold about margins and taxes: the
# measure's words, and no figure of it.
ESTIMATES = (
    "# Critical Accounting Policies\nChanges in estimates of program gross profit margins are "
    "recognized in the period in which they are determined; gross margin on contracts depends "
    "on estimates of cost.\nOur effective tax rate is affected by tax credits, and we review our "
    "estimated effective tax rate each quarter.\nMargins and effective rates are judgments."
)


@pytest.mark.parametrize(
    ("question", "heading", "rows", "wanted"),
    [
        (
            "Does Boeing have an improving gross margin profile as of FY2022?",
            "Consolidated Statements of Operations",
            [
                "| Total revenues | 66,608 | 62,286 | 58,158 |",
                "| Cost of products | (54,140) | (50,980) | (54,412) |",
                "| Cost of services | (9,451) | (9,804) | (9,269) |",
            ],
            "Cost of products",
        ),
        (
            "Are Best Buy's gross margins historically consistent?",
            "Consolidated Statements of Earnings",
            [
                "| Revenue | 46,298 | 51,761 | 47,262 |",
                "| Cost of sales | 36,386 | 40,121 | 36,689 |",
                "| Restructuring charges | 34 | (34) | 254 |",
            ],
            "Cost of sales",
        ),
        (
            "How does Boeing's effective tax rate in FY2022 compare to FY2021?",
            "Consolidated Statements of Operations",
            [
                "| Loss before income taxes | (5,022) | (5,033) | (14,476) |",
                "| Income tax (expense)/benefit | (31) | 743 | 2,535 |",
                "| Net loss | (5,053) | (4,290) | (11,941) |",
            ],
            "Income tax",
        ),
    ],
)
def test_a_measure_asked_without_naming_a_statement_is_found_on_the_statement_printing_it(
    tmp_path: Path, question: str, heading: str, rows: list[str], wanted: str
) -> None:
    # Given a filing whose policies speak of margins and tax rates, and its income statement,
    # which prints no "gross profit" nor "effective tax rate"
    statement = _statement(heading, "|  | 2022 | 2021 | 2020 |", rows)
    pages = _pages([SHELF["mmm-2018"][0], ESTIMATES, statement])
    library = _library(tmp_path, {"co": pages}, titles={"co": "Form 10-K fiscal 2022"})

    # When the question asks for the measure and names no statement
    found = library.search(question, top_k=3).passages

    # Then the statement that prints what it is computed from leads (before: the policies did)
    assert wanted in found[0].chunk.text, [p.chunk.text[:60] for p in found]
