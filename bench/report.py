"""The table every bench script prints: one row per measurement, columns padded to fit, a rule
under the header and after the last row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def table(header: Any, rows: Sequence[Any]) -> str:
    """`header` and `rows` (dataclass instances of one kind, every field a string) as text."""
    cells = [[str(v) for v in vars(row).values()] for row in (header, *rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells]
    rule = "-" * len(lines[0])
    return "\n".join([lines[0], rule, *lines[1:], rule])
