"""A page's text layer -> its lines in reading order (PDFium's text, split at column gaps and
margin notes), within the visible page."""

from __future__ import annotations

from dataclasses import dataclass, field

import pypdfium2 as pdfium

from docchat.ingest.convert.columns import (
    ColumnProbe,
    column_order,
    column_starts,
    is_column_gap,
    looks_multi_column,
    pieces,
    runs_columns_together,
)
from docchat.ingest.convert.glyphs import LINE, Glyphs, plain_lines, text_by_glyph
from docchat.ingest.convert.page import Line
from docchat.ingest.convert.tables.cells import Table, table_markdown
from docchat.ingest.convert.tables.find import RuleProbe, find_tables


def on_page(lines: list[Line], box: tuple[float, float, float, float]) -> list[Line]:
    """Lines that start inside the visible page: text placed off the page is never seen."""
    left, bottom, right, top = box
    if not any(line.size for line in lines):  # no geometry to judge by
        return lines
    margin = 2.0
    return [
        line
        for line in lines
        if left - margin <= line.x <= right + margin and bottom - margin <= line.y <= top + margin
    ]


@dataclass
class Probes:
    """What a document's first pages teach about the rest: whether to look for columns run
    into single lines, and whether to scan pages for ruled tables."""

    columns: ColumnProbe = field(default_factory=ColumnProbe)
    rules: RuleProbe = field(default_factory=RuleProbe)


def text_lines(
    page: pdfium.PdfPage, textpage: pdfium.PdfTextPage, probes: Probes
) -> tuple[list[Line], list[Line]]:
    """Lines of a page in reading order, each with its first glyph's size and place, and its
    tables, one line each (`Line.table`), whose words the lines leave out."""
    count = textpage.count_chars()
    if count <= 0:
        return [], []
    text = textpage.get_text_range(0, count)
    if len(text) != count:
        # PDFium's text leaves out some hyphen markers inside lines (IRS forms): rebuild it
        # glyph by glyph so that indices line up with PDFium's and the geometry stays usable.
        text = text_by_glyph(textpage, count)
    if len(text) != count:  # indices would not line up with PDFium's: keep its order, no geometry
        return [Line(line.strip(), 0.0, False, 0.0, 0.0, 0.0) for line in plain_lines(text)], []
    glyphs = Glyphs(textpage)
    width = page.get_width()
    spans, lines = _spans(glyphs, text)
    multi = looks_multi_column(lines, width)
    together = False
    if not multi and probes.columns.wanted():
        together = runs_columns_together(glyphs, text, spans, lines, width)
        probes.columns.record(found=together)
    found = find_tables(page, textpage, glyphs, text, columns=multi or together, probe=probes.rules)
    if found:
        # The tables' words leave the text (a line break each, so that a line holding a table
        # row and text beside it splits round the row). A page that looked set in columns
        # is still read by columns, top to bottom in each: that order does not depend on the
        # order in which the PDF draws its text, as the table's own place does not.
        text = _masked(text, found)
        spans, lines = _spans(glyphs, text)
        multi = multi or looks_multi_column(lines, width)
    ordered = _ordered(glyphs, text, spans, lines, columns=multi or together)
    return ordered, [table_line(table) for table in found]


def _spans(glyphs: Glyphs, text: str) -> tuple[list[tuple[int, int]], list[Line]]:
    spans = [glyphs.without_mark(text, *m.span()) for m in LINE.finditer(text)]
    return spans, [glyphs.line(text, start, end) for start, end in spans]


def _ordered(
    glyphs: Glyphs, text: str, spans: list[tuple[int, int]], lines: list[Line], *, columns: bool
) -> list[Line]:
    """The lines split at column gaps and margin notes, columns read one after the other."""
    if not lines:  # a page that is all table: its words went to the table
        return []
    if columns:
        # PDFium runs side-by-side columns that share a baseline into one line: split them at
        # gaps, then read each column top to bottom. A wide space in justified text is no
        # column gap: cut where the text jumps back left, where the gap is very wide, or where
        # the text after it starts at a left edge that many pieces of the page share.
        gaps = [glyphs.gaps(text, *span) for span in spans]
        edges = [line.x for line in lines] + [gap.next_x for found in gaps for gap in found]
        starts = column_starts(edges, tolerance=3.0, share=0.1)
        spans = [
            piece
            for span, found in zip(spans, gaps, strict=True)
            for piece in pieces(*span, [g for g in found if is_column_gap(g, starts)])
        ]
    # A margin note run into a line of text is set in another size ("CAUTION to file Form
    # 3520-A" has the note in 4 pt, the text in 9 pt): it becomes a line of its own.
    notes = [(i, cuts) for i, span in enumerate(spans) if (cuts := glyphs.note_cuts(text, *span))]
    if notes:
        at = dict(notes)
        spans = [piece for i, span in enumerate(spans) for piece in pieces(*span, at.get(i, []))]
    if columns or notes:
        lines = [glyphs.line(text, start, end) for start, end in spans]
    return column_order(lines) if columns else lines


def _masked(text: str, tables: list[Table]) -> str:
    chars = list(text)
    for table in tables:
        for start, end in table.chars:
            chars[start:end] = "\n" * (end - start)
    return "".join(chars)


def table_line(table: Table) -> Line:
    """The table as one line of the page: its markdown, at its box's top left."""
    left, bottom, right, top = table.bbox
    return Line(table_markdown(table), table.size, False, left, top, right, bottom, table=True)


def with_tables(lines: list[Line], tables: list[Line]) -> list[Line]:
    """The lines with each table before the first line below its top and across from it
    (the caption and the units line above it stay before it)."""
    for table in tables:
        at = next(
            (
                i
                for i, line in enumerate(lines)
                if line.y < table.y
                and not line.table
                and line.x < table.right
                and line.right > table.x
            ),
            len(lines),
        )
        lines.insert(at, table)
    return lines
