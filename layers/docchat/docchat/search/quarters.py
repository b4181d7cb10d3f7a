"""Which fiscal quarter a question asks about, and which one a quarterly report covers.

A question names a quarter as filings and analysts write it: "Q2 of FY2024", "Q2 2023",
"2Q24", "FY2023 Q1", "the second quarter of fiscal 2024", "first-quarter 2023", "fiscal 2024
second quarter". A 10-Q's title (docchat.ingest.filings) gives the day its quarter ended
("quarterly period ended July 29, 2023"); which quarter of which fiscal year that is depends on
the company's own calendar, which its annual report's title gives ("fiscal year ended January
28, 2023": Best Buy's fiscal year ends in January, so a quarter ended in July is the second of
fiscal 2024). A fiscal year is named for the calendar year it ends in; a period that ends in a
month's first week ends the month before (52/53-week years: "July 2, 2023" ends June's
quarter, "January 1, 2023" December's year). Without an annual report on the shelf, the fiscal
year is taken to end in December, as most companies' does. A release's headline names its
quarter in words ("Pfizer Reports Second-Quarter 2023 Results").

Written for filings' titles and questions as FinanceBench writes them, and checked on the
hand-typed shelves of two or more companies in tests/unit/test_quarters.py (calendar-year,
January, June and 52/53-week fiscal years)."""

from __future__ import annotations

import re

_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
# "second quarter", "second-quarter", and "secondquarter": a release's hyphen at a line's end is
# dropped when the converter joins the word it broke (Johnson & Johnson's headlines).
_ORDINAL = r"(first|second|third|fourth)[ -]?quarter"
_FISCAL = r"(?:fiscal(?:\s+year)?|FY)"
# "Q2 of FY2024", "Q2 FY2024", "Q2 2023", "Q2'23", "2Q24", "Q2 fiscal 2024"
_NUMBERED = re.compile(
    rf"(?<![A-Za-z0-9])(?:Q([1-4])|([1-4])Q)\s*(?:of\s+)?(?:{_FISCAL}\s*)?'?((?:19|20)?\d\d)(?!\d)",
    re.IGNORECASE,
)
# "FY2024 Q2", "FY2023Q1"
_FISCAL_FIRST = re.compile(
    rf"(?<![A-Za-z0-9]){_FISCAL}\s*'?((?:19|20)?\d\d)\s*Q([1-4])(?![A-Za-z0-9])", re.IGNORECASE
)
# "the second quarter of fiscal 2024", "first-quarter 2023", "Second Quarter Fiscal 2024",
# "fourth quarter and full year 2022"
_WORDS = re.compile(
    rf"\b{_ORDINAL}\s+(?:and\s+(?:the\s+)?full[ -]year\s+)?(?:of\s+)?(?:the\s+)?"
    rf"(?:{_FISCAL}\s*)?((?:19|20)\d\d)\b",
    re.IGNORECASE,
)
# "fiscal 2024 second quarter"
_WORDS_AFTER = re.compile(rf"\b{_FISCAL}\s*((?:19|20)\d\d)\s+{_ORDINAL}\b", re.IGNORECASE)

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DATE = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? (\d{1,2}),? ((?:19|20)\d\d)"
# "quarterly period ended July 29, 2023"; IBM's cover says "quarter ended JUNE 30, 2025".
_QUARTER_ENDED = re.compile(rf"\b(?:quarterly period|quarter) ended {_DATE}\b", re.IGNORECASE)
_YEAR_ENDED = re.compile(rf"\b(?:fiscal )?year ended {_DATE}\b", re.IGNORECASE)

Quarter = tuple[int, int]  # (quarter 1-4, fiscal year)


def quarters_asked(text: str) -> set[Quarter]:
    """The fiscal quarters `text` names, as (quarter, fiscal year)."""
    found: set[Quarter] = set()
    for first, second, year in _NUMBERED.findall(text):
        found.add((int(first or second), _year(year)))
    for year, quarter in _FISCAL_FIRST.findall(text):
        found.add((int(quarter), _year(year)))
    for ordinal, year in _WORDS.findall(text):
        found.add((_ORDINALS[ordinal.casefold()], int(year)))
    for year, ordinal in _WORDS_AFTER.findall(text):
        found.add((_ORDINALS[ordinal.casefold()], int(year)))
    return found


def without_quarters(text: str) -> str:
    """`text` without the quarters it names ("revenue in the second quarter of fiscal 2024":
    "revenue in the"), for a search inside reports that cover the quarter asked: their tables
    print it as dates ("Three Months Ended July 29, 2023"), and the quarter's words would rank
    the prose repeating them over the statement printing the figure."""
    for pattern in (_NUMBERED, _FISCAL_FIRST, _WORDS, _WORDS_AFTER):
        text = pattern.sub(" ", text)
    return " ".join(text.split())


def year_end_month(title: str) -> int | None:
    """The month a company's fiscal year ends in, from its annual report's title ("fiscal
    year ended January 28, 2023": 1); None when the title gives no fiscal year's end."""
    found = _YEAR_ENDED.search(title)
    return None if found is None else _month_ended(*found.groups())


def quarter_of(title: str, year_ends: int | None = None) -> Quarter | None:
    """The fiscal quarter a report covers, as (quarter, fiscal year): a 10-Q's from the day
    its quarter ended and the month the company's fiscal year ends in (`year_ends`, December
    when unknown); a release's from its headline's words. None for any other title."""
    found = _QUARTER_ENDED.search(title)
    if found is None:
        named = quarters_asked(title)
        return next(iter(named)) if len(named) == 1 else None
    month, day, year = found.groups()
    ended = _month_ended(month, day, year)
    calendar_year = int(year) - (
        1 if ended == 12 and _MONTHS.index(month[:3].casefold()) == 0 else 0
    )
    last = year_ends or 12
    after = (ended - last) % 12
    quarter = 4 if after == 0 else max(1, round(after / 3))
    return quarter, calendar_year if ended <= last else calendar_year + 1


def _month_ended(month: str, day: str, year: str) -> int:
    """The month a period ended on this day closes: the month before for a month's first
    week (a 52/53-week year's "July 2, 2023" closes June)."""
    number = _MONTHS.index(month[:3].casefold()) + 1
    if int(day) <= 7:
        number = 12 if number == 1 else number - 1
    return number


def _year(text: str) -> int:
    return int(text) if len(text) == 4 else 2000 + int(text)
