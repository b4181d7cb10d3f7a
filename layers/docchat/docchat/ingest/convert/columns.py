"""Columns: whether a page is set in columns (or PDFium ran them into single lines) and the
order in which they are read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from docchat.ingest.convert.glyphs import Gap, Glyphs
from docchat.ingest.convert.page import Line, clusters

_COLUMN_PROBE = 12  # wide lines looked at for columns run together

_COLUMN_MISSES = 8  # wide lines without a column gap that settle it

_COLUMN_PROBE_PAGES = 10  # pages without columns run together after which none are expected


@dataclass
class ColumnProbe:
    """Whether to look for columns run into single lines: a document that has them shows them
    within its first pages; one that does not is not searched on every page."""

    pages: int = 0
    found: bool = False

    def wanted(self) -> bool:
        return self.found or self.pages < _COLUMN_PROBE_PAGES

    def record(self, *, found: bool) -> None:
        self.pages += 1
        self.found = self.found or found


def is_column_gap(gap: Gap, starts: list[float]) -> bool:
    """Whether a gap in a line ends a column rather than a justified word space."""
    if gap.width < 0 or gap.width >= 2.0:
        return True
    return any(abs(gap.next_x - x) <= 3 for x in starts)


def pieces(start: int, end: int, cuts: list[Gap]) -> Iterator[tuple[int, int]]:
    """The spans of the text between `start` and `end` either side of each cut."""
    for cut in cuts:
        yield start, cut.start
        start = cut.end
    yield start, end


def looks_multi_column(lines: list[Line], width: float) -> bool:
    """Whether many lines start well inside the page: text in columns."""
    if len(lines) < 6 or width <= 0:
        return False
    margin = min(line.x for line in lines)
    inner = sum(line.x > margin + 0.25 * width for line in lines)
    return inner >= max(3, 0.15 * len(lines))


def runs_columns_together(
    glyphs: Glyphs, text: str, spans: list[tuple[int, int]], lines: list[Line], width: float
) -> bool:
    """Whether PDFium ran side-by-side columns into single lines all down the page (every line
    then starts at the left margin): several wide lines hold a gap of two type sizes or more.
    Only the first wide lines are looked at, so that a page costs little."""
    wide = [
        (span, line)
        for span, line in zip(spans, lines, strict=True)
        if line.right - line.x > width / 2
    ]
    found = 0
    for probed, (span, line) in enumerate(wide[:_COLUMN_PROBE]):
        if probed - found >= _COLUMN_MISSES:
            return False
        gaps = [gap for gap in glyphs.gaps(text, *span) if gap.width >= 0]
        # Pieces of prose on both sides of a wide gap; a table's cells are narrower.
        starts = [line.x] + [gap.next_x for gap in gaps]
        ends = [gap.before_x for gap in gaps] + [line.right]
        pieces = [end - start for start, end in zip(starts, ends, strict=True)]
        found += any(
            gap.width >= 2.0 and min(pieces[i], pieces[i + 1]) > width / 5
            for i, gap in enumerate(gaps)
        )
        if found >= 3:
            return True
    return False


def column_order(segments: list[Line]) -> list[Line]:
    """Read columns left to right within bands that full-width lines separate."""
    if not segments:
        return segments
    size = max(Counter(s.size for s in segments).most_common(1)[0][0], 1.0)
    starts = column_starts([s.x for s in segments], tolerance=2 * size)
    ordered: list[Line] = []
    band: list[list[Line]] = [[] for _ in starts]
    for segment in sorted(segments, key=lambda s: (-round(s.y), s.x)):
        column = max(i for i, x in enumerate(starts) if x <= segment.x + 2 * size or i == 0)
        spans_next = column + 1 < len(starts) and segment.right > starts[column + 1] + 2 * size
        if spans_next:
            ordered.extend(line for col in band for line in col)
            band = [[] for _ in starts]
            ordered.append(segment)
        else:
            band[column].append(segment)
    ordered.extend(line for col in band for line in col)
    return ordered


def column_starts(xs: list[float], *, tolerance: float, share: float = 0.05) -> list[float]:
    """Left edges shared by at least three pieces of text (and `share` of all): columns."""
    found = clusters(xs, key=float, tolerance=tolerance)
    starts = [min(c) for c in found if len(c) >= max(3, share * len(xs))]
    return starts or [min(xs)]
