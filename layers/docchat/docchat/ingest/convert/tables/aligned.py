"""Whitespace-aligned tables (as SEC filings set them): runs of lines split by wide gaps into
segments are candidates; their columns are the x ranges that the lines leave empty; caption,
units line and notes around them are cut off; header lines are assembled bottom-up so that a
spanning header ("Year Ended December 31,") gets a row of its own over the columns it spans;
candidates that read as prose in columns, a list or a table of contents are refused."""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from docchat.ingest.convert.tables.cells import Table, join_currency, plausible, reads_as_prose
from docchat.ingest.convert.tables.ruled import slot
from docchat.ingest.convert.tables.rules import Rule
from docchat.ingest.convert.tables.words import (
    LEADER,
    YEAR,
    Word,
    WordLine,
    box_of,
    cell_text,
    glyph_ranges,
    is_number,
    is_numeric_cell,
    segment_text,
    separators,
    visual_lines,
)

LINE_GAP = 2.6  # a vertical gap wider than this many line heights ends a table
_CODE = re.compile(r"[;{}]$|^#|<-|<<|>>|==|!=|&&|\|\|")
_MAX_HEADER_LINES = 6
WordCells = list[list[Word]]  # one list of words per column


@dataclass
class _Placed:
    """A line of a candidate with its words per column and its segments that span columns."""

    line: WordLine
    cells: WordCells
    spans: list[tuple[int, int, list[Word]]]

    def filled(self) -> list[int]:
        return [c for c, ws in enumerate(self.cells) if ws]


def whitespace_tables(words: list[Word], across: list[Rule], width: float) -> list[Table]:
    """The whitespace-aligned tables among `words` (those not in a ruled table); a page of
    two prose columns is split at its gutter first."""
    return _whitespace_tables(words, _Across(across), width)


def _whitespace_tables(words: list[Word], across: _Across, width: float) -> list[Table]:
    if len(words) < 6:
        return []
    lines = visual_lines(words)
    gutter = _page_gutter(lines, width)
    if gutter is None:
        return [t for block in _blocks(lines) for t in _tables_in_block(block, across)]
    left = [w for w in words if w.xc < gutter]
    right = [w for w in words if w.xc >= gutter]
    found = _whitespace_tables(left, across, gutter)
    if len(right) >= 6:  # the right-hand column is not split again
        found += [
            t for block in _blocks(visual_lines(right)) for t in _tables_in_block(block, across)
        ]
    return found


class _Across:
    """The page's rules across; where they are in order of position (as `merge` leaves
    them), the rule under a segment is looked for among those near it only."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.positions = [r.pos for r in rules]
        self.ordered = all(a <= b for a, b in itertools.pairwise(self.positions))

    def near(self, low: float, high: float) -> list[Rule]:
        """The rules at `low` to `high`, in their order (all of them where not ordered)."""
        if not self.ordered:
            return self.rules
        start = bisect.bisect_left(self.positions, low)
        return self.rules[start : bisect.bisect_right(self.positions, high, lo=start)]


def _page_gutter(lines: list[WordLine], width: float) -> float | None:
    """The x of the gap between two columns of prose: many lines have long pieces of text on
    both sides of one wide gap at the same place."""
    gaps = [
        (a[-1].x1, b[0].x0)
        for line in lines
        for a, b in zip(line.segments, line.segments[1:], strict=False)
        if min(a[-1].x1 - a[0].x0, b[-1].x1 - b[0].x0) > width / 4.5 and min(len(a), len(b)) >= 4
    ]
    if len(gaps) < 5 or len(gaps) < 0.2 * len(lines):
        return None
    lo, hi = max(a for a, _ in gaps), min(b for _, b in gaps)
    if hi > lo:
        return (lo + hi) / 2
    middle = sorted((a + b) / 2 for a, b in gaps)[len(gaps) // 2]
    agree = sum(a <= middle <= b for a, b in gaps)
    return middle if agree >= 0.8 * len(gaps) else None


def _blocks(lines: list[WordLine]) -> list[list[WordLine]]:
    """Runs of lines with two or more segments, with up to two one-segment lines between
    them (wrapped labels, section labels) and up to three just above (header lines), and
    no wide vertical gap."""
    blocks: list[list[WordLine]] = []
    current: list[WordLine] = []
    pending: list[WordLine] = []  # one-segment lines since the last line of several
    lead: list[WordLine] = []  # one-segment lines just above the block
    for line in lines:
        last = (pending or current)[-1] if pending or current else None
        if last is not None and last.y - line.y > LINE_GAP * max(last.size, line.size) * 1.2:
            if current:
                blocks.append(current)
            current, pending, lead = [], [], []
        if len(line.segments) >= 2:
            if not current:
                current, lead = lead[-3:], []
            current += [*pending, line]
            pending = []
        elif current:
            pending.append(line)
            if len(pending) > 2:
                blocks.append(current)
                current, lead, pending = [], pending[-3:], []
        else:
            lead = [*lead, line][-3:]
    if current:
        blocks.append(current + pending[:1])
    return [b for b in blocks if sum(len(line.segments) >= 2 for line in b) >= 2]


def _tables_in_block(block: list[WordLine], across: _Across) -> list[Table]:
    multi = [line for line in block if len(line.segments) >= 2]
    if len(multi) < 2:
        return []
    left = min(line.x0 for line in block) - 1
    right = max(line.x1 for line in block) + 1
    gaps = separators(multi, left + 1, right - 1)
    if not gaps:
        return []
    bounds = [left] + [(a + b) / 2 for a, b in gaps] + [right]
    # A line of running text across the columns cuts the block.
    pieces: list[list[WordLine]] = [[]]
    for line in block:
        if _prose_line(line, bounds):
            pieces.append([])
        else:
            pieces[-1].append(line)
    if len(pieces) > 1:
        return [
            t
            for piece in pieces
            if sum(len(line.segments) >= 2 for line in piece) >= 2
            for t in _tables_in_block(piece, across)
        ]
    table = _assemble(block, bounds, across)
    return [table] if table is not None else []


def _prose_line(line: WordLine, bounds: list[float]) -> bool:
    """A one-segment line of five words or more across two column bounds or more."""
    if len(line.segments) != 1 or len(line.words) < 5:
        return False
    return sum(line.x0 < x < line.x1 for x in bounds[1:-1]) >= 2


def _column_span(seg: list[Word], bounds: list[float]) -> tuple[int, int]:
    """The first and last column a segment covers (a quarter of it or of the column)."""
    x0, x1 = seg[0].x0, seg[-1].x1
    columns = [
        c
        for c in range(len(bounds) - 1)
        if min(x1, bounds[c + 1]) - max(x0, bounds[c])
        > 0.25 * min(x1 - x0, bounds[c + 1] - bounds[c])
    ]
    if not columns:
        c = slot(bounds, (x0 + x1) / 2)
        return c, c
    return columns[0], columns[-1]


def _place(line: WordLine, bounds: list[float], across: _Across) -> _Placed:
    """A line's words per column, and its segments that span columns (a rule drawn just
    under a segment, as under "Year Ended December 31,", gives the span)."""
    placed = _Placed(line, [[] for _ in range(len(bounds) - 1)], [])
    for seg in line.segments:
        a, b = _column_span(seg, bounds)
        under = _rule_under(seg, across)
        if (
            under is not None
            and sum(s[-1].x1 > under.a and s[0].x0 < under.b for s in line.segments) == 1
        ):
            ruled = _column_span([Word("", under.a + 1, under.b - 1, 0, 1, 0, 0)], bounds)
            if ruled[0] <= a and ruled[1] >= b and ruled[1] > ruled[0]:
                placed.spans.append((*ruled, seg))
                placed.cells[ruled[0]].extend(seg)
                continue
        by_word = [slot(bounds, w.xc) for w in seg]
        if a == b:
            placed.cells[a].extend(seg)
        elif len(set(by_word)) == len(by_word) or _numbers_split(seg, by_word):
            for w, c in zip(seg, by_word, strict=True):  # the gap was just narrow
                placed.cells[c].append(w)
        else:
            placed.spans.append((a, b, seg))
            placed.cells[a].extend(seg)
    return placed


def _rule_under(seg: list[Word], across: _Across) -> Rule | None:
    """A rule just under the segment, as wide as it or a little wider."""
    x0, x1 = seg[0].x0, seg[-1].x1
    bottom = min(w.bottom for w in seg)
    size = max(w.size for w in seg)
    low, high = bottom - 0.9 * size, bottom + 0.4 * size
    for rule in across.near(low, high):
        under = low <= rule.pos <= high
        if (
            under
            and rule.a <= x0 + 2
            and rule.b >= x1 - 2
            and rule.b - rule.a < 3 * (x1 - x0) + 200
        ):
            return rule
    return None


def _numbers_split(seg: list[Word], columns: list[int]) -> bool:
    """A segment whose words fall in several columns, each past the first holding a number."""
    groups: dict[int, list[Word]] = {}
    for w, c in zip(seg, columns, strict=True):
        groups.setdefault(c, []).append(w)
    return len(groups) >= 2 and all(
        any(is_number(w.text) for w in ws) for c, ws in groups.items() if c > 0
    )


def _assemble(block: list[WordLine], bounds: list[float], across: _Across) -> Table | None:
    """The block's lines as a table, once the lines round it are cut off, if it reads as one."""
    columns = len(bounds) - 1
    placed = _trimmed([_place(line, bounds, across) for line in block])
    if len(placed) < 3 and not (len(placed) == 2 and columns >= 3):
        return None
    first = _first_body_line(placed, columns)
    header = _header(placed[:first], columns)
    rows_words = header + _body(placed[first:], columns)
    rows = [[cell_text(ws) for ws in row] for row in rows_words]
    if not _reads_as_table(rows, len(header), placed, columns):
        return None
    boxes = [[box_of(ws) if ws else None for ws in row] for row in rows_words]
    keep = [i for i, row in enumerate(rows) if any(row)]
    header_rows = max(sum(i < len(header) for i in keep), 1)
    used = [c for c in range(columns) if any(rows[i][c] for i in keep)]
    if len(used) < 2:
        return None
    rows = [[rows[i][c] for c in used] for i in keep]
    boxes = [[boxes[i][c] for c in used] for i in keep]
    rows, boxes = join_currency(rows, boxes, header_rows)
    if len(rows[0]) < 2 or not plausible(rows, header_rows):
        return None
    words = [w for p in placed for w in p.line.words]
    return Table(rows, header_rows, box_of(words), "whitespace", glyph_ranges(words), boxes)


def _trimmed(placed: list[_Placed]) -> list[_Placed]:
    """Without the caption and units lines above (one cell in the label column, or text
    across it) and the notes below (one cell anywhere)."""

    def loose(p: _Placed, *, top: bool) -> bool:
        if len(p.line.segments) >= 2 and len(p.filled()) >= 2:
            return False
        if p.spans:
            return p.spans[0][0] == 0 or not top
        return p.filled() == [0] or not top

    start, end = 0, len(placed)
    while start < end and loose(placed[start], top=True):
        start += 1
    while end > start and loose(placed[end - 1], top=False):
        end -= 1
    return placed[start:end]


def _first_body_line(placed: list[_Placed], columns: int) -> int:
    """The first line with a number in a data column (years are headers there), less the
    label-only lines just above it ("Net sales:"); 1 where there is none near the top."""
    first = 1
    for i, p in enumerate(placed):
        data = [segment_text(p.cells[c]) for c in range(1, columns) if p.cells[c]]
        numbers = [t for t in data if is_numeric_cell(t) and not YEAR.fullmatch(t.strip("()*"))]
        if numbers and (p.cells[0] or len(numbers) >= 2):
            first = i if 0 < i <= _MAX_HEADER_LINES else 1
            break
    while first > 1 and not any(placed[first - 1].cells[1:]):
        first -= 1
    return first


def _header(head: list[_Placed], columns: int) -> list[WordCells]:
    """Header lines as rows, bottom-up: a segment spanning columns opens a row for what
    stands under it, and one column's stacked words join into one cell."""
    spans = [(a, b, seg, i) for i, p in enumerate(head) for a, b, seg in p.spans]
    depth = {
        id(seg): sum(i2 < i and a2 <= a and b <= b2 for a2, b2, _, i2 in spans)
        for a, b, seg, i in spans
    }
    nrows = 1 + (max(depth.values()) + 1 if depth else 0)
    rows: list[WordCells] = [[[] for _ in range(columns)] for _ in range(nrows)]
    spanning = {id(w) for _, _, seg, _ in spans for w in seg}
    for a, _, seg, _ in spans:
        rows[depth[id(seg)]][a].extend(seg)
    for c in range(columns):
        for i, p in enumerate(head):
            words = [w for w in p.cells[c] if id(w) not in spanning]
            if words:
                over = [depth[id(seg)] for a, b, seg, i2 in spans if i2 < i and a <= c <= b]
                rows[min(max(over) + 1 if over else 0, nrows - 1)][c].extend(words)
    return [row for row in rows if any(row)]


def _body(body: list[_Placed], columns: int) -> list[WordCells]:
    """One row per line; a label wrapped onto the line that carries its numbers is joined
    to it, and a lower-case label-only line after a full row goes on with its label."""
    rows: list[WordCells] = []
    pending: list[Word] | None = None
    prev_only_label = False
    for i, p in enumerate(body):
        only_label = bool(p.cells[0]) and not any(p.cells[1:])
        if only_label:
            text = segment_text(p.cells[0])
            if rows and text[:1].islower() and not prev_only_label and rows[-1][0]:
                rows[-1][0].extend(p.cells[0])
                continue
            after = body[i + 1] if i + 1 < len(body) else None
            if pending is None and after is not None and _wraps_onto(p, after, text):
                pending, prev_only_label = list(p.cells[0]), True
                continue
        row = [list(ws) for ws in p.cells]
        if pending is not None:
            row[0], pending = pending + row[0], None
        rows.append(row)
        prev_only_label = only_label
    if pending is not None:
        rows.append([pending] + [[] for _ in range(columns - 1)])
    return rows


def _wraps_onto(label: _Placed, after: _Placed, text: str) -> bool:
    """A label-only line whose label goes on in the next line, which carries the numbers
    (lower case, or set in)."""
    if text.endswith(":") or not after.cells[0] or not any(after.cells[1:]):
        return False
    indent = after.cells[0][0].x0 > label.cells[0][0].x0 + 0.5 * label.line.size
    return segment_text(after.cells[0])[:1].islower() or indent


def _reads_as_table(
    texts: list[list[str]], header: int, placed: list[_Placed], columns: int
) -> bool:
    """Not a table of contents, not a list, not prose set in columns."""
    body = texts[header:] if len(texts) > header else texts
    lines = [p.line for p in placed]
    if sum(bool(LEADER.search(segment_text(line.words))) for line in lines) >= max(
        2, 0.3 * len(lines)
    ):
        return False  # dot leaders
    used = [c for c in range(columns) if any(row[c] for row in texts)]
    if len(used) < 2 or sum(len(p.filled()) >= 2 for p in placed) < max(2, 0.5 * len(placed)):
        return False
    if len(texts) < 3 and not any(is_numeric_cell(t) for row in body for t in row if t):
        return False  # two rows of words: a line of prose set with wide spaces, most often
    return not (reads_as_prose(body, used) or _code(texts))


def _code(texts: list[list[str]]) -> bool:
    """A program and its output set in columns: a cell that is a statement, a comment or an
    operator of code ("cout << x;", "## $x :", "x <- 1")."""
    return any(_CODE.search(cell) for row in texts for cell in row if cell)
