"""Words with their boxes, the visual lines they stand on and the segments that wide gaps
split a line into: what both table detectors read. Coordinates are PDF points, origin at the
bottom-left, in an upright frame (`Frame`) where the page's text runs left to right."""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docchat.ingest.convert.glyphs import Glyphs

BBox = tuple[float, float, float, float]  # left, bottom, right, top

SEGMENT_GAP = 0.9  # a gap between words wider than this many type sizes splits a line
NUMBER = re.compile(
    r"[(\[]?[-\u2212\u2013\u2014+]?[$€£¥]?\s?[-\u2212\u2013]?(\d{1,3}(,\d{3})+|\d+)([.,]\d+)?\s?[%‰]?[)\]]?\*?"
)
DASHES = frozenset(
    [
        "-",
        "\u2013",
        "\u2014",
        "\u2212",
        "--",
        "n/a",
        "N/A",
        "NA",
        "n.a.",
        "*",
        "x",
        "…",
        "...",
        "\u2013%",
    ]
)
CURRENCY = frozenset(["$", "€", "£", "¥", "US$", "R$", "Rs.", "Rs"])
YEAR = re.compile(r"(19|20)\d\d")
LEADER = re.compile(r"(\.\s?){4,}|(…\s?){2,}|(_\s?){4,}")  # a table of contents' dot leaders
ENUMERATOR = re.compile(
    r"[•▪◦○●■□❏➢►\-\u2013\u2014*]|\(?\d{1,2}[.)]|\(?[a-zA-Z][.)]|\(?[ivx]{1,4}[.)]"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff\u00ad]")
_WORD = re.compile(r"\S+")
_ANGLE_SAMPLES = 40
_X0 = operator.attrgetter("x0")


@dataclass(slots=True)
class Word:
    """A run of non-space characters with its box; `start`/`end` are PDFium glyph indices (for
    OCR'd pages: the index of the OCR line, and one past it)."""

    text: str
    x0: float
    x1: float
    bottom: float  # the font's box: one bottom per font and size on a baseline
    top: float
    start: int
    end: int

    @property
    def size(self) -> float:
        """The height of the font's box."""
        return self.top - self.bottom

    @property
    def xc(self) -> float:
        """The horizontal centre."""
        return (self.x0 + self.x1) / 2

    @property
    def yc(self) -> float:
        """The vertical centre."""
        return (self.bottom + self.top) / 2


@dataclass
class WordLine:
    """Words on one baseline, left to right, and the segments wide gaps split them into."""

    words: list[Word]
    segments: list[list[Word]] = field(default_factory=list)

    @property
    def y(self) -> float:
        """The baseline (bottom of the first word's box)."""
        return self.words[0].bottom

    @functools.cached_property
    def size(self) -> float:
        """The largest type size on the line (its words do not change once it is built)."""
        return max(w.size for w in self.words)

    @property
    def x0(self) -> float:
        """Where the line starts."""
        return self.words[0].x0

    @property
    def x1(self) -> float:
        """Where the line ends."""
        return self.words[-1].x1


class PlacedWords:
    """A page's words with their centres in arrays: the words inside a box are picked without
    a Python loop over the page (a filing's page can hold dozens of grids of rules)."""

    def __init__(self, words: list[Word]) -> None:
        self.words = words
        self._xc = np.array([w.xc for w in words], dtype=np.float64)
        self._yc = np.array([w.yc for w in words], dtype=np.float64)

    def within(self, left: float, bottom: float, right: float, top: float) -> list[Word]:
        """The words whose centre lies in the box (edges included), in page order."""
        xc, yc = self._xc, self._yc
        inside = (left <= xc) & (xc <= right) & (bottom <= yc) & (yc <= top)
        return [self.words[i] for i in np.flatnonzero(inside).tolist()]


@functools.lru_cache(maxsize=8192)
def is_number(text: str) -> bool:
    """A number as tables print it ("1,234", "(12.5)", "$5", "7%") or a dash standing for one."""
    # Cached: both detectors ask of the same words again and again (segments, cells, rows).
    return text in DASHES or bool(NUMBER.fullmatch(text))


def is_numeric_cell(text: str) -> bool:
    """A cell whose text is a number, or ends with one."""
    squeezed = text.replace(" ", "")
    return bool(squeezed) and (is_number(squeezed) or is_number(text.split()[-1]))


def segment_text(words: Iterable[Word]) -> str:
    """The words' text, one space apart."""
    return " ".join(w.text for w in words)


def cell_text(words: Sequence[Word]) -> str:
    """A cell's text: its lines top to bottom, each left to right, joined with a space."""
    if len(words) == 1:
        return words[0].text
    return " ".join(segment_text(line) for line in _baselines(words))


def box_of(words: Iterable[Word]) -> BBox:
    """The box round the words."""
    found = list(words)
    return (
        min(w.x0 for w in found),
        min(w.bottom for w in found),
        max(w.x1 for w in found),
        max(w.top for w in found),
    )


def glyph_ranges(words: Iterable[Word]) -> list[tuple[int, int]]:
    """The words' glyph index ranges, touching ranges merged."""
    ranges: list[tuple[int, int]] = []
    for w in sorted(words, key=lambda w: w.start):
        if ranges and w.start <= ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], w.end))
        else:
            ranges.append((w.start, w.end))
    return ranges


def visual_lines(words: Iterable[Word]) -> list[WordLine]:
    """Words grouped by baseline (top of the page first), each line left to right."""
    lines = [WordLine(line, segments(line)) for line in _baselines(words)]
    return lines


def _baselines(words: Iterable[Word]) -> list[list[Word]]:
    """Words grouped by baseline, top of the page first, each group left to right."""
    lines: list[list[Word]] = []
    current: list[Word] = []
    first_bottom = first_size = 0.0  # current[0]'s, read once per line: this runs per cell
    for w in sorted(words, key=lambda w: -w.bottom):
        size = w.top - w.bottom
        if current and first_bottom - w.bottom > 0.3 * max(first_size, size, 1.0):
            lines.append(sorted(current, key=_X0))
            current = []
        if not current:
            first_bottom, first_size = w.bottom, size
        current.append(w)
    if current:
        lines.append(sorted(current, key=_X0))
    return lines


def segments(words: list[Word]) -> list[list[Word]]:
    """A line's words split at gaps wider than SEGMENT_GAP type sizes (and between two numbers
    set apart: "86.2 13.8" is two cells)."""
    found: list[list[Word]] = []
    for w in words:
        if found:
            prev = found[-1][-1]
            prev_size = prev.top - prev.bottom
            size = max(min(prev_size, w.top - w.bottom), 1.0)
            gap = w.x0 - prev.x1
            if gap <= SEGMENT_GAP * size and not (
                gap > 0.45 * max(prev_size, 1.0) and is_number(prev.text) and is_number(w.text)
            ):
                found[-1].append(w)
                continue
        found.append([w])
    return found


def separators(lines: Sequence[WordLine], left: float, right: float) -> list[tuple[float, float]]:
    """x ranges that no segment of the lines covers (one line in ten may cross), with text on
    both sides and at least a quarter of the type size wide: the gaps between columns."""
    lo = math.floor(left) - 1
    length = math.ceil(right) + 2 - lo + 1
    # How many segments cover each point: +1 where one starts, -1 past its end, summed up.
    firsts: list[int] = []
    pasts: list[int] = []
    for line in lines:
        for seg in line.segments:
            firsts.append(min(max(math.floor(seg[0].x0) - lo, 0), length))
            pasts.append(min(max(math.ceil(seg[-1].x1) - lo, 0) + 1, length))
    delta = np.zeros(length + 1, dtype=np.int32)
    begin, end = np.array(firsts, dtype=np.intp), np.array(pasts, dtype=np.intp)
    kept = begin < end
    np.add.at(delta, begin[kept], 1)
    np.add.at(delta, end[kept], -1)
    cover = np.cumsum(delta[:-1], dtype=np.int32)
    texted = np.flatnonzero(cover > len(lines) // 10)
    if not texted.size:
        return []
    free = np.flatnonzero(cover[texted[0] : texted[-1] + 1] <= len(lines) // 10) + texted[0]
    if not free.size:
        return []
    breaks = np.flatnonzero(np.diff(free) > 1)
    starts = np.concatenate(([free[0]], free[breaks + 1]))
    ends = np.concatenate((free[breaks], [free[-1]]))
    size = float(np.median([line.size for line in lines]))
    return [
        (float(a + lo), float(b + lo))
        for a, b in zip(starts, ends, strict=True)
        if b - a >= 0.25 * size
    ]


class Frame:
    """Quarter turns that make the page's text run left to right: PDFium gives glyph boxes in
    the page's user space, where a landscape table on a rotated page runs up or down."""

    def __init__(self, turns: int, width: float, height: float) -> None:
        self.turns = turns % 4
        self.width = width
        self.height = height

    def point(self, x: float, y: float, *, back: bool = False) -> tuple[float, float]:
        """A point turned upright (or `back` to the page's space)."""
        width, height = self.width, self.height
        if self.turns == 0:
            return x, y
        if self.turns == 2:
            return width - x, height - y
        if self.turns == 3:  # text runs up the page
            return (width - y, x) if back else (y, width - x)
        return (y, height - x) if back else (height - y, x)  # text runs down the page

    def box(self, box: BBox, *, back: bool = False) -> BBox:
        """A box turned upright (or `back`)."""
        x0, y0 = self.point(box[0], box[1], back=back)
        x1, y1 = self.point(box[2], box[3], back=back)
        return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)


def text_frame(textpage: pdfium.PdfTextPage, text: str, page: pdfium.PdfPage) -> Frame:
    """The quarter turn most of the page's glyphs are set at (PDFium's angle: clockwise),
    from about forty glyphs across the page."""
    left, bottom, right, top = page.get_mediabox()
    votes = [0, 0, 0, 0]
    angle = pdfium_c.FPDFText_GetCharAngle
    for i in range(0, len(text), max(1, len(text) // _ANGLE_SAMPLES)):
        if not text[i].isspace() and (turn := _quarter(angle(textpage.raw, i))) is not None:
            votes[turn] += 1
    turns = max(range(4), key=lambda k: votes[k]) if any(votes) else 0
    return Frame(turns, right - left, top - bottom)


def _quarter(angle: float) -> int | None:
    return round(angle / (math.pi / 2)) % 4 if angle >= 0 else None


def page_words(glyphs: Glyphs, text: str, frame: Frame) -> list[Word]:
    """Each run of non-space characters of the page's text with the box from its first and
    last glyph (asked of `glyphs`, which keeps them for the converter's lines), in `frame`.
    On a turned page, words set at another angle are left to the text."""
    words = []
    # Most pages hold no control character: their words are not searched one by one.
    control = bool(_CONTROL.search(text)) or "\ufffe" in text or "\x02" in text
    kept_box = glyphs.kept_box
    for match in _WORD.finditer(text):
        start, end = match.span()
        token = match.group()
        if control and (_CONTROL.search(token) or "\ufffe" in token or "\x02" in token):
            token = _CONTROL.sub("", token).replace("\ufffe", "-").replace("\x02", "-")
            if not token:
                continue
        first = kept_box(start)
        last = kept_box(end - 1) if end - 1 != start else first
        left, bottom, right, height = first
        if height <= 0.1:
            continue
        top = bottom + height
        if frame.turns:
            if _quarter(glyphs.angle(start)) != frame.turns:
                continue
            head = frame.box((left, bottom, right, top))
            tail = frame.box((last[0], last[1], last[2], last[1] + last[3]))
            x0, x1, bottom, top = min(head[0], tail[0]), max(head[2], tail[2]), head[1], head[3]
        else:
            x0, x1 = left, last[2]
            if x1 < x0:  # right to left, or an odd order: the union
                x0, x1 = min(x0, last[0]), max(right, x1)
        words.append(Word(token, x0, x1, bottom, top, start, end))
    return words
