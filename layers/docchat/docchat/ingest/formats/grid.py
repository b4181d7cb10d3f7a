"""A table's grid as filings lay it out, read as a table (HTML; EDGAR's filings above all).

A filing's statement sets each amount in three cells or more: the currency sign, the amount,
and what closes it (")", "%"), between empty cells that only space the columns; a year's heading
spans all of them ("FISCAL 2025" over "$", "6,586" and a spacer). Read cell by cell, a row is
"| TOTAL REVENUES |  |  |  | $ |  | 6,586 |  |" under headings that stand over the "$" cells.
Checked on 25 EDGAR filings of 15 companies (edgartools' test fixtures) and the HTML tables of
tests/unit/test_formats.py."""

from __future__ import annotations

import re

# A cell that holds only a currency sign, or only what closes an amount.
_SIGN = frozenset("$€£¥")
_CLOSING = frozenset([")", "%", "%)", ")%"])


def compact(grid: list[list[str]], spans: dict[tuple[int, int], int]) -> list[list[str]]:
    """`grid` (rows of cell texts, a spanning cell's text in its first cell; `spans`: each
    spanning cell's (row, column) and how many columns it spans) with a currency sign in a cell
    of its own joined to the amount on its right ("$ 6,586"), a ")" or "%" to the amount on
    its left, a heading spanning columns moved to the column of its span that holds the
    values below it, columns empty in every row left out, and neighbouring columns that no
    row fills both of made one (a "$" row's amount one cell right of the others'), the rows'
    labels apart. A table that no row leaves a column empty in keeps its grid."""
    for row in grid:
        for c, text in enumerate(row):
            if text in _SIGN:
                after = next((k for k in range(c + 1, len(row)) if row[k]), None)
                if after is not None and row[after][0] in "0123456789(":
                    row[after], row[c] = f"{text} {row[after]}", ""
            elif text in _CLOSING:
                before = next((k for k in range(c - 1, -1, -1) if row[k]), None)
                if before is not None and row[before][-1].isdigit():
                    row[before], row[c] = row[before] + text, ""
    # How many rows fill each column, kept as headings move: counting again for each spanning
    # cell took time in rows times cells, and a filing's tables span nearly every cell.
    filled = [sum(1 for row in grid if row[k]) for k in range(len(grid[0]) if grid else 0)]
    for (r, c), colspan in spans.items():
        row = grid[r]
        held = [filled[k] - bool(row[k]) for k in range(c, min(c + colspan, len(row)))]
        if held and held[0] == 0 and max(held) > 0:
            best = c + held.index(max(held))
            filled[best] -= bool(row[best])
            filled[c] -= bool(row[c])
            row[best], row[c] = row[c], ""
            filled[best] += bool(row[best])
    columns = [list(column) for column in zip(*grid, strict=True) if any(column)]
    if not columns:
        return []
    merged = columns[:1]  # the rows' labels stay a column of their own
    for column in columns[1:]:
        last = merged[-1]
        if len(merged) > 1 and all(not a or not b for a, b in zip(last, column, strict=True)):
            merged[-1] = [a or b for a, b in zip(last, column, strict=True)]
        else:
            merged.append(column)
    return [list(row) for row in zip(*merged, strict=True)]


# A cell holding a figure: a number that is not a year alone ("2025" heads a column; "6,586",
# "$ (2,439)", "12.5 %" are values; "January 31," is a heading).
_FIGURE = re.compile(r"[\d,]*\.?\d+")
_YEAR = re.compile(r"(?:19|20)\d\d")
# Header rows a grid may have before its values start.
MAX_HEADER_ROWS = 4


def header_rows(grid: list[list[str]]) -> int:
    """How many of a grid's leading rows head its columns, for a table that does not say
    (no <thead> or <th>; EDGAR's statements set every cell as <td>): those before the first row
    that holds a figure after its label, up to one that holds nothing after it (a group's
    label, "Walmart U.S.", opens the body); a table of words, its first row. A statement's
    "| | Fiscal Years Ended January 31, |" and "| (Amounts in millions) | 2025 | 2024 |" both
    head it; before, the years row read as the body's first, and no amount was under its
    year."""
    leading = grid[: MAX_HEADER_ROWS + 1]
    first = next((r for r, row in enumerate(leading) if any(map(_figure, row[1:]))), None)
    if first is None:
        return 1  # a table of words: its first row heads it
    head = 0
    for row in grid[:first]:
        if not any(row[1:]):
            break
        head += 1
    return max(head, 1)


def _figure(cell: str) -> bool:
    text = "".join(cell.split()).strip("$€£¥()%\u2014\u2013-")
    return bool(_FIGURE.fullmatch(text)) and not _YEAR.fullmatch(text)
