"""Running headers, footers, page numbers and margin notes stay out of page text and chunks.

The demo PDFs (examples/pdfs, the ones `make demo` ingests) are real documents: the U.S.
Copyright Office's DMCA summary (a header and a "Copyright Office Summary December 1998 Page N"
footer on every page) and the IRS's 2007 Instructions for Form 1040-NR (three columns, footers
that swap sides on facing pages, and "CAUTION"/"TIP" labels in the margin beside the text).
"""

from __future__ import annotations

import io
import re
from functools import cache
from pathlib import Path

import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen.canvas import Canvas

from docchat.answer.citations import best_quote
from docchat.ingest.chunk import chunks_from_pages
from docchat.ingest.convert.pdf import page_furniture, pages_from_pdf
from docchat.ingest.convert.running import running_key
from docchat.models import Chunk, ConvertedDocument
from docchat.search.terms import terms
from tests.chatkit import DEFAULTS

DEMO = Path(__file__).resolve().parents[2] / "examples" / "pdfs"
DMCA = "dmca.pdf"
IRS = "i1040nr.pdf"

# Debris as the chunks carried it before: a footer run into the sentence it interrupts, a
# margin label run into the line beside it, a proof header, footers with their page numbers.
DEBRIS = [
    re.compile(r"Copyright Office Summary December 1998 Page \d+"),
    re.compile(r"\bCAUTION\b"),
    re.compile(r"(?<!the )(?<!that )\bTIP (?=[a-z])"),  # "TIP see Pub. 590", not "the TIP below"
    re.compile(r"Instructions for Form 1040NR\s*-\s*\d+\s*-"),
    re.compile(r"-\s*\d+\s*-\s*Instructions for Form 1040NR"),
    re.compile(r"The type and rule above prints on all proofs"),
    re.compile(r"The Digital Millennium Copyright Act of 1998"),  # dmca's running header
]


def _norm(text: str) -> str:
    return " ".join(text.split())


@cache
def _data(name: str) -> bytes:
    return (DEMO / name).read_bytes()


@cache
def _converted(name: str) -> ConvertedDocument:
    """The demo PDF converted once for every test that reads it (none changes it)."""
    return pages_from_pdf(_data(name))


@cache
def _chunks(name: str) -> tuple[Chunk, ...]:
    document = _converted(name)
    return tuple(
        chunks_from_pages(
            document.pages,
            doc_id=name,
            version="v",
            source=name,
            title=document.title,
            chunk_size=DEFAULTS.chunk_size,  # as the demo chunks them
            chunk_overlap=DEFAULTS.chunk_overlap,
        )
    )


@pytest.mark.parametrize("name", [DMCA, IRS])
def test_demo_chunks_carry_no_header_footer_or_margin_note(name: str) -> None:
    found = [
        (chunk.page_start, pattern.pattern, match.group())
        for chunk in _chunks(name)
        for pattern in DEBRIS
        if (match := pattern.search(_norm(chunk.text)))
    ]

    assert found == []


def test_demo_footer_no_longer_splits_sentence_across_pages() -> None:
    # The sentence runs from page 17 onto page 18, where the footer used to sit before it.
    text = " ".join(_norm(chunk.text) for chunk in _chunks(DMCA))

    assert "circumvention of access control measures does not take effect until two years" in text
    assert "Copyright Office Summary December 1998 Page 18 control measures" not in text


def test_demo_margin_notes_do_not_split_sentences() -> None:
    text = " ".join(_norm(chunk.text) for chunk in _chunks(IRS))

    assert "you may have CAUTION to file Form 3520-A" not in text
    assert (
        "If you are filing Form 1040NR for a foreign trust, you may have to file Form 3520-A"
        in (text)
    )
    assert "To save interest and penalties, pay your taxes in full by the due date" in text


@pytest.mark.parametrize(
    ("name", "question", "expected"),
    [
        (IRS, "foreign trust file Form 3520-A", "you may have to file Form 3520-A"),
        (
            DMCA,
            "prohibition circumvention access control measures take effect",
            "control measures does not take effect",
        ),
    ],
)
def test_demo_extractive_quotes_are_clean(name: str, question: str, expected: str) -> None:
    # The offline model quotes the best-matching sentences of the passages it was given.
    quotes = [best_quote(chunk, terms(question)) for chunk in _chunks(name)]
    texts = [found.text for found in quotes if found]

    assert any(expected in quote for quote in texts)
    assert not [q for q in texts for pattern in DEBRIS if pattern.search(q)]


def test_detector_finds_dmca_header_and_footer_on_every_page() -> None:
    found = page_furniture(_data(DMCA))

    footers = {page for page, text in found if text.startswith("Copyright Office Summary")}
    headers = {
        page for page, text in found if text == "The Digital Millennium Copyright Act of 1998"
    }
    assert footers == set(range(1, 19))
    assert headers == set(range(2, 19))  # page 1 has the title page instead


def test_detector_finds_irs_footers_that_swap_sides_on_facing_pages() -> None:
    found = page_furniture(_data(IRS))
    keys = {(page, running_key(text)) for page, text in found}

    # Odd pages say "Instructions for Form 1040NR -5-", even ones "-8- Instructions for ...".
    footer = running_key("Instructions for Form 1040NR")
    pages_with_footer = {page for page, key in keys if key == footer}
    assert set(range(2, 34)) <= pages_with_footer
    # What it removes is only ever the footer, a page number or a proof header.
    assert {key for _, key in keys} <= {footer, "", running_key("Page 2 Publication 4655")}


def test_detected_lines_are_gone_from_the_chunks_of_their_pages() -> None:
    found = [(page, text) for page, text in page_furniture(_data(DMCA))]
    chunks = _chunks(DMCA)

    leftovers = [
        (page, text)
        for page, text in found
        for chunk in chunks
        if chunk.page_start <= page <= chunk.page_end and text in _norm(chunk.text)
    ]
    assert found and leftovers == []


# --- generated PDFs: what is kept ------------------------------------------------------------


def _pdf(pages: list[list[tuple[float, float, str, str, float]]]) -> bytes:
    """Pages of (x, y, font, text, size) strings."""
    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=A4, invariant=1)
    for strings in pages:
        for x, y, font, text, size in strings:
            canvas.setFont(font, size)
            canvas.drawString(x, y, text)
        canvas.showPage()
    canvas.save()
    return buffer.getvalue()


WORDS = ["Apples", "Pears", "Plums", "Cherries", "Grapes", "Lemons", "Limes", "Figs"]


def _body(number: int) -> list[tuple[float, float, str, str, float]]:
    return [
        (
            72,
            760 - 14 * i,
            "Helvetica",
            f"{WORDS[(number + i) % len(WORDS)]} is line {i} of the text on page {number}.",
            10,
        )
        for i in range(5)
    ]


def test_running_footer_with_page_number_and_date_is_dropped() -> None:
    months = ["January", "February", "March", "April"]
    pages = [
        [
            *_body(n),
            (72, 40, "Helvetica", f"Quarterly report {months[n]} 2024 page {n + 1}", 8),
            (300, 810, "Helvetica", f"{n + 1}", 8),
        ]
        for n in range(4)
    ]

    document = pages_from_pdf(_pdf(pages))

    for page in document.pages:
        assert "Quarterly report" not in page.markdown
        n = page.number - 1
        assert f"{WORDS[n]} is line 0 of the text on page {n}." in page.markdown
        assert f"{WORDS[(n + 4) % len(WORDS)]} is line 4 of the text on page {n}." in page.markdown
        assert not page.markdown.startswith(f"{page.number}")


def test_numbers_repeated_at_the_bottom_of_pages_are_kept() -> None:
    # A table's last row of numbers at the same height on every page is no footer.
    pages = [
        [*_body(n), (72, 670, "Helvetica", f"{n}4,950 5,000 {n}03 {n}03", 10)] for n in range(4)
    ]

    document = pages_from_pdf(_pdf(pages))

    assert all(f"{p.number - 1}4,950 5,000" in p.markdown for p in document.pages)


def test_page_that_says_only_its_number_keeps_it() -> None:
    pages = [[(72, 760, "Helvetica", f"Page{n + 1}", 10)] for n in range(3)]

    document = pages_from_pdf(_pdf(pages))

    assert [p.markdown for p in document.pages] == ["Page1", "Page2", "Page3"]


def test_margin_label_beside_indented_text_leaves_sentence_whole() -> None:
    page = [
        (72, 760, "Helvetica", "If you are filing the form for a trust, you", 10),
        # As in the IRS's instructions: text set in from the column's edge by 30 pt where the
        # label sits, a little more than a word space away from it.
        (102, 746, "Helvetica", "may have to file another form as well, on or", 10),
        (72, 735, "Helvetica-Bold", "CAUTION", 5),
        (102, 732, "Helvetica", "before the due date of the return.", 10),
        (72, 718, "Helvetica", "The next paragraph starts here and says more.", 10),
    ]

    document = pages_from_pdf(_pdf([page]))

    assert "CAUTION" not in document.pages[0].markdown
    assert (
        "If you are filing the form for a trust, you may have to file another form as well, "
        "on or before the due date of the return."
    ) in document.pages[0].markdown


def test_capitalised_words_in_the_text_are_not_margin_notes() -> None:
    page = [
        (72, 760, "Helvetica-Bold", "NOTE", 10),
        (72, 746, "Helvetica", "The NASA report and the FBI files were read.", 10),
        (72, 732, "Helvetica-Bold", "TOTAL", 10),
        (120, 732, "Helvetica", "Sum of all lines above.", 10),
    ]

    markdown = pages_from_pdf(_pdf([page])).pages[0].markdown

    assert "NOTE" in markdown and "NASA" in markdown and "TOTAL" in markdown


def test_demo_bullets_stay_on_their_list_items() -> None:
    # PDFium reads the DMCA's bullet (a symbol font's glyph) as "!", set well apart from its
    # item: quotes showed the "!", and before that it was cut off as a margin icon and left on
    # a line of its own, and items ran together into paragraphs.
    page = _converted(DMCA).pages[10].markdown
    paragraphs = [_norm(p) for p in page.split("\n\n")]

    assert "!" not in paragraphs and not [p for p in paragraphs if p.startswith("! ")]
    assert "• The content of the retained material must not be modified." in paragraphs
    assert any(p.startswith("• The provider must limit users") for p in paragraphs)


def test_demo_list_items_keep_their_wrapped_lines() -> None:
    # A bullet's font is not its text's: measured by the bullet, an item's first line differed
    # in size or weight from the next, which then began a paragraph (and a sentence) of its own.
    dmca = [_norm(p) for p in _converted(DMCA).pages[0].markdown.split("\n\n")]
    irs = [_norm(p) for p in _converted(IRS).pages[1].markdown.split("\n\n")]

    assert (
        "• Title I, the “WIPO Copyright and Performances and Phonograms Treaties "
        "Implementation Act of 1998,” implements the WIPO treaties." in dmca
    )
    assert "• Days you are in the United States as a crew member of a foreign vessel." in irs


def test_demo_list_items_are_not_headings() -> None:
    # The IRS instructions' bullet glyph is larger than the text: hundreds of "### • Days you
    # commute to work in the" became headings, and every chunk's heading path carried them.
    markdown = "\n".join(page.markdown for page in _converted(IRS).pages)
    bulleted = [line for line in markdown.splitlines() if re.match(r"#+ •", line)]

    assert bulleted == []
    assert "• Teacher or trainee," in markdown.splitlines()


def test_demo_footnote_marks_set_back_in_a_line_do_not_land_in_its_sentence() -> None:
    # PDFium puts a raised footnote mark at the end of its line though it stands further
    # left: quotes read "Making or selling devices or services that 2 are used to circumvent".
    pages = _converted(DMCA).pages
    text = " ".join(_norm(page.markdown) for page in pages)

    assert "devices or services that are used to circumvent" in text
    assert "to create four new limitations on liability" in text
    assert "the exercise of any of the exclusive rights of an author" in text
    assert not re.search(r"[a-z] \d [a-z]", text)
