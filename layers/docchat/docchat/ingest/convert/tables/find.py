"""The tables on a page: a cheap gate first (three text lines that end in two numbers, a grid
of rules, or the converter's sight of columns), then ruled tables from the grids and
whitespace-aligned tables from the words left."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pypdfium2 as pdfium

from docchat.ingest.convert.glyphs import Glyphs
from docchat.ingest.convert.page import Line
from docchat.ingest.convert.tables.aligned import whitespace_tables
from docchat.ingest.convert.tables.cells import Table, has_numeric_column
from docchat.ingest.convert.tables.ruled import header_above, ruled_table
from docchat.ingest.convert.tables.rules import grids, page_rules
from docchat.ingest.convert.tables.words import (
    PlacedWords,
    Word,
    is_number,
    page_words,
    text_frame,
)

_RULE_PROBE_PAGES = 10  # pages whose rules are scanned before a document without tables is not
_TABULAR_ROWS = 3
_OCR_NUMBERS = 6  # OCR lines ending in a number: fewer, and no table is looked for
_LINE_STEP = 3  # glyph indices an OCR line stands for: ranges one apart are merged
_NUM = (
    r"(?:\(?[-\u2212\u2013]?[$€£¥]?\s?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?\)?"
    r"|\(?[-\u2212\u2013]?[$€£¥]?\d+(?:[.,]\d+)?%?\)?|[-\u2013\u2014]{1,2})"
)
_ROW_MARKS = frozenset("0123456789)%-\u2013\u2014")  # what a table row's last cell ends with
_PAREN_AFTER = frozenset("0123456789%")  # what a closing parenthesis follows in a number
# A line that ends with two numbers (or dashes) set apart: a table row as PDFium reads it.
_TAIL = re.compile(rf"(?:^|[ \t]){_NUM}[ \t]+{_NUM}$", re.MULTILINE)
# A number set apart from the text before it (not a page number after an index entry's comma).
_LAST = re.compile(rf"(?<!,)[ \t]{_NUM}$")


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


def looks_tabular(text: str, *, numbers: int = 2) -> bool:
    """Three lines of the page text that end with `numbers` numbers or dashes set apart: only
    lines ending in a digit, a parenthesis, a percent sign or a dash go to the pattern, so a
    page of prose costs next to nothing."""
    tail = _TAIL if numbers == 2 else _LAST
    found = 0
    start = 0
    # A loop over the lines: a regex looking for the marks tries every digit and parenthesis
    # of the page (three times slower on the R manual).
    for line in text.split("\n"):
        end = start + len(line.removesuffix("\r").rstrip(" \t"))
        if (
            end > start
            and text[end - 1] in _ROW_MARKS
            and _may_end_number(text, start, end)
            and tail.search(text, max(start, end - 49), end)
        ):
            found += 1
            if found >= _TABULAR_ROWS:
                return True
        start += len(line) + 1
    return False


def _may_end_number(text: str, start: int, end: int) -> bool:
    """What `_NUM` needs at a line's end that is cheap to see: a parenthesis closes a number
    or a percentage ("(1,234)", not "f(x)"), and a space or tab sets the number apart."""
    if text[end - 1] == ")" and not (end - 2 >= start and text[end - 2] in _PAREN_AFTER):
        return False
    window = max(start, end - 49)
    return text.find(" ", window, end) >= 0 or text.find("\t", window, end) >= 0


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
    # Columns alone keep only tables with a column of numbers: lines must end in one.
    columns = columns and (numbers or looks_tabular(text, numbers=1))
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
    placed = PlacedWords(words)
    ruled = [header_above(t, words) for grid in found if (t := ruled_table(grid, placed))]
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


def ocr_tables(lines: list[Line]) -> tuple[list[Line], list[Table]]:
    """The tables among an OCR'd page's lines, and the lines left outside them. OCR reads the
    cells of a row set apart as lines of their own, each with its box: their words (placed
    along the box by their share of its characters) go to the whitespace detector."""
    if sum(bool(line.text) and is_number(line.text.split()[-1]) for line in lines) < _OCR_NUMBERS:
        return lines, []
    words = [word for i, line in enumerate(lines) for word in _line_words(line, i)]
    width = max(line.right for line in lines)
    tables = whitespace_tables(words, [], width)
    for table in tables:
        table.size = _type_size(table, words)
    taken = {
        i // _LINE_STEP for table in tables for start, end in table.chars for i in range(start, end)
    }
    return [line for i, line in enumerate(lines) if i not in taken], tables


def _line_words(line: Line, index: int) -> list[Word]:
    """The words of an OCR line, each given the share of the line's box its characters take;
    their glyph range stands for the line (`_LINE_STEP` apart, so that no two lines' ranges
    touch and merge)."""
    count = max(len(line.text), 1)
    step = (line.right - line.x) / count
    return [
        Word(
            m.group(),
            line.x + m.start() * step,
            line.x + m.end() * step,
            line.y,
            line.y + max(line.size, 1.0),
            index * _LINE_STEP,
            index * _LINE_STEP + 1,
        )
        for m in re.finditer(r"\S+", line.text)
    ]
