"""Titles that name a filing: company, form or report, and period.

An SEC filing's first page is a cover that every filing of its kind shares ("UNITED STATES
SECURITIES AND EXCHANGE COMMISSION", "ANNUAL REPORT PURSUANT TO SECTION 13 ..."), so the
converter's title, the first heading that names the document, is often "FORM 10-K" or "TABLE OF
CONTENTS", and two companies' reports read alike. The cover says what the filing is: the
registrant's name above "(Exact name of registrant as specified in its charter)", the form
("FORM 10-K"), and the period ("For the fiscal year ended December 31, 2019"). An earnings
release says it in its headline ("Boeing Reports Fourth-Quarter Results") after "FOR IMMEDIATE
RELEASE", with its date in the dateline, where it also names the company with its listing
("PepsiCo, Inc. (NASDAQ: PEP) today reported").

A filing's cover lists its trading symbols ("Common Stock, Par Value $1.00 JNJ New York Stock
Exchange"), and the title keeps the first, the common stock's: "JOHNSON & JOHNSON (JNJ) Form
10-K, fiscal year ended January 1, 2023"; so does a release's, from its dateline. An 8-K has
no period; its title keeps its date of report. Older covers print the name under the commission
file number with no "(Exact name of registrant ...)" below it: the name is then that line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

from docchat.models import Page

# The form as a cover prints it: "FORM 10-K", or "Form 10-K" (Corning's, American Express's).
_FORM = re.compile(
    r"\b(?:FORM|Form)\s+(10-K(?:/A)?|10-Q(?:/A)?|8-K(?:/A)?|20-F|40-F|6-K|11-K|S-1|S-4|DEF\s+14A)\b"
)
_REGISTRANT = re.compile(
    r"\(\s*exact name of (?:the )?registrant as specified in (?:its )?charter", re.I
)
# The period a filing covers; its words may break across lines (General Mills' "FOR\nTHE FISCAL
# YEAR ENDED MAY 29, 2022") and the form's check box come between them and the day ("ENDED\n☐\n
# May 26, 2019").
_PERIOD = re.compile(
    r"\bfor\s+the\s+(fiscal\s+year|quarterly\s+period|year|quarter|transition\s+period)\s+"
    r"ended[\s:\u2610\u2611\u2612]*"
    r"([A-Z][a-z]+\.?\s+\d{1,2}\s*,?\s+\d{4})",
    re.I,
)
_REPORTED = re.compile(
    r"\bdate of report\b[^:\n]{0,40}:?\s*([A-Z][a-z]+\.?\s+\d{1,2},?\s+\d{4})", re.I
)
# A trading symbol before the exchange it is listed on, in a cover's table of securities.
_SYMBOL = re.compile(
    r"(?:^|[\s|])([A-Z][A-Z0-9]{0,4}(?:\.[A-Z])?)[\s|]+(?:The\s+)?(?:New York Stock Exchange|"
    r"NYSE|Nasdaq|NASDAQ|Chicago Stock Exchange|Toronto Stock Exchange)"
)
# The securities table's column label, after which a cover may print the symbols on its line:
# "Trading Symbol(s) GLW" (Corning's), "Trading Symbol(s) GIS GIS20A GIS27" (General Mills').
_LABEL = re.compile(r"trading symbols?(?:\(s\))?\s*:?", re.I)
# A symbol ending the label's line after its class's title: "Trading Symbol(s) Common Stock,
# $0.01 Par Value MGM" (MGM Resorts'), two letters at least ("Class A" is not a symbol).
_TITLED = re.compile(r"\s([A-Z][A-Z0-9]{1,4}(?:\.[A-Z])?)$")
# What ends such a line without being a symbol: an exchange, or no securities at all.
_NOT_SYMBOLS = frozenset(("NYSE", "NASDAQ", "NONE", "TSX", "ASX", "LSE"))
# A line of the symbols column alone, common stock's first: "JNJ JNJ24C JNJ24BP JNJ28",
# "PEP PEP24 PEP26 PEP28a" (the notes' symbols after it).
_SYMBOLS_LINE = re.compile(r"[A-Z][A-Z0-9]{0,4}(?:\.[A-Z])?(?:\s+[A-Z][A-Z0-9.]{1,8}[a-z]?)*")
# "Ulta Beauty, Inc. (NASDAQ: ULTA)": a company named with its listing.
_LISTED = re.compile(
    r"\(\s*(?:NYSE|NASDAQ|Nasdaq|NYSE American|NYSE MKT|TSX|ASX|LSE|OTC\w*)\s*:\s*"
    r"([A-Z][A-Z0-9]{0,4}(?:\.[A-Z])?)\s*\)"
)
# What ends a company's name read backwards from its listing: a dash or a bracket.
_STOP_NAME = re.compile(r"[()\u2013\u2014]|--")
_RESULTS_FOR = re.compile(r"\bresults for (?:the )?([\w\s,\ufffe-]{3,60}?)(?:[.;\u201c\"]|$)")
# The commission file number ending its line, as it does above the registrant's name (it may
# follow the transition-period line's words: Microsoft's 10-K for 2023).
_FILE_NUMBER = re.compile(r"(?:^|\s)commission file (?:no\.?|number)\s*:?\s*[\d-]+$", re.I)
_RELEASE = re.compile(r"\b(for immediate release|press release|news release)\b", re.I)
_HEADLINE = re.compile(
    r"\b(reports?|announces?|posts?|delivers?)\b.{0,80}\b(results|earnings|revenue|sales)\b", re.I
)
_DATE = re.compile(
    r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2},\s+(\d{4})\b"
)
# What a cover sets just before the registrant's name, which the converter may join to it.
_BEFORE_NAME = re.compile(r"^.*\bcommission file (?:no\.?|number)\s*:?\s*[\d-]+\s*", re.I)
# A rule drawn with underscores, which the text layer may join to the words beside it.
_RULE = re.compile(r"_{3,}")
_MARKUP = re.compile(r"^\s*(#+\s+|[-*•]\s+|\|)")
# A table's rule row ("| --- | --- |"), between a row and its header.
_TABLE_RULE = re.compile(r"^[-|:\s]+$")
_COVER_PAGES = 2
_MAX_NAME = 100  # characters


def filing_title(pages: Sequence[Page]) -> str | None:
    """ "<company> Form 10-K, fiscal year ended December 31, 2019" for a filing, the headline
    and date of an earnings release, or None when the first pages are neither."""
    # Words one space apart (covers set them with no-break spaces); a text layer's U+FFFE is
    # the hyphen it broke a word at.
    lines = [
        " ".join(_MARKUP.sub("", _RULE.sub(" ", line)).replace("\ufffe", "-").split())
        for page in pages[:_COVER_PAGES]
        for line in page.markdown.splitlines()
    ]
    lines = [line for line in lines if line and not _TABLE_RULE.match(line)]
    return _filing(lines) or _release(lines)


def _filing(lines: list[str]) -> str | None:
    company = _registrant(lines)
    text = "\n".join(lines)
    form = _FORM.search(text)
    if company is None or form is None:
        return None
    symbol = _symbol(lines)
    listed = f" ({symbol})" if symbol else ""
    title = f"{company}{listed} Form {' '.join(form.group(1).split())}"
    period = _PERIOD.search(text)
    reported = _REPORTED.search(text)
    if period:
        ended = " ".join(period.group(2).split()).replace(" ,", ",")
        title += f", {' '.join(period.group(1).lower().split())} ended {ended}"
    elif reported:
        title += f", dated {' '.join(reported.group(1).split())}"
    return title


def _registrant(lines: list[str]) -> str | None:
    """The line just above "(Exact name of registrant ...)": the company's name as printed;
    else the line under the commission file number, when it is written in capitals."""
    for n, line in enumerate(lines):
        found = _REGISTRANT.search(line)
        if not found:
            continue
        before = _cells(line[: found.start()]) or _cells(lines[n - 1] if n else "")
        name = _BEFORE_NAME.sub("", before).strip().rstrip(",")
        if 0 < len(name) <= _MAX_NAME:
            return name
    for line, after in pairwise(lines):
        name = _cells(after)
        if _FILE_NUMBER.search(line) and name.isupper() and len(name) <= _MAX_NAME:
            return name
    return None


def _cells(line: str) -> str:
    """A line's text, a table row's as its cells' text (an HTML cover sets the name in a
    table: "|  |  | THE BOEING COMPANY |  |")."""
    return " ".join(cell.strip() for cell in line.split("|") if cell.strip())


def _symbol(lines: list[str]) -> str | None:
    """The first trading symbol of the cover's securities, listed after "Trading Symbol" (in
    its column, or after the label on its line), or in the row above labels printed under
    their columns (Nike's "Class B Common Stock NKE New York Stock Exchange", then "(Title of
    each class) (Trading symbol) ...")."""
    for n, line in enumerate(lines):
        if "trading symbol" in line.casefold():
            after = _LABEL.split(line, maxsplit=1)[-1].strip()
            if after and _symbols_line(after):
                return after.split()[0]
            above = (
                _SYMBOL.search(lines[n - 1]) if n and "(trading symbol" in line.casefold() else None
            )
            if above:
                return above.group(1)
            for row in lines[n : n + 8]:
                found = _SYMBOL.search(row)
                if found:
                    return found.group(1)
                if _symbols_line(row):
                    return row.split()[0]
            titled = _TITLED.search(after)
            return titled.group(1) if titled and titled.group(1) not in _NOT_SYMBOLS else None
    return None


def _symbols_line(row: str) -> bool:
    """Whether `row` is the symbols column alone: the common stock's ("JPM"), then its notes'
    made from it ("PEP PEP24 PEP26"; "BRK.A BRK.B"), not a heading in capitals ("TABLE OF
    CONTENTS")."""
    first, *rest = row.split() or [""]
    return (
        _SYMBOLS_LINE.fullmatch(row) is not None
        and first not in _NOT_SYMBOLS
        and all(s[:2] == first[:2] for s in rest)
    )


def _release(lines: list[str]) -> str | None:
    """An earnings release's headline, dated; led by the company and its symbol when the
    dateline lists them. A release says it is one, lists the company, or opens with it."""
    head = lines[:40]
    # A headline may run over two lines ("Ulta Beauty Announces Fourth Quarter" / "Fiscal 2022
    # Results").
    at, headline = next(
        (
            (n, text)
            for joined in (1, 2)
            for n in range(len(head))
            if _HEADLINE.search(text := " ".join(head[n : n + joined]))
        ),
        (len(head), None),
    )
    listed = next((found for line in head if (found := _listed(line))), None)
    marked = any(_RELEASE.search(line) for line in head)
    if listed and (headline is None or (listed[2] and at > 3)):
        # No headline above it: the dateline says what it reports ("today announced results
        # for second-quarter 2023").
        headline = listed[2] or None
    if headline is None or len(headline) > 2 * _MAX_NAME:
        return None
    if not (marked or listed or at < 3):
        return None
    title = f"{listed[0]} ({listed[1]}): {headline}" if listed else headline
    if re.search(r"\b(19|20)\d\d\b", headline):
        return title
    dated = next((m for line in head if (m := _DATE.search(line))), None)
    return f"{title} ({dated.group(0)})" if dated else title


def _listed(line: str) -> tuple[str, str, str] | None:
    """The company and symbol of "Las Vegas, Nevada, February 8, 2023 - MGM Resorts
    International (NYSE: MGM) today reported": the
    capitalised words just before the listing; and what it announces results for, if it
    says ("results for second-quarter 2023")."""
    found = _LISTED.search(line)
    if found is None:
        return None
    name: list[str] = []
    for word in reversed(line[: found.start()].split()):
        if _STOP_NAME.search(word) or not (word[0].isupper() or word == "&"):
            break
        name.insert(0, word)
    company = " ".join(name).rstrip(",")
    reports = _RESULTS_FOR.search(line, found.end())
    what = f"results for {reports.group(1)}" if reports else ""
    return (company, found.group(1), what) if 0 < len(company) <= _MAX_NAME else None
