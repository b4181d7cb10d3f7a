"""A filing in EDGAR's own format, inline XBRL HTML, is read as its PDF is (issue 42): its
hidden XBRL header is no text, and its cover titles it. The two covers are typed from real
filings' HTML (Apple's 10-K for fiscal 2024, whose header hides 'false 2024 FY 0000320193
P1Y ...' before the cover; Boeing's 10-Q for June 30, 2025, which sets its name in a table),
cut to what the cover needs and through `convert_document`, as ingestion converts a file."""

from __future__ import annotations

import pytest

from docchat.config import Settings
from docchat.ingest.stages import convert_document

_HIDDEN = (
    '<div style="display:none;"><ix:header><ix:hidden>'
    '<ix:nonNumeric name="dei:AmendmentFlag" contextRef="c1">false</ix:nonNumeric>'
    '<ix:nonNumeric name="dei:DocumentFiscalYearFocus" contextRef="c1">2024</ix:nonNumeric>'
    '<ix:nonNumeric name="dei:DocumentFiscalPeriodFocus" contextRef="c1">FY</ix:nonNumeric>'
    "</ix:hidden><ix:resources><xbrli:context id='c1'><xbrli:entity>"
    "<xbrli:identifier scheme='http://www.sec.gov/CIK'>0000320193</xbrli:identifier>"
    "</xbrli:entity><xbrli:period><xbrli:startDate>2023-10-01</xbrli:startDate>"
    "<xbrli:endDate>2024-09-28</xbrli:endDate></xbrli:period></xbrli:context>"
    "</ix:resources></ix:header></div>"
)


def _filing(cover: str) -> bytes:
    return (
        "<?xml version='1.0' encoding='UTF-8'?><html xmlns='http://www.w3.org/1999/xhtml' "
        "xmlns:ix='http://www.xbrl.org/2013/inlineXBRL'><head><title>x-20240928</title></head>"
        f"<body>{_HIDDEN}{cover}"
        "<p style='font-weight:bold'>PART I — Item 1. Business</p>"
        "<p>The Company designs, manufactures and markets smartphones.</p></body></html>"
    ).encode()


APPLE = (
    "<div><p>UNITED STATES</p><p>SECURITIES AND EXCHANGE COMMISSION</p>"
    "<p>Washington, D.C. 20549</p><p>FORM</p><p>10-K</p><p>(Mark One)</p><p>☒</p>"
    "<p>ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934</p>"
    "<p>For the fiscal year ended</p><p><span>September 28</span></p><p>, 2024</p>"
    "<p>Commission File Number:</p><p>001-36743</p><p>Apple Inc.</p>"
    "<p>(Exact name of Registrant as specified in its charter)</p>"
    "<p>Securities registered pursuant to Section 12(b) of the Act:</p><table>"
    "<tr><td>Title of each class</td><td></td><td>Trading symbol(s)</td><td></td>"
    "<td>Name of each exchange on which registered</td></tr>"
    "<tr><td>Common Stock, $0.00001 par value per share</td><td></td><td>AAPL</td><td></td>"
    "<td>The Nasdaq Stock Market LLC</td></tr></table></div>"
)
# NVIDIA's 10-Q of July 27, 2025 tags the registrant's name apart from its last letters.
NVIDIA = (
    "<div><p>UNITED STATES</p><p>SECURITIES AND EXCHANGE COMMISSION</p><p>FORM 10-Q</p>"
    "<p>For the quarterly period ended July 27, 2025</p>"
    "<div><p>Commission File Number: <ix:nonNumeric name='dei:EntityFileNumber'>0-23985"
    "</ix:nonNumeric></p></div><div><span><ix:nonNumeric name='dei:EntityRegistrantName'>"
    "NVIDIA CORP</ix:nonNumeric>ORATION</span></div>"
    "<div><span>(Exact name of registrant as specified in its charter)</span></div></div>"
)
BOEING = (
    "<div><p>UNITED STATES</p><p>SECURITIES AND EXCHANGE COMMISSION</p>"
    "<p>Washington, D.C. 20549</p><p>FORM</p><p>10-Q</p>"
    "<p>For the quarterly period ended</p><p>June 30, 2025</p>"
    "<p>Commission file number</p><p>1-442</p>"
    "<table><tr><td></td><td></td><td>THE BOEING COMPANY</td><td></td></tr></table>"
    "<p>(Exact name of registrant as specified in its charter)</p><table>"
    "<tr><td>Title of each class</td><td></td><td>Trading Symbol(s)</td><td></td>"
    "<td>Name of each exchange on which registered</td></tr>"
    "<tr><td>Common Stock, $5 par value</td><td></td><td>BA</td><td></td>"
    "<td>New York Stock Exchange</td></tr></table></div>"
)


@pytest.mark.parametrize(
    ("cover", "title"),
    [
        (APPLE, "Apple Inc. (AAPL) Form 10-K, fiscal year ended September 28, 2024"),
        (BOEING, "THE BOEING COMPANY (BA) Form 10-Q, quarterly period ended June 30, 2025"),
        (NVIDIA, "NVIDIA CORPORATION Form 10-Q, quarterly period ended July 27, 2025"),
    ],
)
def test_an_html_filing_is_titled_by_its_cover_and_its_xbrl_header_is_no_text(
    cover: str, title: str
) -> None:
    converted = convert_document(
        _filing(cover), "x-20240928.htm", Settings(), fallback_title="x-20240928"
    )

    # Before, HTML never went through the cover's reading, and the header was page text
    assert converted.title == title
    first = converted.pages[0].markdown
    assert first.startswith("UNITED STATES"), first[:200]
    assert "0000320193" not in first and "2023-10-01" not in first


def test_an_inline_xbrl_fact_stays_in_its_sentence() -> None:
    # Inline XBRL wraps each fact in an ix: element; before, each was a block of its own and
    # split the sentence: "Revenue was $" / "46.7" / "billion, up 56%."
    sentence = (
        "<p>Revenue for the second quarter was $<ix:nonFraction name='us-gaap:Revenues' "
        "scale='9' decimals='-8'>46.7</ix:nonFraction> billion, up 56% from a year ago.</p>"
    )
    converted = convert_document(_filing(APPLE + sentence), "x.htm", Settings(), fallback_title="x")

    text = "\n".join(page.markdown for page in converted.pages)
    assert "Revenue for the second quarter was $46.7 billion, up 56% from a year ago." in text


def _cells(*cells: str) -> str:
    return "<tr>" + "".join(cells) + "</tr>"


def _span(text: str = "") -> str:
    return f'<td colspan="3"><span>{text}</span></td>' if text else '<td colspan="3"/>'


def _dollars(amount: str) -> str:
    return f"<td><span>$</span></td><td><span>{amount}&#160;</span></td><td/>"


def _loss(amount: str) -> str:
    return f"<td><span>$</span></td><td><span>({amount}</span></td><td><span>)</span></td>"


def test_a_filings_statement_table_reads_as_rows_of_amounts_under_their_years() -> None:
    # As Walmart's 10-K for fiscal 2025 sets its statements (EDGAR HTML): headings and plain
    # amounts span three cells, a "$" amount takes a cell for the sign, one for the amount and
    # an empty one, and empty three-cell spacers stand between the years. Before, a row read
    # "| Net sales |  |  |  | $ | 674,538 |  |  | ..." under years one column to its left.
    table = "<table>" + "".join(
        [
            _cells(_span("(Amounts in millions)"), _span(), _span("2025"), _span(), _span("2024")),
            _cells(_span("Net sales"), _span(), _dollars("674,538"), _span(), _dollars("642,637")),
            _cells(_span("Membership and other income"), _span(), _span("6,447"), _span(),
                   _span("5,488")),
            _cells(_span("Total revenues"), _span(), _span("680,985"), _span(), _span("648,125")),
            _cells(_span("Operating loss"), _span(), _loss("2,439"), _span(), _loss("2,243")),
        ]
    ) + "</table>"  # fmt: skip
    converted = convert_document(_filing(APPLE + table), "x.htm", Settings(), fallback_title="x")

    text = "\n".join(page.markdown for page in converted.pages)
    assert "| (Amounts in millions) | 2025 | 2024 |" in text
    assert "| Net sales | $ 674,538 | $ 642,637 |" in text
    assert "| Membership and other income | 6,447 | 5,488 |" in text
    assert "| Total revenues | 680,985 | 648,125 |" in text
    assert "| Operating loss | $ (2,439) | $ (2,243) |" in text


def test_a_statements_period_and_years_rows_both_head_its_columns() -> None:
    # As Walmart's 10-K for fiscal 2025 sets its segment table (EDGAR HTML, every cell a <td>):
    # the period spans the years, the years row follows, and a segment's name opens the body.
    # Before, the years row read as the first row of the body, under the period alone, so no
    # amount below it was under its year.
    table = "<table>" + "".join(
        [
            _cells(_span(), _span(), _span("Fiscal Years Ended January 31,")),
            _cells(_span("(Amounts in millions)"), _span(), _span("2025"), _span(), _span("2024")),
            _cells(_span("Walmart U.S.")),
            _cells(_span("Net sales"), _span(), _dollars("462,415"), _span(), _dollars("441,817")),
            _cells(_span("Total revenues"), _span(), _span("465,009"), _span(), _span("443,802")),
        ]
    ) + "</table>"  # fmt: skip
    converted = convert_document(_filing(APPLE + table), "x.htm", Settings(), fallback_title="x")

    lines = "\n".join(page.markdown for page in converted.pages).splitlines()
    years = lines.index("| (Amounts in millions) | 2025 | 2024 |")
    assert lines[years - 1].startswith("|  | Fiscal Years Ended January 31,")
    assert lines[years + 1].startswith("| --- |")
    assert lines[years + 2].startswith("| Walmart U.S. |")
