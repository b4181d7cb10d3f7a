"""Segments: the parts of a company its filings report on one by one ("Walmart U.S.", "Sam's
Club U.S.", "Innovative Medicine"), as headings and sentences name them, so that a question
naming none is answered from the whole company's passages and rows first, and one naming a
segment from that segment's (issue 42).

Written for the segment tables and headings of 10-Ks and checked on real converted pages of
Walmart (fiscal 2025), Johnson & Johnson (2024), PepsiCo, 3M and Pfizer in
tests/unit/test_segment_quotes.py. Not seen: segments named by acronyms alone (Boeing's BCA,
BGS), group rows inside one table (Meta's "Family of Apps:"), and tables under no heading
(Nike's regions in EDGAR's HTML)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from docchat.models import Passage
from docchat.search.terms import terms
from docchat.search.titles import company_name

# A segment's name as filings print it: capitalised words before "segment" ("Sam's Club U.S.
# Segment", "the MedTech segment", "Financing segment receivables"); some call them divisions
# (PepsiCo: "Net revenue and operating profit/(loss) of each division", "Total division").
_SEGMENT_NAME = re.compile(r"((?:[A-Z][\w&'\u2019.-]*\s+){1,4})(?:[Ss]egment|[Dd]ivision)s?\b")
_SEGMENT = re.compile(r"\b(?:segment|division)s?\b", re.IGNORECASE)
# Capitalised words before "segment" that name none ("Summary of Business Segment Data",
# "Revenue by Reportable Segments", "The Walmart U.S. segment").
_NO_SEGMENT = terms("business reportable operating each total other all our")


def says_segment(text: str) -> bool:
    """Whether `text` speaks of segments ("segment", "Segments", "divisions")."""
    return _SEGMENT.search(text) is not None


def segment_named(text: str, *, title: str) -> set[str]:
    """The terms of the segment `text` names ("Walmart U.S. Segment": "u"), the words naming
    the company of the document `title` names and words that name no segment ("Business
    Segment Data") aside."""
    found: set[str] = set()
    for match in _SEGMENT_NAME.finditer(text):
        found |= terms(match.group(1))
    return found - _NO_SEGMENT - terms(company_name(title))


def segment_scope(name: set[str], question: str) -> int:
    """For a segment's text (`name`: the terms of its name, or none when it goes unnamed),
    whether `question` names that segment (1), or not (-1); 0 when the question asks about
    segments without naming this one. The question names a segment by more than half of its
    name's words ("Sam's Club" names "Sam's Club U.S."; "Walmart U.S." does not)."""
    if name and 2 * len(name & terms(question)) > len(name):
        return 1
    return 0 if says_segment(question) else -1


def whole_first(query: str, passages: Sequence[Passage]) -> list[Passage]:
    """`passages`, those headed by the segment `query` names first and those headed by another
    segment last ("Walmart U.S. Segment" for Walmart's operating income), each part in its
    order."""

    def scope(passage: Passage) -> int:
        chunk = passage.chunk
        name = segment_named(" ".join(chunk.headings), title=chunk.title)
        return segment_scope(name, query) if name else 0

    return sorted(passages, key=lambda p: -scope(p))
