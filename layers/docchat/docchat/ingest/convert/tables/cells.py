"""A found table: its rows of cells and where it stands; what a table's cells look like
(`plausible`), currency signs joined to their numbers, and the table as page text
(docs: specs/table-text.md)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Literal

from docchat.ingest.convert.tables.words import (
    CURRENCY,
    ENUMERATOR,
    BBox,
    is_number,
    is_numeric_cell,
)

Cells = list[list[str]]
Boxes = list[list[BBox | None]]


@dataclass
class Table:
    """Rows of cells (all rows as wide; a spanning cell's text in its first cell), how many
    of them are header rows, its box in the page's coordinates, and the glyph index ranges
    of the words placed in it (captions and notes around it are not)."""

    rows: Cells
    header_rows: int
    bbox: BBox
    kind: Literal["ruled", "whitespace"]
    chars: list[tuple[int, int]]
    boxes: Boxes = field(default_factory=list)  # each cell's words' box (None: empty)
    size: float = 0.0  # the type size most of its words have


def plausible(rows: Cells, header: int, *, ruled: bool = False) -> bool:
    """What a table's cells look like: two rows and two columns or more, a body mostly
    filled, two columns that most body rows fill, cells of words or numbers rather than a
    diagram's single letters, no cell of several numbers (columns run together), and for a
    ruled frame, not a box of prose."""
    if len(rows) < 2 or len(rows[0]) < 2:
        return False
    body = rows[header:] or rows
    cells = [c for row in body for c in row]
    filled = [c for c in cells if c.strip()]
    if len(filled) < 0.5 * len(cells):
        return False
    counts = [sum(is_number(t) for t in c.split()) for c in filled]
    if max(counts) >= 4 or sum(n >= 3 for n in counts) > 0.1 * len(filled):
        return False
    full = sum(
        sum(bool(row[c].strip()) for row in body) >= 0.5 * len(body) for c in range(len(rows[0]))
    )
    if full < 2:
        return False
    everything = [c for row in rows for c in row if c.strip()]
    real = [c for c in everything if sum(ch.isalnum() for ch in c) >= 2 or _numeric_mark(c)]
    if len(real) < 0.7 * len(everything):
        return False
    if ruled and len(rows) <= 3:
        words = sorted(len(c.split()) for c in everything)
        return words[len(words) // 2] < 8
    return True


def drop_empty(rows: Cells, boxes: Boxes) -> tuple[Cells, Boxes]:
    """Without the rows and the columns that hold no text."""
    keep = [i for i, row in enumerate(rows) if any(row)]
    rows, boxes = [rows[i] for i in keep], [boxes[i] for i in keep]
    if not rows:
        return rows, boxes
    columns = [c for c in range(len(rows[0])) if any(row[c] for row in rows)]
    return [[row[c] for c in columns] for row in rows], [[b[c] for c in columns] for b in boxes]


def join_currency(rows: Cells, boxes: Boxes, header: int = 1) -> tuple[Cells, Boxes]:
    """A column of nothing but currency signs (in the body) joins the column right of it
    ("$ 118,573"), one of percent signs the column left of it; a header cell in the dropped
    column moves with it."""
    column = 0
    while rows and column < len(rows[0]):
        into = _currency_target(rows[header:] or rows, column)
        if into is None:
            column += 1
            continue
        for i, (row, box) in enumerate(zip(rows, boxes, strict=True)):
            if not row[column]:
                continue
            pair = (row[column], row[into]) if column < into else (row[into], row[column])
            row[into] = " ".join(pair).strip() if i >= header or row[into] else row[column]
            box[into] = _union(box[column], box[into])
        rows = [row[:column] + row[column + 1 :] for row in rows]
        boxes = [box[:column] + box[column + 1 :] for box in boxes]
    return rows, boxes


def _currency_target(body: Cells, column: int) -> int | None:
    values = [row[column] for row in body if row[column]]
    if not values:
        return None
    if all(v in CURRENCY for v in values) and column + 1 < len(body[0]):
        return column + 1
    if all(v in ("%", "%)") for v in values) and column > 0:
        return column - 1
    return None


def _union(a: BBox | None, b: BBox | None) -> BBox | None:
    if a is None or b is None:
        return a or b
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


def table_markdown(table: Table) -> str:
    """The table as page text: header rows, the delimiter line, body rows; one line a row,
    every row as wide, cells verbatim with whitespace collapsed and `|` escaped."""
    rows = [row for row in table.rows if any(c.strip() for c in row)]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    header = min(max(table.header_rows, 1), len(rows))
    lines = []
    for i, row in enumerate(rows):
        cells = [" ".join(c.split()).replace("|", "\\|") for c in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if i == header - 1:
            lines.append("| " + " | ".join(["---"] * width) + " |")
    return "\n".join(lines)


def reads_as_prose(body: Cells, used: list[int]) -> bool:
    """Whether the body's cells are prose set in columns (or lines of prose columns read
    across), a list, or sentences running across a column gap or down a column."""
    return _prose_columns(body, used) or _runs_across(body) or _flows_down(body, used)


def _prose_columns(body: Cells, used: list[int]) -> bool:
    """Two columns of long text; or two columns that are a list (bullets), prose with side
    heads, or short text without numbers."""
    long = short = numeric = 0
    for c in used:
        cells = [row[c] for row in body if row[c]]
        if not cells:
            continue
        median = sorted(len(t.split()) for t in cells)[len(cells) // 2]
        long += median >= 6
        short += median <= 3
        numeric += sum(is_numeric_cell(t) for t in cells) >= 0.6 * len(cells)
    if long >= 2:
        return True
    if len(used) != 2:
        return False
    first = [row[used[0]] for row in body if row[used[0]]]
    if first and sum(bool(ENUMERATOR.fullmatch(t)) for t in first) >= 0.6 * len(first):
        return True
    return bool(long and not numeric) or (numeric == 0 and short < 2)


def _runs_across(body: Cells) -> bool:
    """Sentences running across a column gap in many rows (three words or more each side,
    going on in lower case)."""
    runs = 0
    for row in body:
        cells = [t for t in row if t]
        for a, b in itertools.pairwise(cells):
            runs += len(a.split()) >= 3 and len(b.split()) >= 3 and b[:1].islower()
    return runs >= max(2, 0.3 * len(body))


def _flows_down(body: Cells, used: list[int]) -> bool:
    """Sentences running down the columns (lines of prose columns read across as rows): a
    cell of three words or more that ends in no stop, and the next cell below it going on in
    lower case, in a fifth of the rows."""
    runs = 0
    for c in used:
        cells = [row[c] for row in body if row[c]]
        for above, below in itertools.pairwise(cells):
            ends = above.rstrip().endswith((".", "!", "?", ":", ";"))
            runs += len(above.split()) >= 3 and not ends and below[:1].islower()
    return runs >= max(2, 0.2 * len(body))


def has_numeric_column(table: Table) -> bool:
    """Whether a column past the first holds numbers in most of its body cells."""
    body = table.rows[table.header_rows :] or table.rows
    for c in range(1, len(table.rows[0])):
        cells = [row[c] for row in body if row[c]]
        if cells and sum(is_number(t.replace(" ", "")) for t in cells) >= 0.6 * len(cells):
            return True
    return False


def _numeric_mark(text: str) -> bool:
    """A number or a dash for one; a lone star is a drawing's mark (a grid of them)."""
    return text != "*" and is_numeric_cell(text)
