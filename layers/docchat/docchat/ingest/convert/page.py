"""What conversion builds a page from: lines with their place and size, paragraphs, the page's
raw reading; and the small text helpers every step shares."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

_T = TypeVar("_T")

# PDFium marks a hyphen it found at a line break with U+FFFE (or U+0002).
_SOFT_HYPHENS = "\ufffe\x02\xad"

NEEDS_CLEANING = re.compile(r"[\x00-\x1f\x7f\xad\ufffe\ufeff⟦⟧]")

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\ufeff]")

MAX_HEADING = 120  # characters
_TABLE_MARKUP = re.compile(r"^\|( --- \|)+$|(?<!\\)\|", re.MULTILINE)  # delimiter row, cell bars


@dataclass(slots=True)
class Line:
    """One line of text with its first glyph's size and place (PDF points, origin bottom-left)."""

    text: str
    size: float
    bold: bool
    x: float
    y: float
    right: float
    y_end: float = 0.0  # baseline of the last glyph: PDFium joins hyphenated lines itself
    table: bool = False  # a table in markdown (one row a line), its box's top at `y`


@dataclass(slots=True)
class Paragraph:
    """Lines read as one paragraph (or a heading, at `heading_level`)."""

    lines: list[Line]
    heading_level: int = 0

    @property
    def size(self) -> float:
        return self.lines[0].size

    @property
    def text(self) -> str:
        return join_lines([line.text for line in self.lines])

    @property
    def table(self) -> bool:
        """Whether the paragraph is a table (always a paragraph of its own)."""
        return self.lines[0].table


@dataclass(slots=True)
class RawPage:
    """A page as read, before the document-wide steps (running lines, headings) shape it."""

    lines: list[Line]
    chars: int
    image_only: bool
    # Built from `lines` once the running headers and footers are gone.
    paragraphs: list[Paragraph] = field(default_factory=list)
    ocr: bool = False
    # The page's filled-in form fields, after its text.
    fields: list[Paragraph] = field(default_factory=list)
    # The page needs OCR that `OcrResults` did not bring (read elsewhere, later).
    ocr_pending: bool = False


def text_chars(lines: list[Line]) -> int:
    """The characters of the lines' text, spaces (and a table's markup) aside."""
    return sum(
        len("".join(_TABLE_MARKUP.sub("", line.text).split()))
        if line.table
        else len(line.text) - line.text.count(" ")
        for line in lines
    )


# A list item's bullet ("!" is how PDFium reads a symbol font's bullet when the line is not
# measured glyph by glyph).
BULLET_MARKS = "•▪◦○●■□❏➢►!"
BULLET = re.compile(rf"[{BULLET_MARKS}]\s")


def size_differs(a: float, b: float) -> bool:
    """Whether two type sizes differ by more than half."""
    return max(a, b) > 1.5 * max(min(a, b), 0.1)


def clean(line: str) -> str:
    """Keep PDFium's hyphen marker as a trailing '\x02' and drop other control characters."""
    hyphenated = line.rstrip().endswith(tuple(_SOFT_HYPHENS))
    line = CONTROL.sub("", line).replace("\xad", "").replace("⟦", "[").replace("⟧", "]")
    return line.rstrip() + "\x02" if hyphenated else line


def join_lines(lines: list[str]) -> str:
    out = ""
    for line in lines:
        if not out:
            out = line
        elif out.endswith("\x02") or (
            out.endswith("-") and out[-2:-1].isalpha() and line[:1].islower()
        ):
            out = out.rstrip("\x02-") + line
        else:
            out = f"{out} {line}"
    return out.replace("\x02", "-")


def clusters(
    items: Iterable[_T], *, key: Callable[[_T], float], tolerance: float
) -> Iterator[list[_T]]:
    """The items sorted by `key`, in runs whose keys lie within `tolerance` of the run's first."""
    run: list[_T] = []
    for item in sorted(items, key=key):
        if run and key(item) - key(run[0]) <= tolerance:
            run.append(item)
            continue
        if run:
            yield run
        run = [item]
    if run:
        yield run
