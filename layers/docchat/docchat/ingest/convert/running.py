"""Running headers and footers and bare page numbers: lines that many pages repeat at the
same height, numbers and dates aside."""

from __future__ import annotations

import re
from collections import Counter

from docchat.ingest.convert.page import Line, RawPage, clusters

# Books set one header on left-hand pages and another on right-hand ones: each is on half.
_RUNNING_SHARE = 0.4

_RUNNING_LINES = 2  # rows at the top and at the bottom of a page where headers and footers sit

_MONTHS = re.compile(
    r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|\d+", re.IGNORECASE
)

_ROMAN = r"(?=[ivxlcdm])m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})"

_DASH = r"[-\u2013\u2014]"

_PAGE_NUMBER = re.compile(
    rf"(page|p\.|seite|pág\.?)?\s*({_DASH}|[(\[])?\s*(\d{{1,4}}|{_ROMAN})\s*({_DASH}|[)\]])?"
    r"(\s*(of|/|von|de)\s*\d{1,4})?",
    re.IGNORECASE,
)

_NUMBER_WORDS = {"0", "page", "of", "p"}


def running_key(text: str) -> str:
    """What a running header or footer keeps from page to page: its numbers and month names
    (page numbers, dates) may change, and so may the dashes and spaces around them."""
    words = re.sub(r"[\W_]+", " ", _MONTHS.sub("0", text.casefold())).split()
    # A page number at either end moves from one end to the other on facing pages.
    while words and words[0] in _NUMBER_WORDS:
        words.pop(0)
    while words and words[-1] in _NUMBER_WORDS:
        words.pop()
    return " ".join(words)


def drop_running_lines(raw_pages: list[RawPage]) -> list[list[Line]]:
    """Remove page headers and footers (lines that many pages repeat at the same height near the
    top or the bottom, whatever their numbers and dates) and bare page numbers; return the
    lines removed from each page."""
    body = _line_body_size(raw_pages)
    edges = [_edge_lines(page.lines) for page in raw_pages]
    running = {id(line) for line in running_lines(edges, body=body)}
    removed: list[list[Line]] = []
    for page, edge in zip(raw_pages, edges, strict=True):
        numbers = [line for line in edge if not body or line.size < body * 1.15]
        running.update(id(line) for line in numbers if _is_page_number(line, page.lines))
        kept = [line for line in page.lines if id(line) not in running]
        if not kept:  # a page that says nothing but its header is left as it is
            removed.append([])
            continue
        removed.append([line for line in page.lines if id(line) in running])
        page.lines = kept
    return removed


def running_lines(edges: list[list[Line]], *, body: float) -> list[Line]:
    """The lines among each page's edge lines that 40% of the pages (at least 3) repeat at
    one height, numbers and dates aside."""
    pages = len(edges)
    if pages < 3:
        return []
    by_text: dict[str, list[tuple[float, int, Line]]] = {}
    for number, lines in enumerate(edges):
        for line in lines:
            if body and line.size >= body * 1.15:
                # Text that only its numbers tell apart from other pages' ("Chapter 3") is the
                # document's, not a running header: headers are no larger than the body text.
                continue
            key = running_key(line.text)
            if re.search(r"[^\W\d_]", key):  # numbers alone: a table's last row, say
                by_text.setdefault(key, []).append((line.y, number, line))
    found: list[Line] = []
    for repeated in by_text.values():
        for cluster in clusters(repeated, key=lambda item: item[0], tolerance=8.0):
            if len({number for _, number, _ in cluster}) >= max(3, _RUNNING_SHARE * pages):
                found.extend(line for _, _, line in cluster)
    return found


def _edge_lines(lines: list[Line]) -> list[Line]:
    """The lines in the top and the bottom rows of a page (first and last lines without
    geometry); a table is none of them."""
    lines = [line for line in lines if not line.table]
    if not any(line.size for line in lines):
        return lines[:_RUNNING_LINES] + lines[_RUNNING_LINES:][-_RUNNING_LINES:]
    rows = list(clusters(lines, key=lambda line: -line.y, tolerance=2.0))
    edge = rows[:_RUNNING_LINES] + rows[_RUNNING_LINES:][-_RUNNING_LINES:]
    return [line for row in edge for line in row]


def _is_page_number(line: Line, lines: list[Line]) -> bool:
    """A page number alone in the top or the bottom row, set apart from the text."""
    if not _PAGE_NUMBER.fullmatch(line.text) or not any(c.isalnum() for c in line.text):
        return False
    others = [other.y for other in lines if other is not line and abs(other.y - line.y) > 2]
    if not others:  # all the page says: keep it
        return False
    if not line.size:
        return True
    clear = 1.5 * line.size
    return all(y > line.y + clear for y in others) or all(y < line.y - clear for y in others)


def _line_body_size(raw_pages: list[RawPage]) -> float:
    """The font size most of the text has (0 without text)."""
    weights: Counter[float] = Counter()
    for page in raw_pages:
        for line in page.lines:
            weights[line.size] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0
