"""What sits beside or below the text: margin notes ("CAUTION" in the margin) and footnotes
(their marks in the text, their lines at the foot of the page)."""

from __future__ import annotations

import re

from docchat.ingest.convert.page import Line, size_differs

# A margin note's label: one word in capitals ("CAUTION", "TIP") or an icon ("!").
ICON = re.compile(r"[!?*\u2020\u2021\u2022\u25a0-\u27bf]")

_NOTE = re.compile(rf"[A-Z]{{3,15}}|{ICON.pattern}{{1,3}}")

# What a margin note's label starts and ends with: a capital or an icon.
NOTE_EDGE = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ!?*\u2020\u2021\u2022" + "".join(map(chr, range(0x25A0, 0x27C0)))
)


def looks_like_note(text: str) -> bool:
    """Whether `text` is a margin note's label: one word in capitals or an icon."""
    return len(text) <= 20 and bool(_NOTE.fullmatch(text.strip()))


def without_margin_notes(lines: list[Line]) -> list[Line]:
    """Lines without the short labels set in the margin beside the text ("CAUTION", "TIP",
    a "!" icon): read in order they would land inside the sentence they stand next to."""
    if not any(line.size for line in lines):
        return lines
    labels = [line for line in lines if line.size and looks_like_note(line.text)]
    notes = [line for line in labels if _is_margin_note(line, lines)]
    if not notes:
        return lines
    # A label stacked on a note found beside the text ("!" above "CAUTION") is part of it.
    drop = {id(label) for label in labels for note in notes if _stacked(label, note)}
    return [line for line in lines if id(line) not in drop]


# A footnote's mark in the text: a number or a dagger raised above the line it follows.
_MARK = re.compile(r"\d{1,3}|[*\u2020\u2021]{1,3}")


def footnotes_last(lines: list[Line]) -> list[Line]:
    """Lines without the footnote marks in the text (a raised "1" in a line is read as a line
    of its own, which would end the paragraph there), and with the lines a PDF draws first at
    the foot of the page (footnotes, a footer) read after the rest, as the page is read."""
    if not lines or not all(line.size for line in lines):
        return lines
    kept = [
        line
        for prev, line in zip([None, *lines], lines, strict=False)
        if prev is None or not _is_footnote_mark(line, prev)
    ]
    heights = sorted(line.y for line in kept)
    low = heights[len(heights) // 5]  # the foot: the lowest fifth of the page's lines
    top = heights[-1 - len(heights) // 5]  # the head: the highest fifth
    # The foot's lines may come after a running head drawn first (the Copyright Office's DMCA
    # summary: its title line, then page 4's footnote, then the text that goes on from page 3).
    head = next((i for i, line in enumerate(kept) if line.y < top), len(kept))
    lead = next((i for i in range(head, len(kept)) if kept[i].y > low), head)
    return kept[:head] + kept[lead:] + kept[head:lead]


def _is_footnote_mark(mark: Line, prev: Line) -> bool:
    """A short mark in under three quarters of the previous line's size, raised above its
    baseline by less than a line, within that line's width."""
    height = max(prev.size, 1.0)
    return (
        mark.size < 0.75 * prev.size  # the geometry first: few lines pass it, to the regex
        and 0 < mark.y - prev.y_end < height
        and prev.x <= mark.x <= prev.right + 0.5 * height
        and bool(_MARK.fullmatch(mark.text.strip()))
    )


def _is_margin_note(note: Line, lines: list[Line]) -> bool:
    """A short label left of a line of text, set in another size or weight than that text,
    where the text is set in from its column's edge to make room for it."""
    if not note.size or not looks_like_note(note.text):
        return False
    for other in lines:
        if other is note or not other.size or looks_like_note(other.text):
            continue
        height = max(other.size, 1.0)
        beside = _overlap(note, other) > 0 or abs(other.y - note.y) <= 0.6 * height
        styled = size_differs(note.size, other.size) or (note.bold and not other.bold)
        after = -0.5 * height <= other.x - note.right <= 4 * height and other.x > note.x + height
        if beside and styled and after and _set_in(other, lines, edge=note.x - 1.5 * height):
            return True
    return False


def _set_in(text: Line, lines: list[Line], *, edge: float) -> bool:
    """Whether lines near `text` start left of it, at `edge` or right of it."""
    height = max(text.size, 1.0)
    return any(
        line.size and edge <= line.x < text.x - height and abs(line.y - text.y) <= 6 * height
        for line in lines
        if not looks_like_note(line.text)
    )


def _overlap(one: Line, other: Line) -> float:
    """How far the two lines' heights overlap (negative: the space between them)."""
    return min(one.y + one.size, other.y + other.size) - max(one.y, other.y)


def _stacked(line: Line, note: Line) -> bool:
    across = min(line.right, note.right) - max(line.x, note.x) > 0
    return across and _overlap(line, note) > -0.5 * line.size
