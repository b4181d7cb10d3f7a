"""Titles that name a filing: company, form or report, and period.

An SEC filing's first page is a cover that every filing of its kind shares ("UNITED STATES
SECURITIES AND EXCHANGE COMMISSION", "ANNUAL REPORT PURSUANT TO SECTION 13 ..."), so the
converter's title, the first heading that names the document, is often "FORM 10-K" or "TABLE OF
CONTENTS", and two companies' reports read alike. The cover says what the filing is: the
registrant's name above "(Exact name of registrant as specified in its charter)", the form
("FORM 10-K"), and the period ("For the fiscal year ended December 31, 2019"). An earnings
release says it in its headline ("Boeing Reports Fourth-Quarter Results") after "FOR IMMEDIATE
RELEASE", with its date in the dateline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from docchat.models import Page

_FORM = re.compile(
    r"\bFORM\s+(10-K(?:/A)?|10-Q(?:/A)?|8-K(?:/A)?|20-F|40-F|6-K|11-K|S-1|S-4|DEF\s+14A)\b"
)
_REGISTRANT = re.compile(
    r"\(\s*exact name of (?:the )?registrant as specified in its charter", re.I
)
_PERIOD = re.compile(
    r"\bfor the (fiscal year|quarterly period|year|quarter|transition period) ended\s*:?\s*"
    r"([A-Z][a-z]+\.?\s+\d{1,2},?\s+\d{4})",
    re.I,
)
_RELEASE = re.compile(r"\b(for immediate release|press release|news release)\b", re.I)
_HEADLINE = re.compile(
    r"\b(reports?|announces?|posts?|delivers?)\b.{0,80}\b(results|earnings|revenue|sales)\b", re.I
)
_DATE = re.compile(
    r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2},\s+(\d{4})\b"
)
# What a cover sets just before the registrant's name, which the converter may join to it.
_BEFORE_NAME = re.compile(r"^.*\bcommission file (?:no\.?|number)\s*:?\s*[\d-]+\s*", re.I)
_MARKUP = re.compile(r"^\s*(#+\s+|[-*•]\s+|\|)")
_COVER_PAGES = 2
_MAX_NAME = 100  # characters


def filing_title(pages: Sequence[Page]) -> str | None:
    """ "<company> Form 10-K, fiscal year ended December 31, 2019" for a filing, the headline
    and date of an earnings release, or None when the first pages are neither."""
    lines = [
        _MARKUP.sub("", line).strip()
        for page in pages[:_COVER_PAGES]
        for line in page.markdown.splitlines()
    ]
    lines = [line for line in lines if line]
    return _filing(lines) or _release(lines)


def _filing(lines: list[str]) -> str | None:
    company = _registrant(lines)
    text = "\n".join(lines)
    form = _FORM.search(text)
    if company is None or form is None:
        return None
    title = f"{company} Form {' '.join(form.group(1).split())}"
    period = _PERIOD.search(text)
    if period:
        title += f", {period.group(1).lower()} ended {' '.join(period.group(2).split())}"
    return title


def _registrant(lines: list[str]) -> str | None:
    """The line just above "(Exact name of registrant ...)": the company's name as printed."""
    for n, line in enumerate(lines):
        found = _REGISTRANT.search(line)
        if not found:
            continue
        before = line[: found.start()].strip() or (lines[n - 1] if n else "")
        name = _BEFORE_NAME.sub("", before).strip()
        if 0 < len(name) <= _MAX_NAME:
            return name
    return None


def _release(lines: list[str]) -> str | None:
    head = lines[:40]
    if not any(_RELEASE.search(line) for line in head):
        return None
    headline = next((line for line in head if _HEADLINE.search(line)), None)
    if headline is None or len(headline) > 2 * _MAX_NAME:
        return None
    if re.search(r"\b(19|20)\d\d\b", headline):
        return headline
    dated = next((m for line in head if (m := _DATE.search(line))), None)
    return f"{headline} ({dated.group(0)})" if dated else headline
