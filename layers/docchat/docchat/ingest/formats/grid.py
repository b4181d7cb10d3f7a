"""A table's grid as filings lay it out, read as a table (HTML; EDGAR's filings above all).

A filing's statement sets each amount in three cells or more: the currency sign, the amount,
and what closes it (")", "%"), between empty cells that only space the columns; a year's heading
spans all of them ("FISCAL 2025" over "$", "6,586" and a spacer). Read cell by cell, a row is
"| TOTAL REVENUES |  |  |  | $ |  | 6,586 |  |" under headings that stand over the "$" cells.
Checked on 25 EDGAR filings of 15 companies (edgartools' test fixtures) and the HTML tables of
tests/unit/test_formats.py."""

from __future__ import annotations

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
