"""Count questions over tables (issue 42): "How many…?" and "the number of…" ask for an amount
like "How much…?" does, and a count's table answers with its "Total" row unless the question
names another; the words naming the filer pick its filing, not a row of its tables.

Best Buy's tables are its 10-Q for the quarter ended July 29, 2023 (pp. 17 and 19) as the
converter writes them; the second company's are hand-typed in the layout of a restaurant
chain's 10-K.
"""

from __future__ import annotations

import pytest

from docchat.answer.extractive import QuoteWeights, answer_quotes
from docchat.models import Chunk
from tests.chatkit import DEFAULTS

WEIGHTS = QuoteWeights.of(DEFAULTS)
BBY_TITLE = "BEST BUY CO., INC. (BBY) Form 10-Q, quarterly period ended July 29, 2023"
BBY_HEADER = [
    "|  |  | Fiscal 2024 |  |  | Fiscal 2023 |  |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    "|  | Total Stores at |  | Total Stores at | Total Stores at |  | Total Stores at |",
    "|  | Beginning of | Stores Stores | End of Second | Beginning of | Stores Stores "
    "| End of Second |",
    "|  | Second Quarter | Opened Closed | Quarter | Second Quarter | Opened Closed | Quarter |",
]
BBY_DOMESTIC_TOTAL = "| Total | 966 | 5 (2) | 969 | 977 | 7 (2) | 982 |"
BBY_DOMESTIC = "\n".join(
    [
        "Domestic segment stores open at the beginning and end of the second quarters of fiscal "
        "2024 and fiscal 2023 were as follows:",
        *BBY_HEADER,
        "| Best Buy | 908 | - (1) | 907 | 931 | 1 (2) | 930 |",
        "| Outlet Centers | 20 | 1 (1) | 20 | 16 | 2 - | 18 |",
        "| Pacific Sales | 20 | - - | 20 | 21 | - - | 21 |",
        "| Yardbird | 18 | 4 - | 22 | 9 | 4 - | 13 |",
        BBY_DOMESTIC_TOTAL,
    ]
)
BBY_INTERNATIONAL_TOTAL = "| Total | 159 | 1 - | 160 | 160 | - - | 160 |"
BBY_INTERNATIONAL = "\n".join(
    [
        "International segment stores open at the beginning and end of the second quarters of "
        "fiscal 2024 and fiscal 2023 were as follows:",
        *BBY_HEADER,
        "| Canada Best Buy | 127 | 1 - | 128 | 127 | - - | 127 |",
        "| Best Buy Mobile | 32 | - - | 32 | 33 | - - | 33 |",
        BBY_INTERNATIONAL_TOTAL,
    ]
)
NW_TITLE = "NORTHWIND RESTAURANTS, INC. (NWR) Form 10-K, fiscal year ended December 31, 2023"
NW_RESTAURANTS = "\n".join(
    [
        "The following table shows the restaurants we operated at the end of each year:",
        "|  | 2023 | 2022 |",
        "| --- | --- | --- |",
        "| Northwind Grill | 310 | 298 |",
        "| Northwind Express | 120 | 101 |",
        "| Total | 430 | 399 |",
        "We opened 31 restaurants in 2023, most of them Northwind Express restaurants in "
        "airports and train stations.",
    ]
)


def _chunk(text: str, *, doc_id: str, title: str, page: int) -> Chunk:
    return Chunk(
        chunk_id=f"{doc_id}:v:{page:05d}",
        doc_id=doc_id,
        version="v",
        source=f"{doc_id}.pdf",
        title=title,
        headings=[],
        page_start=page,
        page_end=page,
        text=text,
    )


def test_a_count_of_the_filers_stores_is_answered_by_each_tables_total_row() -> None:
    # Asked for "the number of Best Buy stores", the answer quoted the rows "Best Buy Mobile",
    # "Canada Best Buy" and "Best Buy" (908 / 931: one brand's stores) and never the totals
    # (FinanceBench 00460: 969 and 982): the question did not count as asking for an amount,
    # and the filer's name counted as naming its brands' rows.
    passages = [
        _chunk(BBY_INTERNATIONAL, doc_id="bby", title=BBY_TITLE, page=19),
        _chunk(BBY_DOMESTIC, doc_id="bby", title=BBY_TITLE, page=17),
    ]

    quotes = answer_quotes(
        "Was there any change in the number of Best Buy stores between Q2 of FY2024 and FY2023?",
        passages,
        threshold=0.25,
        weights=WEIGHTS,
    )

    assert {q.text for q in quotes[:2]} == {BBY_DOMESTIC_TOTAL, BBY_INTERNATIONAL_TOTAL}
    # "Fiscal 2024" stands over four columns: no one cell is named as its figure.
    assert all(q.figures == () for q in quotes[:2])


@pytest.mark.parametrize(
    ("question", "row"),
    [
        ("How many restaurants did Northwind operate at the end of 2023?", "| Total | 430 | 399 |"),
        (
            "What was the number of Northwind Express restaurants in 2023?",
            "| Northwind Express | 120 | 101 |",
        ),
    ],
)
def test_a_count_names_the_row_it_asks_for_or_else_the_total(question: str, row: str) -> None:
    passages = [_chunk(NW_RESTAURANTS, doc_id="nwr", title=NW_TITLE, page=34)]

    quotes = answer_quotes(question, passages, threshold=0.25, weights=WEIGHTS)

    assert quotes[0].text == row
    assert quotes[0].figures == ("2023: " + row.split(" | ")[1],)


def test_a_segments_count_still_comes_before_a_sentence_holding_no_amount() -> None:
    # As the 10-Q is chunked: its store tables under "Domestic Segment" and "International
    # Segment", and the MD&A's overview, which says stores and segments but counts nothing,
    # ranked first. When a segment's figures were put after every other quote, not only after
    # the whole company's, the answer quoted the overview's sentences and no count (a fresh
    # shelf of three filings, "How many stores did BBY have at the end of Q2 of FY2024?").
    overview = (
        "We are driven by our purpose to enrich lives through technology. We accomplish this by "
        "leveraging our combination of technology and a human touch to meet our customers' "
        "everyday needs, whether they come to us online, visit our stores or invite us into "
        "their homes. We have two reportable segments: Domestic and International."
    )
    passages = [
        _chunk(overview, doc_id="bby", title=BBY_TITLE, page=14),
        _chunk(BBY_DOMESTIC, doc_id="bby", title=BBY_TITLE, page=17).model_copy(
            update={"headings": ["Segment Performance Summary", "Domestic Segment"]}
        ),
        _chunk(BBY_INTERNATIONAL, doc_id="bby", title=BBY_TITLE, page=19).model_copy(
            update={"headings": ["International Segment"]}
        ),
    ]

    quotes = answer_quotes(
        "How many stores did BBY have at the end of Q2 of FY2024?",
        passages,
        threshold=0.25,
        weights=WEIGHTS,
    )

    assert {q.text for q in quotes[:2]} == {BBY_DOMESTIC_TOTAL, BBY_INTERNATIONAL_TOTAL}
