"""Chunking keeps exact page spans, heading paths and deterministic ids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from docchat.config import Settings
from docchat.errors import ConfigError
from docchat.ingest.chunk import chunks_from_pages
from docchat.ingest.convert.pdf import pages_from_pdf
from docchat.ingest.stages import embed_chunks
from docchat.models import Page
from tests.conftest import WordEmbedder
from tests.pdfgen import make_pdf

TUNED = Settings()
SIZES = {"chunk_size": TUNED.chunk_size, "chunk_overlap": TUNED.chunk_overlap}
SENTENCE = "Lorem ipsum dolor sit amet, consectetur adipiscing elit sed do. "


def _page(number: int, markdown: str) -> Page:
    return Page(number=number, markdown=markdown, chars=len(markdown))


def _chunks(pages: list[Page], **kwargs: int) -> list:
    sizes = {"chunk_size": TUNED.chunk_size, "chunk_overlap": TUNED.chunk_overlap, **kwargs}
    return chunks_from_pages(
        pages, doc_id="doc", version="0123456789abcdef", source="/x/doc.pdf", title="Doc", **sizes
    )


def test_chunk_sections_carry_heading_path_and_their_page() -> None:
    pages = [
        _page(1, "# Guide\n\nIntro text on page one.\n\n## Install\n\nRun the installer."),
        _page(2, "## Use\n\nOpen the app on page two."),
        _page(3, "### Shortcuts\n\nPress F1 for help on page three."),
    ]

    chunks = _chunks(pages)

    assert [(c.headings, c.page_start, c.page_end, c.text) for c in chunks] == [
        (["Guide"], 1, 1, "Intro text on page one."),
        (["Guide", "Install"], 1, 1, "Run the installer."),
        (["Guide", "Use"], 2, 2, "Open the app on page two."),
        (["Guide", "Use", "Shortcuts"], 3, 3, "Press F1 for help on page three."),
    ]


def test_chunk_spanning_pages_records_where_each_page_starts() -> None:
    pages = [_page(1, "First page ends here."), _page(2, ""), _page(3, "Third page text.")]

    [chunk] = _chunks(pages)

    assert (chunk.page_start, chunk.page_end) == (1, 3)
    assert chunk.text == "First page ends here.\nThird page text."
    assert chunk.page_breaks == [22, 22]  # page 2 is empty: pages 2 and 3 start at one offset
    assert chunk.page_at(0) == 1
    assert chunk.page_at(chunk.text.index("Third")) == 3


def test_chunk_size_bound_splits_and_every_piece_knows_its_pages() -> None:
    pages = [_page(n, (SENTENCE * 8).strip()) for n in range(1, 6)]  # ~520 chars a page

    chunks = _chunks(pages, chunk_size=300, chunk_overlap=50)

    assert all(len(c.text) <= 300 for c in chunks)
    for chunk in chunks:
        for offset in range(0, len(chunk.text), 7):
            page = chunk.page_at(offset)
            assert chunk.page_start <= page <= chunk.page_end
    assert chunks[0].page_start == 1 and chunks[-1].page_end == 5
    assert sorted({c.page_start for c in chunks}) == [1, 2, 3, 4, 5]


def test_chunk_ids_are_deterministic_and_unique() -> None:
    pages = [_page(n, (SENTENCE * 8).strip()) for n in range(1, 4)]

    first = [c.chunk_id for c in _chunks(pages, chunk_size=300)]
    again = [c.chunk_id for c in _chunks(pages, chunk_size=300)]

    assert first == again
    assert len(set(first)) == len(first)
    assert first[0] == "doc:0123456789ab:00000"


def test_chunk_embed_text_carries_title_and_heading_path() -> None:
    [chunk] = _chunks([_page(1, "# Guide\n\n## Install\n\nRun the installer.")])

    assert chunk.embed_text == "Doc\nGuide > Install\nRun the installer."


def test_chunk_embed_text_carries_file_name_title_and_heading_path_before_the_page_text() -> None:
    [chunk] = chunks_from_pages(
        [_page(1, "# Results\n\n## Liquidity\n\nCapital expenditures were $11.9 billion.")],
        doc_id="doc",
        version="0123456789abcdef",
        source="bucket/reports/amazon-10k-2017.pdf",
        title="Annual report",
        **SIZES,
    )

    assert chunk.context == "amazon-10k-2017\nAnnual report\nResults > Liquidity"
    assert chunk.embed_text == f"{chunk.context}\nCapital expenditures were $11.9 billion."
    assert chunk.text == "Capital expenditures were $11.9 billion."  # what is shown and quoted


def test_a_synced_files_chunks_name_the_file_it_was_read_as_not_the_end_of_its_link() -> None:
    # A Drive file's link ends in "view": its context named the file "view" (before)
    drive = "https://drive.google.com/file/d/1Kq6TIxVtbp2vT4uX5hoB3Ttp1E_yWrMS/view?usp=drivesdk"
    page = [_page(1, "Revenue grew 12 % in the third quarter.")]
    common = {"doc_id": "d", "version": "v", "title": "Quarterly review", **SIZES}

    [synced] = chunks_from_pages(page, source=drive, name="Q3 figures.pdf", **common)
    [uploaded] = chunks_from_pages(page, source="bucket/team/Q3.pdf", name="Q3.pdf", **common)

    assert synced.context == "Q3 figures\nQuarterly review"
    assert synced.file_name == "Q3 figures.pdf"
    # a file whose source ends in its name keeps no name of its own: stored as before
    assert uploaded.context == "Q3\nQuarterly review"
    assert uploaded.file_name == ""


def test_chunk_context_names_the_file_only_when_it_adds_to_the_title() -> None:
    # A PDF without a title is titled by its file name: that name once, not twice
    [chunk] = chunks_from_pages(
        [_page(1, "Some text.")],
        doc_id="d",
        version="v",
        source="/x/Notes.pdf",
        title="notes",
        **SIZES,
    )

    assert chunk.context == "notes"
    assert chunk.embed_text == "notes\nSome text."


def test_chunk_rejects_overlap_not_below_size() -> None:
    with pytest.raises(
        ConfigError, match=r"chunk overlap \(300\) must be between 0 and the chunk size \(200\)"
    ):
        _chunks([_page(1, "text")], chunk_size=200, chunk_overlap=300)


def test_chunk_page_spans_of_generated_pdf_match_its_pages() -> None:
    pdf_pages = [
        [
            ("h1", f"Chapter {n}"),
            *[("body", f"Chapter {n} line {i} about topic {n}.") for i in range(30)],
        ]
        for n in range(1, 5)
    ]
    document = pages_from_pdf(make_pdf(pdf_pages))

    chunks = _chunks(document.pages, chunk_size=400, chunk_overlap=0)

    # Chapters alike but for their numbers are text, not running headers (none vanishes)
    assert {c.page_start for c in chunks} == {1, 2, 3, 4}
    for chunk in chunks:
        assert chunk.headings == [f"Chapter {chunk.page_start}"]
        assert chunk.page_start == chunk.page_end
        assert f"about topic {chunk.page_start}." in chunk.text


def test_a_heading_with_no_text_under_it_is_still_indexed() -> None:
    # A one-line PDF whose line reads as a heading (pdfminer's habibi.pdf), and a last heading
    pages = [
        Page(number=1, markdown="# abc", chars=3),
        Page(number=2, markdown="## Scope\n\nThe rules apply to ferries.", chars=28),
        Page(number=3, markdown="## Annex", chars=5),
    ]

    chunks = chunks_from_pages(
        pages, doc_id="d", version="v" * 12, source="s", title="abc", **SIZES
    )

    # "abc" lives on in the headings of the text below it; "Annex" has none below it
    assert [(c.page_start, c.headings, c.text) for c in chunks] == [
        (2, ["abc", "Scope"], "The rules apply to ferries."),
        (3, [], "Annex"),
    ]
    only = chunks_from_pages(
        pages[:1], doc_id="d", version="v" * 12, source="s", title="abc", **SIZES
    )
    assert [(c.page_start, c.text) for c in only] == [(1, "abc")]


def test_a_heading_a_heading_of_its_level_follows_joins_the_headings_below_it() -> None:
    # The DMCA summary: "Circumvention of ..." and then "General approach", both ###. The first
    # was a chunk of its own, ranked above the text under it and quoted as an answer.
    pages = [
        _page(3, "## Title I\n\nIt implements the treaties.\n\n### Circumvention of measures"),
        _page(4, "### General approach\n\nArticle 11 of the WCT states it."),
    ]

    chunks = _chunks(pages)

    assert [(c.page_start, c.headings, c.text) for c in chunks] == [
        (3, ["Title I"], "It implements the treaties."),
        (
            4,
            ["Title I", "Circumvention of measures", "General approach"],
            "Article 11 of the WCT states it.",
        ),
    ]


def test_chunk_text_keeps_thin_and_no_break_spaces_tabs_and_private_use_glyphs() -> None:
    # langchain's markdown splitter drops unprintable characters: "35 000" became "35000"
    markdown = "# Part\u00a01\n\nThe fee is 35\u202f000 euros.\u2009Paid\tyearly \uf050 each."

    [chunk] = _chunks([_page(1, markdown)])

    assert chunk.text == "The fee is 35\u202f000 euros.\u2009Paid\tyearly \uf050 each."
    assert chunk.headings == ["Part\u00a01"]  # and no second chunk for that heading


def test_embed_chunks_embeds_each_chunks_contextual_text() -> None:
    # What ingestion (local, and the cloud Embed step) hands the embedder
    class Recording(WordEmbedder):
        def __init__(self) -> None:
            self.texts: list[str] = []

        def embed_documents(self, texts: Sequence[str], **kwargs: Any) -> Any:
            self.texts.extend(texts)
            return super().embed_documents(texts, **kwargs)

    [chunk] = chunks_from_pages(
        [_page(1, "## Liquidity\n\nCapital expenditures rose.")],
        doc_id="d",
        version="v",
        source="bucket/reports/amazon-10k-2017.pdf",
        title="Annual report",
        **SIZES,
    )
    embedder = Recording()

    embed_chunks([chunk], embedder=embedder)

    assert embedder.texts == [
        "amazon-10k-2017\nAnnual report\nLiquidity\nCapital expenditures rose."
    ]


TABLE_HEADER = "|  | Year Ended December 31, |  |\n|  | 2018 | 2019 |\n| --- | --- | --- |"
TABLE_ROWS = [f"| Line item {n:02d} of the statement | {n},100 | {n},200 |" for n in range(1, 31)]
STATEMENT = (
    "Consolidated Statements of Operations\n\n(in millions)\n\n"
    + "\n".join([TABLE_HEADER, *TABLE_ROWS])
    + "\n\nSee accompanying notes."
)


def test_chunk_long_table_splits_between_rows_under_its_header() -> None:
    chunks = _chunks([_page(1, "# Statements\n\n" + STATEMENT)], chunk_size=400, chunk_overlap=50)

    tables = [c for c in chunks if "| --- |" in c.text]
    assert len(tables) > 1
    assert all(c.text.startswith(TABLE_HEADER + "\n| Line item") for c in tables[1:])
    assert all(len(c.text) < 400 for c in tables)
    rows = [line for c in tables for line in c.text.split("\n") if line.startswith("| Line")]
    assert rows == TABLE_ROWS  # every row once, whole, in order


def test_chunk_table_piece_carries_caption_and_heading_path_in_context() -> None:
    chunks = _chunks([_page(1, "# Statements\n\n" + STATEMENT)], chunk_size=400, chunk_overlap=50)

    later = [c for c in chunks if c.text.startswith(TABLE_HEADER)]
    assert later and all(
        c.headings == ["Statements", "Consolidated Statements of Operations (in millions)"]
        for c in later
    )
    assert "Consolidated Statements of Operations (in millions)" in later[-1].context


def test_chunk_tables_sharing_a_header_row_keep_their_own_captions() -> None:
    # A filing's statements and notes share header rows: the cash-flow statement's pieces took
    # the caption of a note's table further down the section (3M's 2018 10-K).
    header = "| (Millions) | 2018 | 2017 |\n| --- | --- | --- |"
    flows = "\n".join([header, *(f"| Cash flow line {n} | {n} | {n} |" for n in range(20))])
    note = "\n".join([header, "| Municipal securities | 12 | 11 |"])
    notes = "The notes that follow are an integral part of the statements above. " * 4
    page = (
        "# Financial statements\n\nConsolidated Statement of Cash Flows\n\n"
        f"{flows}\n\n{notes}\n\nMarketable securities\n\n{note}"
    )

    chunks = _chunks([_page(1, page)], chunk_size=300, chunk_overlap=30)

    flow_pieces = [c for c in chunks if "Cash flow line" in c.text]
    [note_piece] = [c for c in chunks if "Municipal" in c.text]
    assert len(flow_pieces) > 1
    assert all(
        c.headings == ["Financial statements", "Consolidated Statement of Cash Flows"]
        for c in flow_pieces
    )
    assert note_piece.headings == ["Financial statements", "Marketable securities"]


def test_chunk_never_cuts_a_table_row_even_when_rows_are_long() -> None:
    wide = [f"| {'cell text ' * 8}{n} | {n} |" for n in range(12)]  # ~90 chars a row
    table = "\n".join(["| Name | Value |", "| --- | --- |", *wide])

    chunks = _chunks([_page(1, f"Intro.\n\n{table}\n\nOutro.")], chunk_size=200, chunk_overlap=20)

    lines = [line for c in chunks for line in c.text.split("\n") if line.startswith("| cell")]
    assert lines == wide
    assert all(
        c.text.startswith("| Name | Value |\n| --- | --- |\n") for c in chunks if "cell" in c.text
    )


def test_chunk_short_table_is_one_piece_with_its_caption_in_context() -> None:
    table = "| Item | Amount |\n| --- | --- |\n| Rent | 1,200 |\n| Food | 400 |"

    chunks = _chunks([_page(1, f"# Costs\n\nMonthly costs\n\n{table}\n\nTotal 1,600.")])

    assert [(c.headings, c.text) for c in chunks] == [
        (["Costs"], "Monthly costs"),
        (["Costs", "Monthly costs"], table),
        (["Costs"], "Total 1,600."),
    ]


def test_a_chunk_spanning_labelled_locations_names_each_location_it_covers() -> None:
    # The labels were looked up by the chunk's page-break offsets instead of its pages: a
    # KeyError (every chunk of a document FAILED) or another location's label.
    pages = [
        Page(number=1, markdown="First slide text.", chars=15, kind="slide", label="Slide 1: A"),
        Page(number=2, markdown="", chars=0, kind="slide", label="Slide 2: B"),
        Page(number=3, markdown="Third slide text.", chars=15, kind="slide", label="Slide 3: C"),
    ]

    [chunk] = _chunks(pages)

    assert chunk.page_labels == ["Slide 1: A", "Slide 2: B", "Slide 3: C"]
    assert chunk.label_of(chunk.page_at(chunk.text.index("Third"))) == "Slide 3: C"
