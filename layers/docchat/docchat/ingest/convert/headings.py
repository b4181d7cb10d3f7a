"""Headings: from the PDF's outline where it has one, else from type size and weight."""

from __future__ import annotations

import logging
import re
from collections import Counter

import pypdfium2 as pdfium

from docchat.ingest.convert.page import BULLET, CONTROL, MAX_HEADING, Line, Paragraph, RawPage

_MAX_OUTLINE_ITEMS = 10_000

_MAX_LEVEL = 3


class _DeeperSkipped(logging.Filter):
    """pypdfium2 warns, on stderr, each time `get_toc` stops at `max_depth` above a deeper
    entry; we stop there on purpose, so an ingest printed it for most 10-Ks."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Maximum recursion depth")


logging.getLogger("pypdfium2._helpers.document").addFilter(_DeeperSkipped())


def outline_by_page(
    document: pdfium.PdfDocument, count: int
) -> dict[int, list[tuple[int, str, float | None]]]:
    """Outline entries as {page index: [(level, title, y)]}; empty when the PDF has no outline."""
    by_page: dict[int, list[tuple[int, str, float | None]]] = {}
    try:
        # Deeper entries would all be level-3 headings; resolving each page costs time.
        items = document.get_toc(max_depth=_MAX_LEVEL)
        for n, item in enumerate(items):
            if n >= _MAX_OUTLINE_ITEMS:
                break
            dest = item.get_dest()
            title = CONTROL.sub("", item.get_title() or "").strip()
            index = dest.get_index() if dest else None
            if not title or index is None or not 0 <= index < count:
                continue
            _mode, view = dest.get_view()
            y = view[1] if len(view) >= 2 and view[1] else None
            by_page.setdefault(index, []).append((min(item.level + 1, _MAX_LEVEL), title, y))
    except pdfium.PdfiumError:
        return {}
    return by_page


def mark_outline_headings(
    raw_pages: list[RawPage], outline: dict[int, list[tuple[int, str, float | None]]]
) -> None:
    for index, entries in outline.items():
        page = raw_pages[index]
        for level, title, y in entries:
            match = _find_title(page.paragraphs, title)
            if match is not None:
                match.heading_level = level
                continue
            line = Line(title, 0.0, False, 0.0, y or 0.0, 0.0)
            at = _insert_position(page.paragraphs, y)
            page.paragraphs.insert(at, Paragraph([line], heading_level=level))


_NON_WORD = re.compile(r"[\W_]+")

_NUMBERING = re.compile(r"^(chapter|section|part|appendix)?[0-9ivxlcA-Z]{0,6}")


def _key(text: str) -> str:
    return _NON_WORD.sub("", text.casefold())


def _find_title(paragraphs: list[Paragraph], title: str) -> Paragraph | None:
    wanted = _key(title)
    if not wanted:
        return None
    for paragraph in paragraphs:
        if paragraph.heading_level or paragraph.table:
            continue
        first = _key(paragraph.lines[0].text)
        whole = first if len(paragraph.lines) == 1 else _key(paragraph.text)
        for candidate in (first, whole):
            # The title ends the key, numbered or not: most paragraphs are passed over here.
            if not candidate.endswith(wanted):
                continue
            if candidate == wanted or _NUMBERING.sub("", candidate) == wanted:
                if candidate == whole or len(paragraph.lines) == 1:
                    return paragraph
                return _split_first_line(paragraphs, paragraph)
    return None


def _split_first_line(paragraphs: list[Paragraph], paragraph: Paragraph) -> Paragraph:
    """A heading run into its paragraph's first line becomes a paragraph of its own."""
    heading = Paragraph([paragraph.lines[0]])
    paragraph.lines = paragraph.lines[1:]
    paragraphs.insert(paragraphs.index(paragraph), heading)
    return heading


def _insert_position(paragraphs: list[Paragraph], y: float | None) -> int:
    if y is None:
        return 0
    for i, paragraph in enumerate(paragraphs):
        if paragraph.lines[0].y <= y + 1:
            return i
    return len(paragraphs)


def _body_size(raw_pages: list[RawPage]) -> float:
    """The font size most of the text has (0 without text)."""
    weights: Counter[float] = Counter()
    for page in raw_pages:
        for paragraph in page.paragraphs:
            for line in paragraph.lines:
                weights[line.size] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def mark_size_headings(raw_pages: list[RawPage]) -> None:
    """Without an outline, larger-than-body short paragraphs become headings, largest first."""
    body = _body_size(raw_pages)
    if not body:
        return
    candidates = [
        paragraph
        for page in raw_pages
        for paragraph in page.paragraphs
        if _looks_like_heading(paragraph, body)
    ]
    sizes = sorted({p.size for p in candidates if p.size >= body * 1.15}, reverse=True)
    level_of = {size: min(i + 1, _MAX_LEVEL) for i, size in enumerate(sizes)}
    for paragraph in candidates:
        paragraph.heading_level = level_of.get(paragraph.size, _MAX_LEVEL)


def _looks_like_heading(paragraph: Paragraph, body: float) -> bool:
    text = paragraph.text
    if (
        paragraph.table
        or len(paragraph.lines) > 3
        or len(text) > MAX_HEADING
        or not any(c.isalpha() for c in text)
    ):
        return False
    if text.endswith((".", ",", ";")) or BULLET.match(text):  # a list item is no heading
        return False
    if paragraph.size >= body * 1.15:
        return True
    bold = all(line.bold for line in paragraph.lines)
    # Loose glyph boxes differ a little between the regular and the bold cut of a font.
    return bold and paragraph.size >= body * 0.95 and len(text) <= 80 and text[0].isalnum()
