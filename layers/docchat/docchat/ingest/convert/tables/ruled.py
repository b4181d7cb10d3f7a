"""Ruled tables: a grid of rules gives the rows and columns, each word goes to the cell its
centre falls in, and a missing rule between two cells merges them (where text runs across it,
for columns). A grid ruled between columns only takes its rows from the text lines; one ruled
between rows only takes its columns from whitespace."""

from __future__ import annotations

import bisect
import itertools
import operator
from dataclasses import dataclass, field

from docchat.ingest.convert.tables.cells import (
    Table,
    drop_empty,
    join_currency,
    plausible,
    reads_as_prose,
)
from docchat.ingest.convert.tables.rules import RULE_TOL, Grid, Rule, runs
from docchat.ingest.convert.tables.words import (
    ENUMERATOR,
    YEAR,
    BBox,
    PlacedWords,
    Word,
    WordLine,
    box_of,
    cell_text,
    glyph_ranges,
    is_numeric_cell,
    segment_text,
    separators,
    visual_lines,
)

Cell = tuple[int, int]  # row, column
_RULED_SHARE = 0.75  # of the cell edges inside a frame: fewer, and it is a drawing
_HEAD_GAP = 2.6  # line heights from a table's top to a header line set above it
_MAX_HEADS = 5
_HEAD_WORDS = 6  # a header cell over numbers: a year, "% of total", "Six Months Ended June 30,"


def ruled_table(grid: Grid, words: PlacedWords) -> Table | None:
    """The table the grid draws round the page's words inside it, if it looks like one."""
    left, bottom, right, top = grid.bbox
    inside = words.within(left - 1, bottom - 1, right + 1, top + 1)
    if len(inside) < 2:
        return None
    layout = _layout(grid, inside)
    if layout is None or layout.drawing():
        return None
    out_rows = [row for row in layout.rows(inside) if any(row)]
    while out_rows and _lone_wide(out_rows[0], left, right, layout.columns):
        out_rows.pop(0)  # a caption set inside the frame: it stays a paragraph
    while out_rows and _lone_wide(out_rows[-1], left, right, layout.columns):
        out_rows.pop()  # a source note likewise
    kept = [w for row in out_rows for cell in row for w in cell]
    if not kept:
        return None
    rows, boxes = drop_empty(
        [[cell_text(ws) for ws in row] for row in out_rows],
        [[box_of(ws) if ws else None for ws in row] for row in out_rows],
    )
    if not rows or len(rows) * len(rows[0]) < 2 or sum(bool(c) for row in rows for c in row) < 2:
        return None
    rows, boxes = join_currency(rows, boxes)
    header = layout.header_rows(len(rows))
    if not plausible(rows, header, ruled=True):
        return None
    if reads_as_prose(rows[header:], list(range(len(rows[0])))):
        return None  # a box round prose (a theorem, a note), its columns only word gaps
    box = box_of(kept)
    bbox = left, max(bottom, box[1] - 2), right, min(top, box[3] + 2)
    return Table(rows, header, bbox, "ruled", glyph_ranges(kept), boxes)


def header_above(table: Table, words: list[Word]) -> Table:
    """A ruled table whose rows are all body (numbers in its data columns, or labels alone
    before them: "Net sales:"), with the header lines set just above its top rule as rows of
    their own: 10-K statements rule their rows from "Revenues" down and print the years
    ("(In millions) 2019 2018 2017") and the span over them ("YEAR ENDED MAY 31,") above. A
    line joins when each of its segments stands over a column of its own, one or more over
    the number columns with a few words each; a line of one segment over the number columns
    joins as the span over such a line's number columns (its text in the first of them)."""
    if table.kind != "ruled" or table.header_rows != 1 or len(table.rows) < 3 or not table.boxes:
        return table
    numbered = next(
        (i for i, row in enumerate(table.rows) if any(map(is_numeric_cell, row[1:]))), None
    )
    if numbered is None or any(any(row[1:]) for row in table.rows[:numbered]):
        return table  # a header of its own: text over the number columns before the numbers
    extents = [_extent([row[c] for row in table.boxes]) for c in range(len(table.rows[0]))]
    if any(e is None for e in extents):
        return table
    spans = [e for e in extents if e is not None]
    bounds = [-1e9] + [(a[1] + b[0]) / 2 for a, b in itertools.pairwise(spans)] + [1e9]
    left, _, right, top = table.bbox
    above = [w for w in words if w.yc > top and left - 1 <= w.xc <= right + 1]
    heads: list[list[list[Word]]] = []
    reference = top
    for line in reversed(visual_lines(above)):  # the nearest first
        if line.y - reference > _HEAD_GAP * line.size:
            break
        cells: list[list[Word]] = [[] for _ in spans]
        for seg in line.segments:  # in the first column it reaches over (a span's first)
            x0, x1 = seg[0].x0, seg[-1].x1
            over = [c for c, (a, b) in enumerate(spans) if min(x1, b) > max(x0, a)]
            cells[over[0] if over else slot(bounds, (x0 + x1) / 2)].extend(seg)
        filled = [c for c, ws in enumerate(cells) if ws]
        if len(line.segments) >= 2:
            if len(filled) < len(line.segments) or filled[-1] == 0:
                break
            if any(_not_a_head(cells[c]) for c in filled if c > 0):
                break  # a body row above the rules, or prose
        else:
            under = [c for c, ws in enumerate(heads[0]) if ws and c > 0] if heads else []
            if len(under) < 2 or line.segments[0][0].x0 < bounds[1]:
                break
            cells = [[] for _ in spans]
            cells[under[0]] = list(line.segments[0])
        heads.insert(0, cells)
        reference = max(w.top for w in line.words)
        if len(heads) == _MAX_HEADS:
            break
    if not heads or not any(sum(bool(ws) for ws in row) >= 2 for row in heads):
        return table
    head_words = [w for row in heads for ws in row for w in ws]
    return Table(
        [[cell_text(ws) for ws in row] for row in heads] + table.rows,
        len(heads),  # every ruled row is body
        (table.bbox[0], table.bbox[1], table.bbox[2], max(top, *(w.top for w in head_words))),
        table.kind,
        sorted(glyph_ranges(head_words) + table.chars),
        [[box_of(ws) if ws else None for ws in row] for row in heads] + table.boxes,
        table.size,
    )


def _not_a_head(words: list[Word]) -> bool:
    """Not what heads a column of numbers: more than a few words, or a number (a year
    aside)."""
    text = segment_text(words)
    return len(words) > _HEAD_WORDS or (
        is_numeric_cell(text) and not YEAR.fullmatch(text.strip("()*"))
    )


def _extent(boxes: list[BBox | None]) -> tuple[float, float] | None:
    """The x range a column's cells cover."""
    found = [b for b in boxes if b is not None]
    if not found:
        return None
    return min(b[0] for b in found), max(b[2] for b in found)


@dataclass
class _Layout:
    """Row bounds (top down) and column bounds (left to right) of a grid, the rules at each,
    and the cells merged where a rule is missing (each cell's root: its top-left cell)."""

    ys: list[float]
    xs: list[float]
    across: list[list[Rule]]
    down: list[list[Rule]]
    column_rules: bool
    merged: dict[Cell, Cell]
    word_rows: list[int]  # the grid row of each word the layout was made for
    # What `ruled_down` and `ruled_across` found: merging cells and telling a drawing ask
    # of the same edges.
    _down: dict[Cell, bool] = field(default_factory=dict, init=False, repr=False)
    _across: dict[Cell, bool] = field(default_factory=dict, init=False, repr=False)

    @property
    def columns(self) -> int:
        return len(self.xs) - 1

    @property
    def nrows(self) -> int:
        return len(self.ys) - 1

    def ruled_down(self, r: int, c: int) -> bool:
        """A rule between columns c and c + 1 along row r."""
        found = self._down.get((r, c))
        if found is None:
            middle, half = (self.ys[r] + self.ys[r + 1]) / 2, (self.ys[r] - self.ys[r + 1]) / 2
            found = self._down[(r, c)] = _has_rule(self.down[c + 1], middle, half)
        return found

    def ruled_across(self, r: int, c: int) -> bool:
        """A rule between rows r and r + 1 along column c."""
        found = self._across.get((r, c))
        if found is None:
            middle, half = (self.xs[c] + self.xs[c + 1]) / 2, (self.xs[c + 1] - self.xs[c]) / 2
            found = self._across[(r, c)] = _has_rule(self.across[r + 1], middle, half)
        return found

    def drawing(self) -> bool:
        """A drawing (boxes joined by arrows), not a table: most cell edges inside a table's
        frame are ruled, across or down (merged cells aside)."""
        if not self.column_rules or self.nrows < 2 or self.columns < 2:
            return False
        down = [self.ruled_down(r, c) for r in range(self.nrows) for c in range(self.columns - 1)]
        across = [
            self.ruled_across(r, c) for c in range(self.columns) for r in range(self.nrows - 1)
        ]
        share_across = sum(across) / len(across) if across else 1.0
        return max(sum(down) / len(down), share_across) < _RULED_SHARE

    def header_rows(self, nrows: int) -> int:
        """The first row, and the rows down to the last one a first-row cell spans into."""
        depth = 1
        for (r, c), root in self.merged.items():
            if root[0] == 0 and r > 0 and root != (r, c):
                depth = max(depth, r + 1)
        return min(depth, max(1, nrows - 1), 3)

    def rows(self, words: list[Word]) -> list[list[list[Word]]]:
        """Rows of cells (words per cell): each band of grid rows that merged cells tie
        together is one row per grid row, or one row per text line where the band's lines
        open in the first column and fill another (no rules between rows)."""
        by_root: dict[Cell, list[Word]] = {}
        for w, r in zip(words, self.word_rows, strict=True):
            by_root.setdefault(self.merged[(r, slot(self.xs, w.xc))], []).append(w)
        last_row: dict[Cell, int] = {}
        for (r, _), root in self.merged.items():
            last_row[root] = max(last_row.get(root, 0), r)
        found: list[list[list[Word]]] = []
        r = 0
        while r < self.nrows:
            end = r
            row = r
            while row <= end:  # the band: rows tied to row r by cells merged downwards
                end = max([end] + [last_row[self.merged[(row, c)]] for c in range(self.columns)])
                row += 1
            found.extend(self._band(r, end, by_root))
            r = end + 1
        return found

    def _band(self, r: int, end: int, by_root: dict[Cell, list[Word]]) -> list[list[list[Word]]]:
        roots = {
            self.merged[(row, c)]: None
            for row in range(r, end + 1)
            for c in range(self.columns)
            if self.merged[(row, c)][0] >= r
        }
        words = [w for root in roots for w in by_root.get(root, [])]
        lines = visual_lines(words)
        labelled = [
            line
            for line in lines
            if slot(self.xs, line.words[0].xc) == 0
            and len({slot(self.xs, w.xc) for w in line.words}) >= 2
        ]
        if len(labelled) >= 2 and len(labelled) >= 0.5 * len(lines) and end - r + 1 < len(lines):
            return [self._text_row(r, line) for line in _join_wrapped(lines, self.xs)]
        return [
            [
                by_root.get((row, c), []) if self.merged[(row, c)] == (row, c) else []
                for c in range(self.columns)
            ]
            for row in range(r, end + 1)
        ]

    def _text_row(self, r: int, words: list[Word]) -> list[list[Word]]:
        row: list[list[Word]] = [[] for _ in range(self.columns)]
        for w in words:
            c = slot(self.xs, w.xc)
            root = self.merged[(r, c)]
            row[root[1] if root[0] == r else c].append(w)
        return row


def _layout(grid: Grid, words: list[Word]) -> _Layout | None:
    left, bottom, right, top = grid.bbox
    ys = sorted(_positions([r.pos for r in grid.across] + [bottom, top]), reverse=True)
    xs = _positions([r.pos for r in grid.down] + [left, right])
    # Only rules that cross a good part of the table divide it.
    ys = [y for y in ys if y in (ys[0], ys[-1]) or _cover(grid.across, y) > 0.02 * (right - left)]
    xs = [x for x in xs if x in (xs[0], xs[-1]) or _cover(grid.down, x) > 0.02 * (top - bottom)]
    if len(xs) < 2 or len(ys) < 2:
        return None
    column_rules = len(xs) >= 3
    found = _refine_columns(xs, words) if column_rules else _whitespace_columns(words, left, right)
    if found is None:
        return None
    xs = found
    layout = _Layout(
        ys,
        xs,
        [[r for r in grid.across if abs(r.pos - y) <= RULE_TOL] for y in ys],
        [[r for r in grid.down if abs(r.pos - x) <= RULE_TOL] for x in xs],
        column_rules,
        {},
        [slot(ys, w.yc, descending=True) for w in words],
    )
    layout.merged = _merged_cells(layout, words)
    return layout


def _merged_cells(layout: _Layout, words: list[Word]) -> dict[Cell, Cell]:
    """Each cell's root: cells with no rule between them are one (across a missing column
    rule only where a word runs over the bound)."""
    parent = {(r, c): (r, c) for r in range(layout.nrows) for c in range(layout.columns)}

    def root(cell: Cell) -> Cell:
        while parent[cell] != cell:
            cell = parent[cell]
        return cell

    def union(a: Cell, b: Cell) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)  # the top-left cell stays the root

    by_row: dict[int, list[Word]] = {}
    for w, r in zip(words, layout.word_rows, strict=True):
        by_row.setdefault(r, []).append(w)
    if layout.column_rules:
        for r in range(layout.nrows):
            for c in range(layout.columns - 1):
                x = layout.xs[c + 1]
                across = any(w.x0 < x - 1 and w.x1 > x + 1 for w in by_row.get(r, ()))
                if across and not layout.ruled_down(r, c):
                    union((r, c), (r, c + 1))
    for c in range(layout.columns):
        for r in range(layout.nrows - 1):
            if not layout.ruled_across(r, c):
                union((r, c), (r + 1, c))
    return {cell: root(cell) for cell in parent}


def _refine_columns(xs: list[float], words: list[Word]) -> list[float]:
    """Column bounds from rules, with whitespace columns found inside any of them (a rule
    after the row labels only, the numbers set apart by space)."""
    bounds = [xs[0]]
    centres = [w.xc for w in words]
    for a, b in itertools.pairwise(xs):
        inside = [w for w, x in zip(words, centres, strict=True) if a <= x < b]
        if len(inside) >= 6:
            lines = visual_lines(inside)
            multi = sum(len(line.segments) >= 2 for line in lines)
            if multi >= 3 and _bulleted(lines) < 2:
                bounds.extend((lo + hi) / 2 for lo, hi in separators(lines, a, b))
        bounds.append(b)
    return bounds


def _bulleted(lines: list[WordLine]) -> int:
    """Lines that open with a bullet or an enumerator and go on in words: a list."""
    return sum(
        len(line.segments) >= 2
        and bool(ENUMERATOR.fullmatch(segment_text(line.segments[0])))
        and any(ch.isalpha() for ch in segment_text(line.segments[1]))
        for line in lines
    )


def _whitespace_columns(words: list[Word], left: float, right: float) -> list[float] | None:
    """Column bounds inside a frame from the x ranges that its text lines leave empty."""
    multi = [line for line in visual_lines(words) if len(line.segments) >= 2]
    gaps = separators(multi, left, right) if len(multi) >= 2 else []
    return [left] + [(a + b) / 2 for a, b in gaps] + [right] if gaps else None


def _join_wrapped(lines: list[WordLine], xs: list[float]) -> list[list[Word]]:
    """The text lines of a band; a one-column line that starts in lower case goes on with
    the line above."""
    found: list[list[Word]] = []
    for line in lines:
        columns = {slot(xs, w.xc) for w in line.words}
        if found and len(columns) == 1 and line.words[0].text[:1].islower():
            found[-1].extend(line.words)
        else:
            found.append(list(line.words))
    return found


def _lone_wide(row: list[list[Word]], left: float, right: float, columns: int) -> bool:
    """One filled cell whose text runs across most of the frame."""
    filled = [ws for ws in row if ws]
    if columns < 2 or len(filled) != 1:
        return False
    return max(w.x1 for w in filled[0]) - min(w.x0 for w in filled[0]) > 0.6 * (right - left)


def _positions(values: list[float]) -> list[float]:
    return [sum(g) / len(g) for g in runs(sorted(values), key=float, gap=RULE_TOL)]


def _cover(rules: list[Rule], pos: float) -> float:
    return sum(r.b - r.a for r in rules if abs(r.pos - pos) <= RULE_TOL)


def _has_rule(rules: list[Rule], at: float, slack: float) -> bool:
    slack = max(min(slack, 3.0), 0.5)
    return any(r.a - slack <= at <= r.b + slack for r in rules)


def slot(bounds: list[float], value: float, *, descending: bool = False) -> int:
    """The interval of `bounds` (ascending, or descending) that holds `value`, clamped."""
    if descending:
        i = bisect.bisect_right(bounds, -value, key=operator.neg) - 1
    else:
        i = bisect.bisect_right(bounds, value) - 1
    return min(max(i, 0), len(bounds) - 2)
