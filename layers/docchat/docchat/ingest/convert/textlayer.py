"""A page's text layer -> its lines in reading order (PDFium's text, split at column gaps and
margin notes), within the visible page."""

from __future__ import annotations

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


def text_lines(
    textpage: pdfium.PdfTextPage, width: float, probe: ColumnProbe | None = None
) -> list[Line]:
    """Lines of a page in reading order, each with its first glyph's size and place."""
    count = textpage.count_chars()
    if count <= 0:
        return []
    text = textpage.get_text_range(0, count)
    if len(text) != count:
        # PDFium's text leaves out some hyphen markers inside lines (IRS forms): rebuild it
        # glyph by glyph so that indices line up with PDFium's and the geometry stays usable.
        text = text_by_glyph(textpage, count)
    if len(text) != count:  # indices would not line up with PDFium's: keep its order, no geometry
        return [Line(line.strip(), 0.0, False, 0.0, 0.0, 0.0) for line in plain_lines(text)]
    glyphs = Glyphs(textpage)
    spans = [glyphs.without_mark(text, *m.span()) for m in LINE.finditer(text)]
    lines = [glyphs.line(text, start, end) for start, end in spans]
    columns = looks_multi_column(lines, width)
    if not columns and probe and probe.wanted():
        columns = runs_columns_together(glyphs, text, spans, lines, width)
        probe.record(found=columns)
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
    cut = [piece for span in spans for piece in pieces(*span, glyphs.note_cuts(text, *span))]
    if columns or len(cut) != len(spans):
        lines = [glyphs.line(text, start, end) for start, end in cut]
    return column_order(lines) if columns else lines
