"""Quotes of table rows (issue 28): a row of a table in page text is one quotable unit, quoted
verbatim with its table's header rows; an amount question puts the rows and sentences holding
amounts first; a question naming a company searches that company's reports.

Page text writes a table as a markdown pipe table, one row per line (the converter's format:
header rows, a `| --- |` delimiter line, body rows), with its caption and units line above it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.agent import NOT_FOUND, ExtractiveAnswerer
from docchat.answer.citations import citations_for_answer
from docchat.answer.events import CitationsEvent, DeltaEvent
from docchat.answer.extractive import QuoteWeights, answer_quotes
from docchat.evaluate.qa import verbatim
from docchat.ingest.chunk import chunks_from_pages
from docchat.ingest.local import embed_chunks
from docchat.models import Chunk, Citation, DocStatus, DocumentRecord, Page
from docchat.search.library import Library
from docchat.search.rerank import SentenceReranker
from docchat.search.sentences import chunk_sentences, sentences
from tests.chatkit import DEFAULTS, SEARCH, tuned_config
from tests.conftest import WordEmbedder

WEIGHTS = QuoteWeights.of(DEFAULTS)
AMAZON_HEADER = ("|  | Year Ended December 31, |  |  |", "|  | 2017 | 2018 | 2019 |")
AMAZON_TOTAL = "| Total net sales | 177,866 | 232,887 | 280,522 |"
AMAZON_INTEREST = "| Interest expense | (848) | (1,417) | (1,600) |"
# Amazon.com, Inc. Form 10-K 2019, p. 37 (its income statement), as page text.
AMAZON_PAGE = "\n".join(
    [
        "# Consolidated Statements of Operations",
        "(in millions, except per share data)",
        *AMAZON_HEADER,
        "| --- | --- | --- | --- |",
        "| Net product sales | $ 118,573 | $ 141,915 | $ 160,408 |",
        "| Net service sales | 59,293 | 90,972 | 120,114 |",
        AMAZON_TOTAL,
        "| Operating expenses: |  |  |  |",
        "| Cost of sales. Fulfillment excluded | 111,934 | 139,156 | 165,536 |",
        "| Operating income | 4,106 | 12,421 | 14,541 |",
        AMAZON_INTEREST,
        "See accompanying notes to consolidated financial statements.",
    ]
)
# Amazon's prose about the same figure, without it.
AMAZON_PROSE = (
    "Total net sales in 2019 grew in every segment, led by North America and AWS.\n"
    "We expect total net sales to keep growing as customers shop online."
)
# Amazon's notes on its interest expense, with amounts (pp. 45 and 66).
AMAZON_NOTES = (
    "Interest expense was $848 million, $1.4 billion, and $1.6 billion in 2017, 2018, and "
    "2019, primarily related to debt and finance leases.",
    "Interest expense on our long-term debt and finance leases increased in 2019, as finance "
    "lease liabilities grew with our fulfillment network.",
)
BOEING_HEADER = ("|  | Years ended December 31, |  |  |", "|  | 2019 | 2018 | 2017 |")
BOEING_INTEREST = "| Interest and debt expense | (722) | (475) | (360) |"
# The Boeing Company Form 10-K 2019, its income statement, as page text.
BOEING_PAGE = "\n".join(
    [
        "# Consolidated Statements of Operations",
        "(Dollars in millions, except per share data)",
        *BOEING_HEADER,
        "| --- | --- | --- | --- |",
        "| Sales of products | $ 66,094 | $ 90,229 | $ 83,740 |",
        "| Sales of services | 10,465 | 10,898 | 10,265 |",
        "| Total revenues | 76,559 | 101,127 | 94,005 |",
        "| Loss from operations | (1,975) | 11,987 | 10,278 |",
        BOEING_INTEREST,
        "The accompanying notes are an integral part of these financial statements.",
    ]
)
BOEING_PROSE = (
    "Interest and debt expense in 2019 rose as we borrowed to fund operations during the "
    "737 MAX grounding.\nTotal revenues in 2019 fell in Commercial Airplanes."
)


def _chunk(text: str, *, doc_id: str = "amzn", title: str = "Amazon.com, Inc. Form 10-K 2019",
           n: int = 0, page: int = 37) -> Chunk:  # fmt: skip
    return Chunk(
        chunk_id=f"{doc_id}:v:{n:05d}",
        doc_id=doc_id,
        version="v",
        source=f"{doc_id}-10k-2019.pdf",
        title=title,
        headings=[],
        page_start=page,
        page_end=page,
        text=text,
    )


# --- rows as quotable units ----------------------------------------------------------------


def test_a_table_row_is_one_sentence_and_its_header_and_delimiter_are_none() -> None:
    found = sentences(AMAZON_PAGE)

    assert found[:2] == [
        "# Consolidated Statements of Operations",
        "(in millions, except per share data)",
    ]
    # Each body row whole, even with ". F" inside a cell; no header or delimiter line alone
    assert found[2:9] == [line for line in AMAZON_PAGE.splitlines()[5:12]]
    assert "Cost of sales." not in found
    assert not [s for s in found if s.startswith(("|  |", "| ---"))]
    assert found[-1] == "See accompanying notes to consolidated financial statements."


def test_a_row_is_never_joined_with_the_line_around_it() -> None:
    # A line starting in lower case wraps the line before it, unless that line is a table row
    text = "Net sales rose\n| Total net sales | 280,522 |\nin every segment.\n| --- |"

    assert sentences(text) == [
        "Net sales rose",
        "| Total net sales | 280,522 |",
        "in every segment.",
    ]


def test_chunk_rows_carry_their_tables_header_rows_verbatim() -> None:
    spans = chunk_sentences(_chunk(AMAZON_PAGE))

    [total] = [s for s in spans if s.text == AMAZON_TOTAL]
    assert total.table_row and total.table_header == AMAZON_HEADER
    assert total.page == 37 and not total.list_item
    assert total.text == AMAZON_PAGE[total.start : total.end]  # the line as it stands
    prose = [s for s in spans if not s.table_row]
    assert [s.table_header for s in prose] == [(), (), ()]


def test_rows_of_a_table_whose_head_is_in_an_earlier_chunk_are_rows_without_header() -> None:
    rows = "| Total net sales | 177,866 | 232,887 | 280,522 |\n| Operating income | 4,106 |  |  |"

    spans = chunk_sentences(_chunk(rows))

    assert [(s.text, s.table_row, s.table_header) for s in spans] == [
        (AMAZON_TOTAL, True, ()),
        ("| Operating income | 4,106 |  |  |", True, ()),
    ]


# --- extractive answers quote rows -----------------------------------------------------------


def test_an_amount_question_is_answered_first_by_the_row_holding_the_amount() -> None:
    # The prose sentence holds the question's words as well as the row does, but no amount;
    # before amounts came first it was quoted first.
    passages = [_chunk(AMAZON_PROSE, n=0, page=25), _chunk(AMAZON_PAGE, n=1)]

    quotes = answer_quotes(
        "What were total net sales in 2019?", passages, threshold=0.25, weights=WEIGHTS
    )

    first = quotes[0]
    assert (first.text, first.page, first.span.table_header) == (AMAZON_TOTAL, 37, AMAZON_HEADER)
    assert not first.partial
    assert all(verbatim(q.text, q.chunk.text) for q in quotes)


# The Boeing Company Form 10-K 2019, p. 116 (revenue notes): totals of other things, whose
# labels hold the asked words among others.
BOEING_NOTES = "\n".join(
    [
        "# Note 21 - Segment and Revenue Information",
        *BOEING_HEADER,
        "| --- | --- | --- | --- |",
        "| Total non-U.S. revenues | 27,486 | 42,122 | 39,234 |",
        "| Total revenues from contracts with customers | 31,903 | 57,469 | 54,416 |",
        "| Total segment revenues | $32,255 | $57,499 | $54,612 |",
    ]
)


def test_an_amount_question_quotes_first_the_row_whose_label_is_what_it_asks() -> None:
    # FinanceBench's Boeing 10-K: the revenue notes rank above the income statement, and their
    # rows ("Total non-U.S. revenues") were quoted before the row named "Total revenues".
    boeing = "The Boeing Company Form 10-K 2019"
    passages = [
        _chunk(BOEING_NOTES, doc_id="ba", title=boeing, n=0, page=116),
        _chunk(BOEING_PAGE, doc_id="ba", title=boeing, n=1, page=53),
    ]

    quotes = answer_quotes(
        "What were Boeing's total revenues in 2019?", passages, threshold=0.25, weights=WEIGHTS
    )

    total = "| Total revenues | 76,559 | 101,127 | 94,005 |"
    assert (quotes[0].text, quotes[0].page) == (total, 53)
    assert quotes[0].figures == ("2019: 76,559",)


def test_a_question_asking_for_no_amount_keeps_its_best_sentence_first() -> None:
    passages = [_chunk(AMAZON_PROSE, n=0, page=25), _chunk(AMAZON_PAGE, n=1)]

    quotes = answer_quotes(
        "Where did total net sales grow in 2019?", passages, threshold=0.25, weights=WEIGHTS
    )

    assert quotes[0].text.startswith("Total net sales in 2019 grew in every segment")


def test_a_sentence_holding_an_amount_leads_as_a_row_does() -> None:
    passages = [
        _chunk("Total net sales in 2019 grew in every segment, led by North America.", page=25),
        _chunk("Total net sales reached $280.5 billion in 2019, up 20% from 2018.", n=1, page=26),
    ]

    quotes = answer_quotes(
        "What were total net sales in 2019?", passages, threshold=0.25, weights=WEIGHTS
    )

    assert [q.page for q in quotes] == [26, 25]


def test_the_extractive_answer_shows_a_row_under_its_header_and_cites_its_page(
    tmp_path: Path,
) -> None:
    library = _library(tmp_path, {"amzn": [_page(37, AMAZON_PAGE)]})

    text, citations = _ask(library, "What were total net sales in 2019?")

    first = citations[0]
    assert (first.quote, first.page, first.doc_id) == (AMAZON_TOTAL, 37, "amzn")
    assert first.table_header == list(AMAZON_HEADER)
    assert first.title == "Amazon.com, Inc. Form 10-K 2019"
    # The header rows stand above the quoted row, as in the table, and the asked year's cell
    # follows it, named by its column
    assert (
        f"1. {AMAZON_HEADER[0]}\n   {AMAZON_HEADER[1]}\n   “{AMAZON_TOTAL}” [{first.number}]"
        " (2019: 280,522)\n" in text
    )


def test_a_model_answer_citing_a_table_passage_cites_the_row_with_its_header() -> None:
    chunk = _chunk(AMAZON_PAGE)

    [cited] = citations_for_answer("Total net sales were $280,522 million in 2019 [1].", [chunk])

    assert (cited.quote, cited.page) == (AMAZON_TOTAL, 37)
    assert cited.table_header == list(AMAZON_HEADER)


def test_a_citation_of_a_sentence_sends_no_table_header() -> None:
    sentence = Citation(number=1, doc_id="d", title="T", source="t.pdf", page=2, quote="q")
    row = sentence.model_copy(update={"table_header": ["| | 2019 |"]})

    assert "table_header" not in sentence.model_dump(mode="json")
    assert row.model_dump(mode="json")["table_header"] == ["| | 2019 |"]
    assert Citation.model_validate(row.model_dump(mode="json")) == row


# --- which company ---------------------------------------------------------------------------

TITLES = {
    "amzn": "Amazon.com, Inc. Form 10-K 2019",
    "ba": "The Boeing Company Form 10-K 2019",
}


@pytest.mark.parametrize(
    ("question", "doc_id", "figure"),
    [
        ("What were Amazon's total net sales in 2019?", "amzn", AMAZON_TOTAL),
        # The row named as asked, before the note's sentence holding the same amount.
        ("What was Amazon's interest expense in 2019?", "amzn", AMAZON_INTEREST),
        ("What was Boeing's interest expense in 2019?", "ba", BOEING_INTEREST),
    ],
)
def test_an_amount_question_over_two_companies_quotes_the_named_companys_row_first(
    tmp_path: Path, question: str, doc_id: str, figure: str
) -> None:
    # Given both companies' 10-Ks, each with its income statement and prose, through chunking,
    # the index, hybrid search and sentence reranking
    library = _library(
        tmp_path,
        {
            "amzn": [
                _page(25, AMAZON_PROSE),
                _page(37, AMAZON_PAGE),
                _page(45, AMAZON_NOTES[0]),
                _page(66, AMAZON_NOTES[1]),
            ],
            "ba": [_page(30, BOEING_PROSE), _page(62, BOEING_PAGE)],
        },
    )

    # When an amount question names one company
    text, citations = _ask(library, question)

    # Then the first quote is that company's row (or sentence) with the amount, verbatim on
    # its page
    first = citations[0]
    assert first.doc_id == doc_id and figure in first.quote, citations
    pages = {("amzn", 25): AMAZON_PROSE, ("amzn", 37): AMAZON_PAGE}
    pages |= {("amzn", 45): AMAZON_NOTES[0], ("amzn", 66): AMAZON_NOTES[1]}
    pages |= {("ba", 30): BOEING_PROSE, ("ba", 62): BOEING_PAGE}
    assert all(verbatim(c.quote, pages[c.doc_id, c.page]) for c in citations)
    assert NOT_FOUND not in text


def test_one_capitalised_word_names_a_company_when_only_one_title_names_it(
    tmp_path: Path,
) -> None:
    library = _library(
        tmp_path,
        {
            "amzn": [_page(37, AMAZON_PAGE)],
            "ba": [_page(62, BOEING_PAGE)],
            "aal": [_page(1, "Passengers flew.")],
            "axp": [_page(1, "Cardholders spent.")],
        },
        titles={
            **TITLES,
            "aal": "American Airlines Group Inc. Form 10-K 2019",
            "axp": "American Express Company Form 10-K 2019",
        },
    )
    catalog = library.catalog()

    assert catalog.named_in("What were Amazon's net sales?") == (["amzn"], "what were s net sales")
    assert catalog.named_in("Did Boeing or Amazon borrow more?")[0] == ["ba", "amzn"]
    # A word written in lower case is only a word
    assert catalog.named_in("what were amazon's net sales?")[0] == []
    assert catalog.named_in("What did American Express spend?")[0] == ["axp"]
    assert catalog.ambiguity("What did American Express spend?") == ""
    # Outside the chat's documents a name is only a word
    assert catalog.named_in("What were Amazon's net sales?", ["ba"])[0] == []


def test_a_name_two_companies_share_searches_each_and_says_so(tmp_path: Path) -> None:
    library = _library(
        tmp_path,
        {
            "amzn": [_page(37, AMAZON_PAGE)],
            "aal": [_page(1, "Passengers flew 200 million miles.")],
            "axp": [_page(1, "Cardholders spent 1,500 billion dollars.")],
        },
        titles={
            **TITLES,
            "aal": "American Airlines Group Inc. (AAL) Form 10-K 2019",
            "axp": "American Express Company (AXP) Form 10-K 2019",
        },
    )
    catalog = library.catalog()
    question = "How much did American spend in 2019?"

    # Before, a name two companies share named neither: the whole shelf was searched, silently
    assert catalog.named_in(question)[0] == ["aal", "axp"]
    said = (
        "“american” may mean American Airlines (AAL) or American Express (AXP): each was searched"
    )
    assert catalog.ambiguity(question).startswith(said)
    found = library.search(question, top_k=5)
    assert {p.chunk.doc_id for p in found.passages} == {"aal", "axp"}
    assert found.scope_note == catalog.ambiguity(question)
    text, citations = _ask(library, question)
    assert text.startswith(said), text
    assert {c.doc_id for c in citations} <= {"aal", "axp"}
    # A sentence's capital is no name; a possessive is
    assert catalog.named_in("American spending in 2019?")[0] == []
    assert catalog.named_in("American's spending in 2019?")[0] == ["aal", "axp"]


def test_a_title_that_names_no_company_names_none(tmp_path: Path) -> None:
    library = _library(
        tmp_path,
        {"pr": [_page(1, "Revenue rose.")], "toc": [_page(1, "Contents.")]},
        titles={
            "pr": "FOR IMMEDIATE RELEASE",
            "toc": "ANNUAL REPORT ON FORM 10-K TABLE OF CONTENTS",
        },
    )

    assert (
        library.catalog().named_in("What did the Annual Report say about Release dates?")[0] == []
    )


# --- helpers -------------------------------------------------------------------------------


def _page(number: int, markdown: str) -> Page:
    return Page(number=number, markdown=markdown, chars=len("".join(markdown.split())))


def _library(
    tmp_path: Path,
    documents: dict[str, list[Page]],
    *,
    titles: dict[str, str] = TITLES,
    chunk_overlap: int = DEFAULTS.chunk_overlap,
) -> Library:
    """The documents through the local path after conversion: chunked with the settings'
    sizes, embedded, indexed in SQLite, searched and reranked as `docchat serve` does."""
    embedder = WordEmbedder()
    index = SqliteIndex(tmp_path / "i.sqlite3", embedding_model=embedder.model_id, dimension=64)
    for doc_id, pages in documents.items():
        source = f"{doc_id}-10k-2019.pdf"
        chunks = chunks_from_pages(
            pages,
            doc_id=doc_id,
            version="v",
            source=source,
            title=titles[doc_id],
            chunk_size=DEFAULTS.chunk_size,
            chunk_overlap=chunk_overlap,
        )
        record = DocumentRecord(
            doc_id=doc_id,
            source=source,
            title=titles[doc_id],
            version="v",
            pages=len(pages),
            status=DocStatus.INDEXED,
        )
        vectors = embed_chunks(chunks, embedder=embedder)
        index.replace_document(record, chunks, vectors, pages=pages)
    reranker = SentenceReranker(
        embedder,
        sentence_weight=DEFAULTS.sentence_weight,
        sentence_words=DEFAULTS.sentence_words,
    )
    return Library(index=index, embedder=embedder, registry=index, reranker=reranker, **SEARCH)


def _ask(library: Library, question: str) -> tuple[str, list[Citation]]:
    events = list(
        ExtractiveAnswerer(library, tuned_config()).run([{"role": "user", "content": question}])
    )
    text = "".join(e.text for e in events if isinstance(e, DeltaEvent))
    [cited] = [e for e in events if isinstance(e, CitationsEvent)]
    return text, cited.citations


def test_a_question_asking_for_no_amount_does_not_put_a_sentence_first_for_its_year() -> None:
    # The second sentence only names the asked year; before the year-first order was kept to
    # amount questions it was quoted first (COVID-QA's answer recall fell with it).
    passages = [
        _chunk(
            "The WHO declared the outbreak a public health emergency of international concern.",
            title="Outbreak report",
            page=3,
        ),
        _chunk(
            "Many countries closed their borders in 2020, the WHO said.",
            n=1,
            title="Outbreak report",
            page=4,
        ),
    ]

    quotes = answer_quotes(
        "What did the WHO declare about the outbreak in 2020?",
        passages,
        threshold=0.25,
        weights=WEIGHTS,
    )

    assert [q.page for q in quotes] == [3, 4]


MMM_HEADER = ("| (Millions) | 2018 | 2017 | 2016 |",)
# 3M Company Form 10-K 2018, p. 60: its cash-flow statement, in the two pieces chunking makes.
MMM_INVESTING = "\n".join(
    [
        *MMM_HEADER,
        "| --- | --- | --- | --- |",
        "| Net cash provided by (used in) operating activities | 6,439 | 6,240 | 6,662 |",
        "| Cash Flows from Investing Activities |  |  |  |",
        "| Purchases of property, plant and equipment (PP&E) | (1,577) | (1,373) | (1,420) |",
        "| Proceeds from sale of PP&E and other assets | 262 | 49 | 58 |",
    ]
)
MMM_FINANCING = "\n".join(
    [
        *MMM_HEADER,
        "| --- | --- | --- | --- |",
        "| Net cash provided by (used in) financing activities | (6,701) | (2,655) | (4,626) |",
        "| Effect of exchange rate changes on cash and cash equivalents | (160) | 156 | (33) |",
        "| Cash and cash equivalents at end of period | $ 2,853 | $ 3,053 | $ 2,398 |",
    ]
)


@pytest.mark.parametrize(
    ("question", "row"),
    [
        (
            "What is the FY2018 capital expenditure amount (in USD millions) for 3M? Give a "
            "response by relying on the details shown in the cash flow statement.",
            "| Purchases of property, plant and equipment (PP&E) | (1,577) | (1,373) | (1,420) |",
        ),
        (
            "How much cash did 3M's financing activities use in 2018?",
            "| Net cash provided by (used in) financing activities | (6,701) | (2,655) | (4,626) |",
        ),
    ],
)
def test_a_row_label_is_named_as_asked_whatever_it_adds_in_parentheses(
    question: str, row: str
) -> None:
    # "(PP&E)" after the row's own words kept 3M's capex row from counting as named, so rows of
    # the better-ranked piece that only said "cash" were quoted instead (FinanceBench).
    title = "3M COMPANY Form 10-K, fiscal year ended December 31, 2018"
    passages = [
        _chunk(MMM_FINANCING, doc_id="mmm", title=title, n=1, page=60),
        _chunk(MMM_INVESTING, doc_id="mmm", title=title, n=0, page=60),
    ]

    quotes = answer_quotes(question, passages, threshold=0.25, weights=WEIGHTS)

    assert quotes[0].text == row
    assert quotes[0].figures[0].startswith("2018: (")


def test_a_column_over_a_span_of_years_names_the_figure_of_a_year_inside_it() -> None:
    # A column headed by a span of years ("2021-2023", as a statement's three-year totals are)
    # names each of them; before, naming the asked year's figure raised ValueError (the year is
    # not printed in the heading) and the answer ended with an internal error.
    page = (
        "| (in millions) | 2024 | 2021-2023 |\n| --- | --- | --- |\n"
        "| Total revenues | 680,985 | 1,901,317 |"
    )
    quotes = answer_quotes(
        "What were total revenues in 2022?", [_chunk(page)], threshold=0.25, weights=WEIGHTS
    )

    assert quotes[0].text == "| Total revenues | 680,985 | 1,901,317 |"
    assert quotes[0].figures == ("2021-2023: 1,901,317",)


# MGM Resorts' Q4 2022 earnings release, consolidated statements of operations: a caption row
# over the rows it heads, no figure of its own.
MGM_OPERATIONS = "\n".join(
    [
        "# Consolidated Statements of Operations",
        "|  | Three Months Ended | Twelve Months Ended |",
        "|  | December 31, 2022 | December 31, 2022 |",
        "| --- | --- | --- |",
        "| Revenues |  |  |",
        "| Casino | $ 1,548,762 | $ 5,734,173 |",
        "| Rooms | 755,655 | 2,792,322 |",
        "| Net revenues | 3,592,334 | 13,127,485 |",
    ]
)


@pytest.mark.parametrize(
    "question",
    [
        "Which revenues did MGM have in the twelve months of 2022?",
        "What were MGM's revenues in FY2022?",
    ],
)
def test_a_caption_row_without_a_figure_is_never_quoted(question: str) -> None:
    # Given a statement whose "Revenues" row only heads the rows under it
    mgm = "MGM Resorts International earnings release Q4 2022"
    passages = [_chunk(MGM_OPERATIONS, doc_id="mgm", title=mgm, page=9)]

    quotes = answer_quotes(question, passages, threshold=0.25, weights=WEIGHTS)

    # Then the rows holding figures are quoted, not the caption alone (it was, as
    # "| Revenues |  |  |", holding the asked word and nothing else)
    said = [q.text for q in quotes]
    assert "| Casino | $ 1,548,762 | $ 5,734,173 |" in said, said
    assert not any(q.span.table_row and not any(c.isdigit() for c in q.text) for q in quotes), said
