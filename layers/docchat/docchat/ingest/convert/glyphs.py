"""PDFium's glyph geometry: a line's size and place, where a line may split (column gaps,
margin notes run into it), footnote marks PDFium put at a line's end."""

from __future__ import annotations

import ctypes
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docchat.ingest.convert.margins import ICON, NOTE_EDGE, looks_like_note
from docchat.ingest.convert.page import (
    BULLET,
    BULLET_MARKS,
    MAX_HEADING,
    NEEDS_CLEANING,
    Line,
    clean,
    size_differs,
)

LINE = re.compile(r"\S(?:[^\r\n]*\S)?")  # a line without its outer spaces

_SPACES = re.compile(r" +")

_SYMBOLIC = 4  # the Symbolic flag of a PDF font descriptor (PDF 32000-1, 9.8.2)

_TRAILING_MARK = re.compile(r" +(\d{1,3}|[*\u2020\u2021]{1,3})$")


def plain_function(name: str, restype: Any, *argtypes: Any) -> Any:
    """A PDFium function bound with plain ctypes types: a third cheaper per call than the
    typed binding, which counts in the loops every page pays (its objects, its lines' glyphs).
    Bound at the address pypdfium2 already loaded, whatever the library's file is called
    (libpdfium.so on Linux, .dylib on macOS). Only for getters that return at once: the
    call keeps the GIL (a tenth cheaper again than releasing and taking it back)."""
    address = ctypes.cast(getattr(pdfium_c, name), ctypes.c_void_p).value
    assert address is not None, f"pypdfium2 binds {name}"
    return ctypes.PYFUNCTYPE(restype, *argtypes)(address)


_LOOSE_BOX = plain_function(
    "FPDFText_GetLooseCharBox", ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p
)
_FONT_WEIGHT = plain_function("FPDFText_GetFontWeight", ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
_IS_GENERATED = plain_function("FPDFText_IsGenerated", ctypes.c_int, ctypes.c_void_p, ctypes.c_int)


def text_by_glyph(textpage: pdfium.PdfTextPage, count: int) -> str:
    """The page's text with exactly one character per PDFium glyph index."""
    unicode = pdfium_c.FPDFText_GetUnicode
    raw = textpage.raw
    chars = []
    for index in range(count):
        code = unicode(raw, index)
        valid = 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF
        chars.append(chr(code) if valid else " ")
    return "".join(chars)


def plain_lines(text: str) -> Iterator[str]:
    for match in LINE.finditer(text):
        line = clean(match.group())
        if line.strip():
            yield line


class Glyphs:
    """Per-glyph geometry through PDFium's C API: one call per glyph asked about."""

    def __init__(self, textpage: pdfium.PdfTextPage) -> None:
        self._raw = textpage.raw
        self._handle = ctypes.cast(textpage.raw, ctypes.c_void_p).value
        self._rect = pdfium_c.FS_RECTF()
        self._rect_at = ctypes.addressof(self._rect)
        # The boxes of the words of a page that table detection read: the lines read after it
        # (without the tables' words) take theirs from here.
        self._kept: dict[int, tuple[float, float, float, float]] = {}

    def box(self, index: int) -> tuple[float, float, float, float]:
        """The glyph's loose box (left, bottom, right, height): the font's full height, so
        every glyph of one font and size gets the same bottom and height."""
        found = self._kept.get(index)
        if found is not None:
            return found
        rect = self._rect
        _LOOSE_BOX(self._handle, index, self._rect_at)
        return rect.left, rect.bottom, rect.right, rect.top - rect.bottom

    def kept_box(self, index: int) -> tuple[float, float, float, float]:
        """`box`, kept for the lines read later."""
        found = self._kept[index] = self.box(index)
        return found

    def angle(self, index: int) -> float:
        """The glyph's angle in radians, clockwise (negative where PDFium has none)."""
        return float(pdfium_c.FPDFText_GetCharAngle(self._raw, index))

    def line(self, text: str, start: int, end: int) -> Line:
        x, y, _right, size = self.box(start)
        _left, y_end, right, _height = self.box(end - 1)
        # A bullet is set in a font of its own: the line's size and weight are its text's.
        bullet = BULLET.match(text, start, end) if text[start] in BULLET_MARKS else None
        first = start + len(bullet.group()) if bullet and bullet.end() < end else start
        if first != start:
            size = self.box(first)[3]
        # Only short lines can be headings; a long line's weight is never asked for.
        handle = self._handle
        bold = end - start <= MAX_HEADING and _FONT_WEIGHT(handle, first) >= 600 <= _FONT_WEIGHT(
            handle, end - 1
        )
        content = text[start:end]
        if NEEDS_CLEANING.search(content):
            content = clean(content)
        if bullet and content[0].isascii() and self._symbolic(start):
            content = "•" + content[1:]  # a symbol font's bullet that PDFium reads as "!"
        return Line(content.strip(), round(size, 1), bold, x, y, right, y_end)

    def _symbolic(self, index: int) -> bool:
        """Whether the glyph's font is a symbol font (Wingdings, WP Typographic Symbols), whose
        character codes say nothing of the glyph drawn."""
        flags = ctypes.c_int()
        pdfium_c.FPDFText_GetFontInfo(self._raw, index, None, 0, ctypes.byref(flags))
        return bool(flags.value & _SYMBOLIC)

    def without_mark(self, text: str, start: int, end: int) -> tuple[int, int]:
        """The line without a footnote mark that PDFium put at its end though it is set back
        in the line, raised and smaller ("… services that 2" / "are used", the "2" after a
        word further left): it would read as a word of the sentence."""
        if not (text[end - 1].isdigit() or text[end - 1] in "*\u2020\u2021"):
            return start, end  # most lines: no regex run over them
        tail = _TRAILING_MARK.search(text, max(start, end - 8), end)
        if tail is None or tail.start() == start:
            return start, end
        mark, before = self.box(tail.start(1)), self.box(tail.start() - 1)
        smaller = mark[3] < 0.75 * before[3]
        back_and_up = mark[0] < before[0] and mark[1] > before[1]
        return (start, tail.start()) if smaller and back_and_up else (start, end)

    def note_cuts(self, text: str, start: int, end: int) -> list[Gap]:
        """Where a margin note set in another size or weight runs into the line's text, at its
        start or its end, apart from it by more than a word space: the space between them."""
        # Most lines neither start nor end with capitals or an icon: no glyph is asked about.
        if text[start] not in NOTE_EDGE and text[end - 1] not in NOTE_EDGE:
            return []
        head, tail = text[start : start + 3], text[max(start, end - 3) : end]
        if not (head.isupper() or tail.isupper() or ICON.match(head) or ICON.match(tail[-1])):
            return []
        line = text[start:end]
        if not (
            looks_like_note(line.partition(" ")[0]) or looks_like_note(line.rpartition(" ")[2])
        ):
            return []
        if not self._style_differs(start, end - 1):
            return []
        spaces = list(_SPACES.finditer(text, start, end))
        for space in (spaces[:1] + spaces[-1:]) if spaces else []:
            before, after = space.start() - 1, space.end()
            left, right = self.box(before), self.box(after)
            size = max(left[3], right[3], 1.0)
            apart = not -size <= right[0] - left[2] < 0.45 * size
            if not apart or not self._style_differs(before, after):
                continue
            leading = space is spaces[0]
            note = text[start : space.start()] if leading else text[space.end() : end]
            # One icon opening a line is its bullet ("! The provider must…" in the DMCA).
            if looks_like_note(note) and not (leading and len(note) == 1):
                return [Gap(space.start(), space.end(), right[0], 0.0)]
        return []

    def _style_differs(self, one: int, other: int) -> bool:
        if size_differs(self.box(one)[3], self.box(other)[3]):
            return True
        bold: bool = _FONT_WEIGHT(self._handle, one) >= 600
        other_bold: bool = _FONT_WEIGHT(self._handle, other) >= 600
        return bold != other_bold

    def gaps(self, text: str, start: int, end: int) -> list[Gap]:
        """Places in a line where a column may end: wide gaps and jumps back to the left."""
        size = max(self.box(start)[3], 1.0)
        found = []
        for match in _SPACES.finditer(text, start, end):
            if not _IS_GENERATED(self._handle, match.start()):
                continue  # a space the PDF itself contains separates words, not columns
            before = self.box(match.start() - 1)[2]
            after = self.box(match.end())[0]
            if not -size < after - before < 1.1 * size:
                found.append(
                    Gap(match.start(), match.end(), after, (after - before) / size, before)
                )
        return found


@dataclass(frozen=True)
class Gap:
    start: int
    end: int
    next_x: float  # where the text after the gap begins
    width: float  # in font sizes; negative for a jump back to the left
    before_x: float = 0.0  # where the text before the gap ends
