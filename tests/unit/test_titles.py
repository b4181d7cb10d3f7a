"""A document's title: its metadata title when that names it, else its first real heading,
else its file name (what conversion is given as the fallback)."""

from __future__ import annotations

import pytest

from docchat.ingest.convert.pdf import pages_from_pdf
from docchat.ingest.convert.titles import names_document
from tests.pdfgen import make_pdf

# The opening of a 10-K as EDGAR renders it: the agency, the form, then the company.
FILING = [
    [
        ("h1", "UNITED STATES SECURITIES AND EXCHANGE COMMISSION"),
        ("body", "Washington, D.C. 20549"),
        ("h1", "FORM 10-K"),
        ("h2", "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT"),
        ("h1", "Acme Widgets Corporation"),
        *[
            ("body", f"Acme Widgets makes widgets for the automotive industry ({n}).")
            for n in range(8)
        ],
    ],
]
REPORT = [[("h1", "Fleet Maintenance Handbook"), ("body", "Check the tyres every week.")]]


@pytest.mark.parametrize(
    "metadata",
    [
        "UNITED STATES SECURITIES AND EXCHANGE COMMISSION",
        "Form 10-K",
        "FORM 10-K",
        "Overview",
        "General",
        "Microsoft Word - draft3.docx",
        "Book1",
        "report.pdf",
    ],
)
def test_title_skips_shared_or_generic_metadata_for_first_real_heading(metadata: str) -> None:
    document = pages_from_pdf(make_pdf(FILING, title=metadata), fallback_title="acme-10k")

    assert document.title == "Acme Widgets Corporation"


@pytest.mark.parametrize(
    "metadata", ["2007 Instruction 1040-NR", "FY 2025", "Annual Report of Acme Widgets Corporation"]
)
def test_title_keeps_metadata_that_names_the_document(metadata: str) -> None:
    assert pages_from_pdf(make_pdf(REPORT, title=metadata)).title == metadata


def test_title_falls_back_to_file_name_when_no_heading_names_the_document() -> None:
    pages = [[("h1", "FORM 10-Q"), ("body", "Nothing here is a heading that names it.")]]

    document = pages_from_pdf(make_pdf(pages, title="Form 10-Q"), fallback_title="q3-filing")

    assert document.title == "q3-filing"


@pytest.mark.parametrize(
    ("title", "names"),
    [
        ("UNITED STATES SECURITIES AND EXCHANGE COMMISSION", False),
        ("DEPARTMENT OF THE TREASURY", False),
        ("Department of the Treasury Strategic Plan 2022-2026", True),
        ("Schedule 13D", False),
        ("Exhibit 99.1", False),
        ("Page 1", False),
        ("1.txt - Notepad", False),
        ("649283EN-USMG(C-04/2023)", False),
        ("abc", False),
        ("", False),
        ("The Digital Millennium Copyright Act of 1998", True),
        ("2007 Form 1040NR", True),
        # A broken text layer: letters mapped to signs, spaces to "#"
        ("Cl>opMa no KHA 1152017", False),
        ("Dragon Dispatch 1101#Strayer#Drive Suite 4", False),
        ("C++ Annotations", True),
        ("AT&T Annual Report 2019", True),
        ("Q&A on the 2024 budget", True),
    ],
)
def test_names_document(title: str, names: bool) -> None:
    assert names_document(title) is names


def test_title_read_from_a_broken_text_layer_falls_back_to_the_file_name() -> None:
    pages = [
        [("h1", "Cl>opMa no KHA 1152017"), ("body", "The rest of the page reads as it should.")]
    ]

    document = pages_from_pdf(make_pdf(pages), fallback_title="mill-report-2017")

    assert document.title == "mill-report-2017"
