"""The tables on a page: a cheap gate first (three text lines that end in two numbers, a grid
of rules, or the converter's sight of columns), then ruled tables from the grids and
whitespace-aligned tables from the words left."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pypdfium2 as pdfium

from docchat.ingest.convert.glyphs import Glyphs
from docchat.ingest.convert.tables.aligned import whitespace_tables
from docchat.ingest.convert.tables.cells import Table, has_numeric_column
from docchat.ingest.convert.tables.ruled import ruled_table
from docchat.ingest.convert.tables.rules import grids, page_rules
from docchat.ingest.convert.tables.words import Word, page_words, text_frame

_RULE_PROBE_PAGES = 10  # pages whose rules are scanned before a document without tables is not
_TABULAR_ROWS = 3
_NUM = (
    r"(?:\(?[-\u2212\u2013]?[$€£¥]?\s?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?\)?"
    r"|\(?[-\u2212\u2013]?[$€£¥]?\d+(?:[.,]\d+)?%?\)?|[-\u2013\u2014]{1,2})"
)
_ROW_END = frozenset("0123456789)%-\u2013\u2014")
# A line that ends with two numbers (or dashes) set apart: a table row as PDFium reads it.
_TAIL = re.compile(rf"(?:^|[ \t]){_NUM}[ \t]+{_NUM}[ \t]*$")


@dataclass
class RuleProbe:
    """Whether to scan a page's drawing for rules (two C calls per page object, every page):
    a document whose first pages hold no ruled table is not scanned further, except on pages
    whose text or columns already look like a table."""

    pages: int = 0
    found: bool = False

    def wanted(self) -> bool:
        """Whether the next page's rules are worth scanning for their own sake."""
        return self.found or self.pages < _RULE_PROBE_PAGES

    def record(self, *, found: bool) -> None:
        """Count a scanned page, and whether a ruled table was found on it."""
        self.pages += 1
        self.found = self.found or found


def looks_tabular(text: str) -> bool:
    """Three lines of the page text that end with two numbers or dashes (only lines ending in
    a digit, a parenthesis, a percent sign or a dash go to the pattern): a page of prose costs
    next to nothing."""
    found = 0
    for line in text.splitlines():
        line = line.rstrip()
        if line and line[-1] in _ROW_END and _TAIL.search(line, max(0, len(line) - 48)):
            found += 1
            if found >= _TABULAR_ROWS:
                return True
    return False


def find_tables(
    page: pdfium.PdfPage,
    textpage: pdfium.PdfTextPage,
    glyphs: Glyphs,
    text: str,
    *,
    columns: bool,
    probe: RuleProbe,
) -> list[Table]:
    """The page's tables, top to bottom. `text` has one character per PDFium glyph; `columns`
    is the converter's sight of columns on the page (a table without rules or numbers);
    `probe` decides whether a page that does not look tabular has its rules scanned."""
    numbers = looks_tabular(text)
    if not (numbers or columns or probe.wanted()):
        return []
    rules = page_rules(page)
    found = grids(rules)
    drawn = any(grid.table_like for grid in found)
    if not (numbers or columns or drawn):
        probe.record(found=False)
        return []
    frame = text_frame(textpage, text, page)
    if frame.turns:
        rules = rules.turned(frame)
        found = grids(rules)
    words = page_words(glyphs, text, frame)
    ruled = [t for grid in found if (t := ruled_table(grid, words)) is not None]
    probe.record(found=bool(ruled))
    width = frame.height if frame.turns % 2 else frame.width
    aligned = whitespace_tables(_outside(words, ruled), rules.across, width)
    if not (numbers or drawn):
        # Looked at for its columns alone: columns of prose or an index read across pass
        # for tables of words too often; a table of numbers does not.
        aligned = [table for table in aligned if has_numeric_column(table)]
    tables = ruled + aligned
    tables.sort(key=lambda t: -t.bbox[3])
    for table in tables:
        table.size = _type_size(table, words)
        if frame.turns:
            table.bbox = frame.box(table.bbox, back=True)
    return tables


def _type_size(table: Table, words: list[Word]) -> float:
    """The median type size of the table's words."""
    taken = {i for start, end in table.chars for i in range(start, end)}
    sizes = sorted(w.size for w in words if w.start in taken)
    return round(sizes[len(sizes) // 2], 1) if sizes else 0.0


def _outside(words: list[Word], tables: list[Table]) -> list[Word]:
    """The words in none of the tables, nor inside one's box."""
    taken = {i for table in tables for start, end in table.chars for i in range(start, end)}
    return [
        w
        for w in words
        if w.start not in taken
        and not any(
            t.bbox[0] - 1 <= w.xc <= t.bbox[2] + 1 and t.bbox[1] - 1 <= w.yc <= t.bbox[3] + 1
            for t in tables
        )
    ]
