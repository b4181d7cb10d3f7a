"""Conversion of generated PDFs whose headings, paragraphs and page breaks are known exactly."""

from __future__ import annotations

from docchat.ingest.convert.pdf import pages_from_pdf
from tests.pdfgen import make_pdf

REPORT = [
    [
        ("h1", "Annual Report"),
        ("body", "This report covers the fiscal year of the company."),
        ("h2", "Revenue"),
        ("body", "Revenue grew by twelve percent over the year."),
    ],
    [
        ("h2", "Costs"),
        ("body", "Costs fell because the warehouse was sold."),
        ("h3", "Staff"),
        ("body", "The company employs forty engineers."),
    ],
]


def test_convert_font_sizes_become_heading_levels() -> None:
    document = pages_from_pdf(make_pdf(REPORT))

    assert [p.number for p in document.pages] == [1, 2]
    assert document.pages[0].markdown == (
        "# Annual Report\n\n"
        "This report covers the fiscal year of the company.\n\n"
        "## Revenue\n\n"
        "Revenue grew by twelve percent over the year."
    )
    assert document.pages[1].markdown == (
        "## Costs\n\n"
        "Costs fell because the warehouse was sold.\n\n"
        "### Staff\n\n"
        "The company employs forty engineers."
    )
    assert not document.used_outline


def test_convert_outline_gives_headings_and_levels() -> None:
    document = pages_from_pdf(make_pdf(REPORT, outline=True))

    assert document.used_outline
    headings = [
        line for page in document.pages for line in page.markdown.splitlines() if line[:1] == "#"
    ]
    assert headings == ["# Annual Report", "## Revenue", "## Costs", "### Staff"]


def test_convert_title_from_metadata_then_first_heading_then_fallback() -> None:
    assert pages_from_pdf(make_pdf(REPORT, title="FY 2025")).title == "FY 2025"
    assert pages_from_pdf(make_pdf(REPORT)).title == "Annual Report"
    plain = make_pdf([[("body", "Just one line of text here.")]])
    assert pages_from_pdf(plain, fallback_title="notes").title == "notes"


def test_convert_joins_hyphenated_line_breaks_and_paragraph_lines() -> None:
    pdf = make_pdf(
        [
            [
                ("body", "The committee approved the recon-"),
                ("body", "struction of the bridge"),
                ("body", "after a long debate."),
            ]
        ]
    )

    markdown = pages_from_pdf(pdf).pages[0].markdown

    assert (
        markdown == "The committee approved the reconstruction of the bridge after a long debate."
    )


def test_convert_reports_progress_per_page() -> None:
    seen: list[tuple[int, int]] = []

    pages_from_pdf(make_pdf(REPORT), on_page=lambda done, total: seen.append((done, total)))

    assert seen == [(1, 2), (2, 2)]


def test_convert_escapes_text_that_would_read_as_markdown_heading() -> None:
    pdf = make_pdf([[("body", "# not a heading, a hash sign in the text")]])

    assert pages_from_pdf(pdf).pages[0].markdown == "\\# not a heading, a hash sign in the text"
