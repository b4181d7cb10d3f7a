"""The pieces a document is read into, how they are written as page text, and how a flow of
them is cut into locations.

A converter turns its format into a flow of blocks (headings, paragraphs and list items,
tables); `sections_from_blocks` cuts the flow into sections at the document's top two heading
levels, and cuts any section longer than `max_chars` between blocks (a table between rows, its
header rows repeated). Tables are written exactly as /work/specs/table-text.md says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A location's text stays near a PDF page or two: citations point somewhere findable, and
# chunking (about 1,000 characters) still sees whole paragraphs.
MAX_LOCATION_CHARS = 6000
_UNCLEAN = re.compile(r"^\s|\s$|\s\s|[^\S ]|[\u200b\ufeff\u2060\u00ad]")
_HAS_INVISIBLE = re.compile(r"[\u200b\ufeff\u2060\u00ad]")
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\ufeff\u2060\u00ad"))
_CURRENCY = {"$", "€", "£", "¥", "US$", "C$", "A$", "CHF", "kr", "₹", "₩"}
_NUMBER = re.compile(r"^\(?-?[\d.,]*\d[\d.,]*\)?$")


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Para:
    """One line of page text: a paragraph, a list item ("- x", "1. x"), or a code block."""

    text: str


@dataclass
class Table:
    rows: list[list[str]]
    header_rows: int = 1


Block = Heading | Para | Table


@dataclass
class Section:
    path: list[str]
    lines: list[str] = field(default_factory=list)
    part: int = 1
    chars: int = 0
    has_body: bool = False  # anything but headings

    def add(self, lines: list[str], *, body: bool) -> None:
        self.lines.extend(lines)
        self.chars += sum(len(line) + 1 for line in lines)
        self.has_body = self.has_body or body


def clean(text: str) -> str:
    """Whitespace collapsed to single spaces, ends stripped, invisible characters (zero-width
    space, BOM, word joiner, soft hyphen) removed."""
    # str.translate with a dict and a regex sub cost ~10x split/join on long text; split()
    # splits at exactly what \s matches (str.isspace).
    if _HAS_INVISIBLE.search(text):
        text = text.translate(_INVISIBLE)
    return " ".join(text.split())


def table_lines(table: Table) -> list[str]:
    """The table as pipe-table lines: header rows, the delimiter, body rows. Rows with no
    text are left out."""
    cells = [[_cell(c) for c in row] for row in table.rows]
    head = max(1, sum(1 for row in cells[: table.header_rows] if any(row)))
    rows = _joined_units([row for row in cells if any(row)])
    width = max((len(r) for r in rows), default=0)
    if width == 0:
        return []
    rows = [r + [""] * (width - len(r)) for r in rows]
    head = min(head, len(rows))
    delimiter = "| " + " | ".join(["---"] * width) + " |"
    lines = [_row(r) for r in rows]
    return [*lines[:head], delimiter, *lines[head:]]


def _cell(text: str) -> str:
    if _UNCLEAN.search(text):  # most cells need nothing: one search instead of three passes
        text = clean(text)
    return text.replace("|", "\\|") if "|" in text else text


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _joined_units(rows: list[list[str]]) -> list[list[str]]:
    """A currency sign alone in its cell joins the number to its right; a column emptied that
    way (and empty everywhere else) goes, so a number never loses its unit."""
    emptied: set[int] = set()
    for row in rows:
        for i in range(len(row) - 1):
            if row[i] in _CURRENCY and _NUMBER.match(row[i + 1]):
                row[i + 1] = f"{row[i]} {row[i + 1]}"
                row[i] = ""
                emptied.add(i)
    drop = {i for i in emptied if all(i >= len(r) or not r[i] for r in rows)}
    if not drop:
        return rows
    return [[c for i, c in enumerate(r) if i not in drop] for r in rows]


def block_lines(block: Block) -> list[str]:
    """How one block is written in page text."""
    if isinstance(block, Heading):
        return [f"{'#' * block.level} {block.text}"]
    if isinstance(block, Table):
        return table_lines(block)
    return [block.text]


def sections_from_blocks(
    blocks: list[Block], *, max_chars: int = MAX_LOCATION_CHARS
) -> list[Section]:
    """The flow cut into sections: one per heading of the document's top two levels (a heading
    with nothing under it before the next one stays with it), long ones cut between blocks."""
    levels = sorted({b.level for b in blocks if isinstance(b, Heading)})
    cut_level = levels[min(1, len(levels) - 1)] if levels else 0
    stack: list[tuple[int, str]] = []
    sections = [Section(path=[])]
    section = sections[0]
    for block in blocks:
        if isinstance(block, Para):  # most blocks: one line, added in place
            line = block.text
            if section.chars + len(line) + 1 > max_chars and section.has_body:
                section = _continued(section)
                sections.append(section)
            section.lines.append(line)
            section.chars += len(line) + 1
            section.has_body = True
            continue
        if isinstance(block, Heading):
            level, text = block.level, block.text
            stack = [(lvl, t) for lvl, t in stack if lvl < level] + [(level, text)]
            if level <= cut_level:
                path = [t for lvl, t in stack if lvl <= cut_level]
                if section.has_body:
                    section = Section(path=path)
                    sections.append(section)
                else:
                    section.path = path
        lines = block_lines(block)
        size = sum(len(x) + 1 for x in lines)
        if isinstance(block, Table) and size > max_chars:
            _add_long_table(sections, block, lines, max_chars)
            section = sections[-1]
            continue
        if section.chars + size > max_chars and section.has_body:
            section = _continued(section)
            sections.append(section)
        section.add(lines, body=not isinstance(block, Heading))
    return [s for s in sections if s.lines]


def _continued(section: Section) -> Section:
    return Section(path=section.path, part=section.part + 1)


def _add_long_table(
    sections: list[Section], table: Table, lines: list[str], max_chars: int
) -> None:
    """A table too long for one section: split between rows, header and delimiter repeated."""
    head = lines[: lines.index(next(x for x in lines if x.startswith("| ---"))) + 1]
    head_size = sum(len(x) + 1 for x in head)
    piece: list[str] = []
    piece_size = 0
    for line in lines[len(head) :]:
        budget = max_chars - sections[-1].chars - head_size
        if piece and piece_size + len(line) + 1 > budget:
            sections[-1].add(head + piece, body=True)
            sections.append(_continued(sections[-1]))
            piece, piece_size = [], 0
        piece.append(line)
        piece_size += len(line) + 1
    sections[-1].add(head + piece, body=True)
