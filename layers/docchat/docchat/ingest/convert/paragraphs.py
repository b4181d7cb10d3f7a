"""Lines -> paragraphs (by spacing, size, indent and sentence ends) -> the page's markdown."""

from __future__ import annotations

import re

from docchat.ingest.convert.page import BULLET, Line, Paragraph, RawPage

_SENTENCE_END = (".", "!", "?", ":", ";")

_MARKDOWN_START = re.compile(r"^(#|```|~~~|>)")


def split_at_bullets(paragraphs: list[Paragraph]) -> list[Paragraph]:
    """A list item starts a paragraph: its lines are not run into the item before it."""
    out: list[Paragraph] = []
    for paragraph in paragraphs:
        current = Paragraph([], paragraph.heading_level)
        for line in paragraph.lines:
            if current.lines and BULLET.match(line.text):
                out.append(current)
                current = Paragraph([])
            current.lines.append(line)
        out.append(current)
    return out


def paragraphs_of(lines: list[Line]) -> list[Paragraph]:
    """The page's lines grouped into paragraphs."""
    paragraphs: list[Paragraph] = []
    widest = _column_rights(lines)
    for prev, line in zip([None, *lines], lines, strict=False):
        if prev is None or _starts_paragraph(prev, line, widest[_bucket(prev.x)]):
            paragraphs.append(Paragraph([line]))
        else:
            paragraphs[-1].lines.append(line)
    return paragraphs


def _bucket(x: float) -> int:
    return int(x // 12)


def _column_rights(lines: list[Line]) -> dict[int, float]:
    """For each left edge (in 12 pt steps), the right edge of the widest line starting near it."""
    rights: dict[int, float] = {}
    for line in lines:
        bucket = _bucket(line.x)
        rights[bucket] = max(rights.get(bucket, 0.0), line.right)
    return {bucket: max(rights.get(bucket + step, 0.0) for step in (-1, 0, 1)) for bucket in rights}


def _starts_paragraph(prev: Line, line: Line, widest: float) -> bool:
    if prev.table or line.table:
        return True
    height = max(prev.size, line.size, 1.0)
    gap = prev.y_end - line.y
    ends_sentence = prev.text.endswith(_SENTENCE_END)
    if gap < -0.5 * height:  # up the page: the next column, where a sentence may go on
        return ends_sentence or not line.text[:1].islower()
    if gap > 1.7 * height:  # blank space
        return True
    if abs(prev.size - line.size) > 0.15 * height or prev.bold != line.bold:
        return True
    short = prev.right < widest - 4 * height
    indented = line.x > prev.x + 0.8 * height
    return ends_sentence and (short or indented)


def page_markdown(page: RawPage) -> str:
    """The page's paragraphs as markdown: headings marked, a line's markdown syntax escaped."""
    blocks = []
    for paragraph in page.paragraphs:
        text = paragraph.text.strip()
        if not text:
            continue
        if paragraph.table:
            blocks.append(text)  # rows of cells: no line of it is markdown of another kind
        elif paragraph.heading_level:
            blocks.append(f"{'#' * paragraph.heading_level} {text}")
        elif text[0] in "#`~>":
            blocks.append(_MARKDOWN_START.sub(r"\\\1", text))
        else:
            blocks.append(text)
    return "\n\n".join(blocks)
