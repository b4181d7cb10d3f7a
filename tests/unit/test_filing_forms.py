"""A question's form ("its 10-Q", "the 8-K", "the earnings release", "its most recent 10-Q")
chooses among the named company's documents, as a year does (issue 42): two companies, each
with an annual report, two quarterly reports or a release, titled from their covers and
headlines as ingestion titles them (`docchat.ingest.filings.filing_title`)."""

from __future__ import annotations

import pytest

from docchat.answer.tools import SearchDocumentsInput
from docchat.search.library import Library
from tests.unit.test_shelf import _cover, filed, searched

BBY = ("BEST BUY CO., INC.", "BBY", "New York Stock Exchange")
PFE = ("PFIZER INC.", "PFE", "New York Stock Exchange")
SHELF = {
    "bby-10k": [
        _cover("10-K", "fiscal year ended January 28, 2023", *BBY),
        "Store count. At the end of fiscal 2023 we operated 982 stores in the U.S. and Canada.",
    ],
    "bby-10q1": [
        _cover("10-Q", "quarterly period ended April 29, 2023", *BBY),
        "Store count. At the end of the first quarter of fiscal 2024 we operated 978 stores in "
        "the U.S. and Canada.",
    ],
    "bby-10q2": [
        _cover("10-Q", "quarterly period ended July 29, 2023", *BBY),
        "Store count. At the end of the second quarter of fiscal 2024 we operated 969 stores in "
        "the U.S. and Canada.",
    ],
    "pfe-10k": [
        _cover("10-K", "fiscal year ended December 31, 2022", *PFE),
        "Revenues. Total revenues for 2022 were $100,330 million, an increase of 23%.",
    ],
    "pfe-10q2": [
        _cover("10-Q", "quarterly period ended July 2, 2023", *PFE),
        "Revenues. Total revenues for the second quarter of 2023 were $12,734 million.",
    ],
    "pfe-release": [
        "FOR IMMEDIATE RELEASE\nPfizer Reports Second-Quarter 2023 Results\nNEW YORK, "
        "August 1, 2023 - Pfizer Inc. (NYSE: PFE) reported financial results.",
        "Revenues. Second-quarter 2023 revenues were $12.7 billion, down 54% operationally.",
    ],
}


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Library:
    return filed(tmp_path_factory.mktemp("forms"), SHELF)


def _searched(shelf: Library, question: str) -> set[str]:
    return searched(shelf, question, top_k=6)


@pytest.mark.parametrize(
    "question",
    [
        "How many stores did Best Buy operate according to its most recent 10-Q?",
        "How many stores did BBY operate according to its latest 10Q?",
        "How many stores did Best Buy operate at the end of the last quarter?",
        "How many stores did Best Buy operate at the end of the previous fiscal quarter?",
    ],
)
def test_the_most_recent_quarterly_report_of_a_named_company_is_its_latest(
    shelf: Library, question: str
) -> None:
    # Before, a question naming the company lost "10-Q" to folding ("10 q") and searched all
    # three of Best Buy's reports.
    assert _searched(shelf, question) == {"bby-10q2"}


@pytest.mark.parametrize(
    "question",
    [
        "How did Best Buy's store count at the end of Q1 FY2024 compare with the last year?",
        "Did Best Buy operate more stores in the first quarter of fiscal 2024 than the prior year?",
    ],
)
def test_a_period_the_question_names_wins_over_a_relative_one(
    shelf: Library, question: str
) -> None:
    # Before, "the last year" read the newest annual report alone and the quarter asked for
    # was never searched
    assert _searched(shelf, question) == {"bby-10q1"}


@pytest.mark.parametrize(
    ("question", "documents"),
    [
        ("What were Pfizer's total revenues according to its 10-K?", {"pfe-10k"}),
        ("What were Pfizer's revenues in its 10Q for the second quarter?", {"pfe-10q2"}),
        ("What revenues did Pfizer's earnings release report?", {"pfe-release"}),
        # another company's documents are never passed over for a form
        ("Revenues and store count in the 10-K", {"bby-10k", "pfe-10k"}),
    ],
)
def test_a_question_naming_a_form_reads_that_companys_documents_of_it(
    shelf: Library, question: str, documents: set[str]
) -> None:
    assert _searched(shelf, question) == documents


def test_a_question_naming_no_form_reads_every_report() -> None:
    from docchat.search.titles import forms_asked

    assert forms_asked("What were Pfizer's revenues in 2023?") == set()
    assert forms_asked("the 8k filing dated 1st July 2022") == {"8-K"}


@pytest.mark.parametrize(
    ("form", "documents"),
    [
        ("10-Q", ["bby-10q1", "bby-10q2", "pfe-10q2"]),
        ("10-K", ["bby-10k", "pfe-10k"]),
        ("earnings release", ["pfe-release"]),
        ("release", ["pfe-release"]),
        ("8-K", []),
    ],
)
def test_a_models_form_filter_finds_filings_and_releases(
    shelf: Library, form: str, documents: list[str]
) -> None:
    # Before, "earnings release" matched no title: a release's title is its headline.
    found = SearchDocumentsInput(query="revenues", form=form).documents(shelf.catalog(), None)
    assert found == documents


def test_the_listing_says_each_documents_form_and_date(shelf: Library) -> None:
    # What list_documents (the agent's and MCP's) says of each document, from its title
    from docchat.search.titles import about, date_of, form_of

    titles = {r.doc_id: r.title for r in shelf.documents()}
    assert [form_of(titles[d]) for d in ("bby-10k", "bby-10q2", "pfe-release")] == [
        "10-K",
        "10-Q",
        "release",
    ]
    assert date_of(titles["bby-10q2"]) == "2023-07-29"
    assert about(titles["pfe-release"]).startswith(", company pfizer (PFE), form earnings release")
