"""Titles that name a filing: a 10-K or 10-Q cover, an earnings release."""

from __future__ import annotations

import pytest

from docchat.ingest.filings import filing_title
from docchat.models import Page


def _pages(*texts: str) -> list[Page]:
    return [Page(number=n, markdown=t, chars=len(t)) for n, t in enumerate(texts, 1)]


COVER_10K = """UNITED STATES
SECURITIES AND EXCHANGE COMMISSION
Washington, D.C. 20549
# FORM 10-K
(Mark One)
☒ ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the fiscal year ended December 31, 2019
or
☐ TRANSITION REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the transition period from to .
Commission File No. 000-22513
AMAZON.COM, INC.
(Exact name of registrant as specified in its charter)
Delaware 91-1646860"""

COVER_10Q = """UNITED STATES SECURITIES AND EXCHANGE COMMISSION
FORM 10-Q
QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the quarterly period ended March 31, 2020
Amcor plc (Exact name of registrant as specified in its charter)
Jersey 98-1455367"""

RELEASE = """FOR IMMEDIATE RELEASE
## Boeing Reports Fourth-Quarter Results
CHICAGO, Jan. 29, 2020 /PRNewswire/ -- The Boeing Company reported fourth-quarter revenue of
$17.9 billion."""


def test_filings_a_10k_cover_names_company_form_and_year() -> None:
    title = filing_title(_pages(COVER_10K, "TABLE OF CONTENTS"))

    assert title == "AMAZON.COM, INC. Form 10-K, fiscal year ended December 31, 2019"


def test_filings_a_10q_cover_with_the_name_on_the_same_line() -> None:
    assert filing_title(_pages(COVER_10Q)) == (
        "Amcor plc Form 10-Q, quarterly period ended March 31, 2020"
    )


def test_filings_an_earnings_release_is_its_headline_and_date() -> None:
    assert filing_title(_pages(RELEASE)) == "Boeing Reports Fourth-Quarter Results (Jan. 29, 2020)"


def test_filings_other_documents_keep_their_own_title() -> None:
    prose = "# Instructions for Form 1040-NR\nFile Form 1040-NR if you were a nonresident alien."
    assert filing_title(_pages(prose)) is None
    assert filing_title(_pages("FORM 10-K\nTABLE OF CONTENTS")) is None  # no registrant named


def test_filings_a_converted_cover_page_titles_the_document() -> None:
    # Given a PDF whose first page is a 10-K cover and whose first heading is the bare form
    from docchat.config import Settings
    from docchat.ingest.stages import convert_pdf
    from tests.pdfgen import make_pdf

    cover = [("h1", "FORM 10-K")] + [("body", line) for line in COVER_10K.splitlines()[5:]]
    data = make_pdf([cover, [("h1", "TABLE OF CONTENTS"), ("body", "Part I. Item 1. Business")]])

    # When it is converted as ingestion converts it
    converted = convert_pdf(data, Settings.from_env({}), fallback_title="amzn-20191231")

    # Then its title names the company, the form and the period
    assert converted.title == "AMAZON.COM, INC. Form 10-K, fiscal year ended December 31, 2019"


# Covers as the converter writes them (abridged): Corning's 10-K for 2022 prints "Form 10-K"
# and its symbol after the column's label; Johnson & Johnson's and PepsiCo's print the symbols
# column on a line of its own, the notes' symbols after the common stock's, and PepsiCo's
# exchange column names "The Nasdaq Stock Market LLC".
COVER_CORNING = """UNITED STATES SECURITIES AND EXCHANGE COMMISSION WASHINGTON, D.C. 20549
Form 10-K
☒ ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the fiscal year ended December 31, 2022 OR
For the transition period from ___ to ___ Commission file number: 1-3247
CORNING INCORPORATED (Exact name of registrant as specified in its charter) New York 16-0393470
Title of each class Common Stock, $0.50 par value per share
Trading Symbol(s) GLW
Name of each exchange on which registered New York Stock Exchange (NYSE)"""

COVER_JNJ = """## UNITED STATES SECURITIES AND EXCHANGE COMMISSION Washington, D.C. 20549
## FORM 10-K
ANNUAL REPORT PURSUANT TO SECTION 13 OF THE SECURITIES EXCHANGE ACT OF 1934 For the fiscal year \
ended January 1, 2023 or Transition Report
# JOHNSON & JOHNSON
(Exact name of registrant as specified in its charter)
Title of each class Trading Symbol Name of each exchange on which registered Common Stock, Par \
Value $1.00 0.650% Notes Due May 2024 5.50% Notes Due November 2024
JNJ JNJ24C JNJ24BP JNJ28 JNJ35
New York Stock Exchange New York Stock Exchange New York Stock Exchange"""

COVER_PEPSICO = """UNITED STATES SECURITIES AND EXCHANGE COMMISSION WASHINGTON, D.C. 20549
# FORM 10-K
ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934 For the \
fiscal year ended December 31, 2022
OR TRANSITION REPORT For the transition period from to Commission file number 1-1183
PepsiCo, Inc.
(Exact Name of Registrant as Specified in its Charter)
Title of each class Trading Symbols Name of each exchange on which registered Common Stock, par \
value 1-2/3 cents per share 0.250% Senior Notes Due 2024 2.625% Senior Notes Due 2026
PEP PEP24 PEP26 PEP28a
The Nasdaq Stock Market LLC The Nasdaq Stock Market LLC The Nasdaq Stock Market LLC
Table of Contents
TABLE OF CONTENTS"""

# JPMorgan Chase's 10-Q: the common stock's symbol on a line alone, then each preferred
# series' ("JPM PR G") before its exchange. MGM Resorts' 10-K for 2022: the symbol ends the
# line of the column labels and the class, its exchange on the next line.
COVER_JPM = """UNITED STATES SECURITIES AND EXCHANGE COMMISSION Washington, D.C. 20549
FORM 10-Q
Quarterly report pursuant to Section 13 or 15(d) of the Securities Exchange Act of 1934
For the quarterly period ended March 31, 2021
Commission file number 1-5805
JPMorgan Chase & Co.
(Exact name of registrant as specified in its charter)
Registrant's telephone number, including area code: (212) 270-6000 Securities registered \
pursuant to Section 12(b) of the Act:
Title of each class
Common stock
Trading Symbol(s)
JPM
Name of each exchange on which registered The New York Stock Exchange Depositary Shares, each \
representing a one-four hundredth interest in a share of 6.10% \
JPM PR G The New York Stock Exchange"""

COVER_MGM = """UNITED STATES SECURITIES AND EXCHANGE COMMISSION Washington, D.C. 20549
FORM 10-K
For the fiscal year ended December 31, 2022 OR TRANSITION REPORT PURSUANT TO SECTION 13 OR \
15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the transition period from to Commission File No. 001-10362
MGM Resorts International
(Exact name of Registrant as specified in its charter)
Securities registered pursuant to Section 12(b) of the Act: Title of each class Trading \
Symbol(s) Common Stock, $0.01 Par Value MGM
Name of each exchange on which registered New York Stock Exchange (NYSE) Securities registered \
pursuant to Section 12(g) of the Act:
None"""

# Microsoft's 10-K for 2023: no "(Exact name of registrant ...)" line; the name follows the
# commission file number, which ends the transition period's line.
COVER_MSFT = """UNITED STATES SECURITIES AND EXCHANGE COMMISSION
FORM 10-K
ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the Fiscal Year Ended June 30, 2023
OR TRANSITION REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the Transition Period From to Commission File Number 001-37845
MICROSOFT CORPORATION
WASHINGTON (STATE OF INCORPORATION)
Securities registered pursuant to Section 12(b) of the Act:
Title of each class Common stock, $0.00000625 par value per share 3.125% Notes due 2028
None
Trading Symbol Name of exchange on which registered MSFT NASDAQ MSFT NASDAQ"""

# Nike's 10-K for 2023: the securities' row first, their column labels under it.
COVER_NKE = """FORM 10-K
FOR THE FISCAL YEAR ENDED MAY 31, 2023
Commission File No. 1-10635
NIKE, Inc.
(Exact name of Registrant as specified in its charter)
SECURITIES REGISTERED PURSUANT TO SECTION 12(B) OF THE ACT:
Class B Common Stock NKE New York Stock Exchange
(Title of each class) (Trading symbol) (Name of each exchange on which registered) SECURITIES \
REGISTERED PURSUANT TO SECTION 12(G) OF THE ACT:
NONE"""


@pytest.mark.parametrize(
    ("cover", "title"),
    [
        (COVER_NKE, "NIKE, Inc. (NKE) Form 10-K, fiscal year ended MAY 31, 2023"),
        (COVER_MSFT, "MICROSOFT CORPORATION (MSFT) Form 10-K, fiscal year ended June 30, 2023"),
        (
            COVER_JPM,
            "JPMorgan Chase & Co. (JPM) Form 10-Q, quarterly period ended March 31, 2021",
        ),
        (
            COVER_MGM,
            "MGM Resorts International (MGM) Form 10-K, fiscal year ended December 31, 2022",
        ),
        (
            COVER_CORNING,
            "CORNING INCORPORATED (GLW) Form 10-K, fiscal year ended December 31, 2022",
        ),
        (COVER_JNJ, "JOHNSON & JOHNSON (JNJ) Form 10-K, fiscal year ended January 1, 2023"),
        (COVER_PEPSICO, "PepsiCo, Inc. (PEP) Form 10-K, fiscal year ended December 31, 2022"),
    ],
)
def test_filings_a_cover_in_another_layout_names_its_form_symbol_and_period(
    cover: str, title: str
) -> None:
    # Of FinanceBench's 74 filings, Corning's three 10-Ks and American Express's were titled
    # "CORNING INCORPORATED", "Optical Communications Segment" or "American Express Company"
    # (no form, no year: "FY2022" could not find them); J&J's had no symbol and PepsiCo's three
    # were "(LLC)".
    assert filing_title(_pages(cover, "TABLE OF CONTENTS")) == title


def test_filings_symbols_printed_after_their_label_give_the_common_stocks() -> None:
    # General Mills' 10-K for 2019 prints its common stock's and its notes' symbols on the
    # label's line, and the form's check box between its period's words and day: it was titled
    # without a symbol or a period.
    cover = """FORM 10-K
ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934 FOR THE \
FISCAL YEAR ENDED
\u2610
May 26, 2019
Commission file number: 001-01185
GENERAL MILLS, INC. (Exact name of registrant as specified in its charter)
Securities registered pursuant to Section 12(b) of the Act:
Title of each class
Common Stock, $.10 par value 1.000% Notes due 2023 2.100% Notes due 2020 1.500% Notes due 2027
Trading Symbol(s) GIS GIS20A GIS20 GIS23A GIS27
Name of each exchange on which registered New York Stock Exchange New York Stock Exchange"""

    title = filing_title(_pages(cover))

    assert title == "GENERAL MILLS, INC. (GIS) Form 10-K, fiscal year ended May 26, 2019"


def test_filings_a_period_whose_words_break_across_lines_is_read() -> None:
    # General Mills' 10-K for 2022: "FOR" ends one line, "THE FISCAL YEAR ENDED" starts the next.
    cover = """FORM 10-K
ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934 FOR
THE FISCAL YEAR ENDED MAY 29, 2022
Commission file number: 001-01185 ________________
GENERAL MILLS, INC. (Exact name of registrant as specified in its charter)"""

    title = filing_title(_pages(cover))

    assert title == "GENERAL MILLS, INC. Form 10-K, fiscal year ended MAY 29, 2022"
