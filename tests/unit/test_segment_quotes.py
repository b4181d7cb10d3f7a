"""Segment figures (issue 42): asked for a company's figure without a segment named, the answer
quotes the whole company's row or sentence, not a segment's, and a search lists the passages
headed by a segment after the rest; asked for a segment's, that one's first.

The passages are the converter's text of Walmart's 10-K for fiscal 2025 (pp. 36, 37 and 39,
under the headings it gave them) and Johnson & Johnson's 10-K for 2024 (pp. 20-22 and 24).
"""

from __future__ import annotations

import pytest

from docchat.answer.extractive import QuoteWeights, answer_quotes
from docchat.models import Chunk, Passage
from docchat.search.segments import whole_first
from tests.chatkit import DEFAULTS

WEIGHTS = QuoteWeights.of(DEFAULTS)
WMT_TITLE = "WALMART INC. (WMT) Form 10-K, fiscal year ended January 31, 2025"
WMT_HEADER = [
    "|  | Fiscal Years Ended January 31, |  |  |",
    "| --- | --- | --- | --- |",
    "| (Dollar amounts and retail square feet in millions) | 2025 | 2024 | 2023 |",
]
WMT_OPERATING_INCOME = "| Operating income | 29,348 | 27,012 | 20,428 |"
WMT_CONSOLIDATED = "\n".join(
    [
        *WMT_HEADER,
        "| Net sales | $ 674,538 | $ 642,637 | $ 605,881 |",
        "| Percentage change from comparable period | 5.0% | 6.1% | 6.7% |",
        "| Membership and other income(1) | $ 6,447 | $ 5,488 | $ 5,408 |",
        "| Total revenues | 680,985 | 648,125 | 611,289 |",
        "| Percentage change from comparable period | 5.1% | 6.0% | 6.7% |",
        "| Gross profit(2) | 162,785 | 152,495 | 142,160 |",
        "| Operating expenses(2) | 139,884 | 130,971 | 127,140 |",
        WMT_OPERATING_INCOME,
        "| Other (gains) and losses | 794 | 3,027 | 1,538 |",
        "| Consolidated net income | 20,157 | 16,270 | 11,292 |",
    ]
)
WMT_US_OPERATING_INCOME = "| Operating income | 23,882 | 22,154 | 20,620 |"
WMT_US = "\n".join(
    [
        *WMT_HEADER,
        "| Net sales | $ 462,415 | $ 441,817 | $ 420,553 |",
        "| Net sales percentage change from comparable period | 4.7% | 5.1% | 6.9% |",
        "| Calendar comparable sales increase | 4.8% | 5.5% | 7.0% |",
        "| Membership and other income | $ 2,594 | $ 1,985 | $ 1,845 |",
        "| Gross profit | 125,964 | 118,254 | 111,748 |",
        "| Operating expenses | 104,676 | 98,085 | 92,973 |",
        WMT_US_OPERATING_INCOME,
    ]
)
WMT_SAMS_CLUB_PROSE = "\n".join(
    [
        "Operating expenses as a percentage of segment net sales increased 44 and 46 basis points "
        "for fiscal 2025 and 2024, respectively, when compared to the previous fiscal year. "
        "Fiscal 2025 operating expenses as a percentage of net sales increased primarily due to "
        "increased compensation related expenses, including associate wage investments and higher "
        "variable pay as a result of exceeding our planned performance, as well as elevated "
        "technology spend. Fiscal 2024 operating expenses as a percentage of net sales increased "
        "primarily due to lower fuel sales and elevated technology spend.",
        "As a result of the factors discussed above, segment operating income increased $0.2 "
        "billion for both fiscal 2025 and 2024, respectively, when compared to the previous fiscal "
        "year.",
        "42",
        "Liquidity and Capital Resources",
        "Liquidity",
    ]
)
JNJ_TITLE = "Johnson & Johnson (JNJ) Form 10-K, fiscal year ended December 29, 2024"
JNJ_WORLDWIDE = (
    "In 2024, worldwide sales increased 4.3% to $88.8 billion as compared to an increase of 6.5% "
    "in 2023."
)
JNJ_CONSOLIDATED = "\n".join(
    [
        "Results of operations",
        "Analysis of consolidated sales",
        "For discussion on results of operations and financial condition pertaining to the fiscal "
        "years 2023 and 2022 see the Company\u2019s Annual Report on Form 10-K for the fiscal year "
        "ended "
        "December 31, 2023, Item 7. Management's discussion and analysis of results of operations "
        "and financial condition. Prior periods disclosed herein were recast to reflect the "
        "continuing operations of the Company.",
        f"{JNJ_WORLDWIDE} These sales changes consisted of the following:",
    ]
)
JNJ_INNOVATIVE_MEDICINE = "\n".join(
    [
        "Analysis of sales by business segments",
        "Innovative Medicine segment",
        "Innovative Medicine segment sales in 2024 were $57.0 billion, an increase of 4.0% from "
        "2023, which included operational growth of 5.7% and a negative currency impact of 1.7%. "
        "U.S. sales were $34.0 billion, an increase of 9.0%.",
    ]
)
JNJ_MEDTECH_SALES = (
    "The MedTech segment sales in 2024 were $31.9 billion, an increase of 4.8% from 2023, which "
    "included operational growth of 6.2% and a negative currency impact of 1.4%."
)
JNJ_MEDTECH = "\n".join(["MedTech segment", JNJ_MEDTECH_SALES])
JNJ_WORLDWIDE_INCOME = (
    "| Worldwide income before tax | $16,687 | 15,062 | 88,821 | 85,159 | 18.8% | 17.7 |"
)
JNJ_INNOVATIVE_MEDICINE_INCOME = (
    "| Innovative Medicine | $18,919 | 18,246 | 56,964 | 54,759 | 33.2% | 33.3 |"
)
JNJ_SEGMENT_INCOME = "\n".join(
    [
        "|  | Income Before Tax |  | Segment Sales |  | Percent of Segment Sales |  |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        "| (Dollars in Millions) | 2024 | 2023 | 2024 | 2023 | 2024 | 2023 |",
        JNJ_INNOVATIVE_MEDICINE_INCOME,
        "| MedTech | 3,740 | 4,669 | 31,857 | 30,400 | 11.7 | 15.4 |",
        "| Segment earnings before tax(1) | 22,659 | 22,915 | 88,821 | 85,159 | 25.5 | 26.9 |",
        "| Less: Expenses not allocated to segments(2) | 5,972 | 7,853 |  |  |  |  |",
        JNJ_WORLDWIDE_INCOME,
    ]
)
JNJ_SEGMENT_INCOME_HEADING = (
    "Income before tax by segment Income (loss) before tax by segment of business were as follows:"
)


def _chunk(text: str, *, doc_id: str, title: str, page: int, heading: str = "") -> Chunk:
    return Chunk(
        chunk_id=f"{doc_id}:v:{page:05d}",
        doc_id=doc_id,
        version="v",
        source=f"{doc_id}.htm",
        title=title,
        headings=[heading] if heading else [],
        page_start=page,
        page_end=page,
        text=text,
    )


def _walmart() -> list[Chunk]:
    # As the search ranked them: the segment's prose first.
    return [
        _chunk(WMT_SAMS_CLUB_PROSE, doc_id="wmt", title=WMT_TITLE, page=39),
        _chunk(WMT_US, doc_id="wmt", title=WMT_TITLE, page=37, heading="Walmart U.S. Segment"),
        _chunk(
            WMT_CONSOLIDATED,
            doc_id="wmt",
            title=WMT_TITLE,
            page=36,
            heading="Results of Operations Consolidated Results of Operations",
        ),
    ]


def test_a_companys_operating_income_is_its_consolidated_row_not_a_segments() -> None:
    # Asked for Walmart's operating income, the answer quoted Sam's Club's "segment operating
    # income increased $0.2 billion" first, and Walmart U.S.'s table before the consolidated one.
    quotes = answer_quotes(
        "What was Walmart's operating income for fiscal 2025?",
        _walmart(),
        threshold=0.25,
        weights=WEIGHTS,
    )

    assert quotes[0].text == WMT_OPERATING_INCOME
    assert quotes[0].page == 36
    assert all("segment operating income" not in q.text for q in quotes[:2])


def test_a_named_segments_row_answers_for_that_segment() -> None:
    quotes = answer_quotes(
        "What was Walmart U.S. operating income for fiscal 2025?",
        _walmart(),
        threshold=0.25,
        weights=WEIGHTS,
    )

    assert quotes[0].text == WMT_US_OPERATING_INCOME
    assert quotes[0].page == 37


def _jnj_sales() -> list[Chunk]:
    return [
        _chunk(JNJ_INNOVATIVE_MEDICINE, doc_id="jnj", title=JNJ_TITLE, page=21),
        _chunk(JNJ_MEDTECH, doc_id="jnj", title=JNJ_TITLE, page=22),
        _chunk(JNJ_CONSOLIDATED, doc_id="jnj", title=JNJ_TITLE, page=20),
    ]


@pytest.mark.parametrize(
    ("question", "sentence"),
    [
        ("What were Johnson & Johnson's sales in 2024?", JNJ_WORLDWIDE),
        ("What were Johnson & Johnson's MedTech sales in 2024?", JNJ_MEDTECH_SALES),
    ],
)
def test_a_second_filers_sales_are_the_worldwide_sentence_unless_a_segment_is_named(
    question: str, sentence: str
) -> None:
    quotes = answer_quotes(question, _jnj_sales(), threshold=0.25, weights=WEIGHTS)

    assert sentence in quotes[0].text


@pytest.mark.parametrize(
    ("question", "row"),
    [
        ("What was Johnson & Johnson's income before tax in 2024?", JNJ_WORLDWIDE_INCOME),
        (
            "What was the Innovative Medicine income before tax in 2024?",
            JNJ_INNOVATIVE_MEDICINE_INCOME,
        ),
    ],
)
def test_a_table_by_segment_answers_with_its_worldwide_row_unless_a_segment_is_named(
    question: str, row: str
) -> None:
    # The rows named by a segment ("Innovative Medicine", "MedTech") and the segments' sum
    # ("Segment earnings before tax") are parts; "Worldwide income before tax" is the company's.
    passages = [
        _chunk(
            JNJ_SEGMENT_INCOME,
            doc_id="jnj",
            title=JNJ_TITLE,
            page=24,
            heading=JNJ_SEGMENT_INCOME_HEADING,
        )
    ]

    quotes = answer_quotes(question, passages, threshold=0.25, weights=WEIGHTS)

    assert quotes[0].text == row


def test_a_question_about_segments_ranks_no_segment_lower() -> None:
    quotes = answer_quotes(
        "Which segment had the highest operating income in fiscal 2025 at Walmart?",
        _walmart(),
        threshold=0.25,
        weights=WEIGHTS,
    )

    assert all(q.scoped == 0 for q in quotes)


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("What was Walmart's operating income for fiscal 2025?", [36, 37]),
        ("What was Walmart U.S. operating income for fiscal 2025?", [37, 36]),
        ("Which segment had the highest operating income at Walmart?", [37, 36]),
    ],
)
def test_a_search_lists_a_segments_passages_after_the_whole_companys(
    question: str, first: list[int]
) -> None:
    # As the search ranked them: the Walmart U.S. Segment's table first. (Page 39, Sam's
    # Club's, lost its heading to the page before: only its sentences say it is a segment's.)
    ranked = [Passage(chunk=c, score=1.0 - n / 10) for n, c in enumerate(_walmart()[1:])]

    assert [p.chunk.page_start for p in whole_first(question, ranked)] == first


def test_a_second_filers_segment_heading_goes_after_its_consolidated_passage() -> None:
    segment = _chunk(
        JNJ_MEDTECH_SALES, doc_id="jnj", title=JNJ_TITLE, page=22, heading="MedTech segment"
    )
    consolidated = _chunk(JNJ_CONSOLIDATED, doc_id="jnj", title=JNJ_TITLE, page=20)
    ranked = [Passage(chunk=segment, score=0.9), Passage(chunk=consolidated, score=0.8)]

    assert [p.chunk.page_start for p in whole_first("What were J&J's sales in 2024?", ranked)] == [
        20,
        22,
    ]


# FinanceBench's PepsiCo 10-K for 2022 (p. 70) and 3M's for 2022 (p. 25), as converted.
PEP_TITLE = "PepsiCo, Inc. (PEP) Form 10-K, fiscal year ended December 31, 2022"
PEP_HEADINGS = [
    "Net Revenue and Operating Profit/(Loss)",
    "Net revenue and operating profit/(loss) of each division are as follows:",
]
PEP_TOTAL = "| Total | $ 86,392 | $ 79,474 | $ 70,372 | $ 11,512 | $ 11,162 | $ 10,080 |"
PEP_FLNA = "| FLNA | $ 23,291 | $ 19,608 | $ 18,189 | $ 6,135 | $ 5,633 | $ 5,340 |"
PEP_DIVISIONS = "\n".join(
    [
        "|  | Net Revenue |  |  | Operating Profit/(Loss) |  |  |",
        "|  | 2022 | 2021 | 2020 | (a) 2022 | 2021 | 2020 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        PEP_FLNA,
        "| QFNA | 3,160 | 2,751 | 2,742 | 604 | 578 | 669 |",
        "| PBNA | 26,213 | 25,276 | 22,559 | 5,426 | 2,442 | 1,937 |",
        "| LatAm | 9,779 | 8,108 | 6,942 | 1,627 | 1,369 | 1,033 |",
        "| Europe | 12,724 | 13,038 | 11,922 | (1,380) | 1,292 | 1,353 |",
        "| AMESA | 6,438 | 6,078 | 4,573 | 666 | 858 | 600 |",
        "| APAC | 4,787 | 4,615 | 3,445 | 537 | 673 | 590 |",
        "| Total division | 86,392 | 79,474 | 70,372 | 13,615 | 12,845 | 11,522 |",
        "| Corporate unallocated expenses | — | — | — | (2,103) | (1,683) | (1,442) |",
        PEP_TOTAL,
    ]
)
MMM_TITLE = "3M COMPANY (MMM) Form 10-K, fiscal year ended December 31, 2022"
MMM_TOTAL = (
    "| Total Company | $ 34,229 | 100.0 % | $ 6,539 | $ 35,355 | 100.0 % | $ 7,369 | (3.2)% "
    "| (11.3)% |"
)
MMM_SEGMENTS = "\n".join(
    [
        "|  |  | 2022 |  |  | 2021 |  | % change |  |",
        "|  |  |  | Operating |  |  | Operating |  | Operating Income |",
        "| (Dollars in millions) | Net Sales | % of Total | Income (Loss) | Net Sales | % of Total "
        "| Income (Loss) | Net Sales | (Loss) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        "| Business Segments |  |  |  |  |  |  |  |  |",
        "| Safety and Industrial | $ 11,604 | 33.9 % | $ 1,199 | $ 11,981 | 33.9 % | $ 2,466 "
        "| (3.2)% | (51.4)% |",
        "| Transportation and Electronics | 8,902 | 26.0 | 1,012 | 9,262 | 26.2 | 1,880 | (3.9) "
        "| (46.2) |",
        "| Health Care | 8,421 | 24.6 | 1,815 | 8,597 | 24.3 | 2,037 | (2.0) | (10.9) |",
        "| Consumer | 5,298 | 15.5 | 994 | 5,513 | 15.6 | 1,162 | (3.9) | (14.4) |",
        "| Corporate and Unallocated | 4 | — | 1,519 | 2 | — | (176) |  |  |",
        MMM_TOTAL,
    ]
)


@pytest.mark.parametrize(
    ("question", "row"),
    [
        ("What were PepsiCo's net revenue in 2022?", PEP_TOTAL),
        ("What was PepsiCo's FLNA net revenue in 2022?", PEP_FLNA),
    ],
)
def test_a_table_of_divisions_answers_with_its_total_unless_a_division_is_named(
    question: str, row: str
) -> None:
    # "Total division" sums the divisions before corporate expenses: a part too.
    chunk = _chunk(PEP_DIVISIONS, doc_id="pep", title=PEP_TITLE, page=70)
    passages = [chunk.model_copy(update={"headings": PEP_HEADINGS})]

    quotes = answer_quotes(question, passages, threshold=0.25, weights=WEIGHTS)

    assert quotes[0].text == row


def test_a_table_of_business_segments_answers_with_its_total_company_row() -> None:
    passages = [_chunk(MMM_SEGMENTS, doc_id="mmm", title=MMM_TITLE, page=25, heading="3M COMPANY")]

    quotes = answer_quotes(
        "What was 3M's operating income in 2022?", passages, threshold=0.25, weights=WEIGHTS
    )

    assert quotes[0].text == MMM_TOTAL


PFE_TITLE = "PFIZER INC. (PFE) Form 10-K, fiscal year ended December 31, 2021"
PFE_REVENUES = (
    "Revenues increased $39.6 billion, or 95%, to $81.3 billion in 2021 from $41.7 billion in "
    "2020, reflecting an operational increase of $38.4 billion, or 92%, as well as a favorable "
    "impact of foreign exchange of $1.2 billion, or 3%."
)
PFE_TOTAL = "| Total | $ | 17,178 | $ 13,733 | $ 12,284 |"
PFE_DEDUCTIONS = "\n".join(
    [
        "| (MILLIONS) | 2021 |  | Year Ended December 31, | 2019 |",
        "|  |  |  | 2020 |  |",
        "| --- | --- | --- | --- | --- |",
        "| Medicare rebates | $ | 726 | $ 647 | $ 628 |",
        "| Medicaid and related state program rebates | 1,214 |  | 1,136 | 1,259 |",
        "| Chargebacks | 6,122 |  | 4,531 | 3,411 |",
        "| Sales allowances | 4,809 |  | 3,835 | 3,776 |",
        PFE_TOTAL,
    ]
)


def test_a_bare_total_of_another_table_is_not_the_companys_figure() -> None:
    # Pfizer's 10-K for 2021 (pp. 33 and 40): "Total" sums the revenue deductions its table
    # lists; only under a heading about segments is a bare "Total" the whole company's, named
    # as asked.
    passages = [
        _chunk(
            PFE_DEDUCTIONS,
            doc_id="pfe",
            title=PFE_TITLE,
            page=40,
            heading="The following presents information about revenue deductions:",
        ),
        _chunk(f"Revenues\n{PFE_REVENUES}", doc_id="pfe", title=PFE_TITLE, page=33),
    ]

    quotes = answer_quotes(
        "What was Pfizer's revenue in 2021?", passages, threshold=0.25, weights=WEIGHTS
    )

    total = next(q for q in quotes if q.text == PFE_TOTAL)
    assert total.named == 0
    assert quotes[0].text != PFE_TOTAL
