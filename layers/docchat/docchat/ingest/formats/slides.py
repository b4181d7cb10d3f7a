""".pptx -> one location per slide (python-pptx).

A slide's text: its title as a `#` heading, then its shapes in reading order (top to bottom,
left to right; groups read inside): body placeholders as list items (indented by level,
"1." where the paragraph is auto-numbered), text boxes as paragraphs (list items where they
carry a bullet), tables in the table format (a merged cell's text in its first cell), charts as
their title and a table of categories by series, pictures as "Image: <alt text>", then the
speaker notes under a "Notes:" line. Date, footer and slide-number placeholders are chrome.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from pptx import Presentation
from pptx.enum.shapes import PP_PLACEHOLDER
from pptx.shapes.group import GroupShape
from pptx.shapes.picture import Picture

from docchat.errors import FileTooLargeError
from docchat.ingest.formats.blocks import Block, Heading, Para, Table, block_lines, clean
from docchat.ingest.formats.safety import Limits

_TITLES = {PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE}
_CHROME = {
    PP_PLACEHOLDER.DATE,
    PP_PLACEHOLDER.FOOTER,
    PP_PLACEHOLDER.SLIDE_NUMBER,
    PP_PLACEHOLDER.HEADER,
}
_BULLETED = {
    PP_PLACEHOLDER.BODY,
    PP_PLACEHOLDER.OBJECT,
    PP_PLACEHOLDER.VERTICAL_BODY,
    PP_PLACEHOLDER.VERTICAL_OBJECT,
}
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"


def slides_from_pptx(name: str, data: bytes, limits: Limits) -> tuple[str, list[tuple[str, str]]]:
    """The first slide title, and each slide's (label, markdown)."""
    deck = Presentation(io.BytesIO(data))
    if len(deck.slides) > limits.max_slides:
        raise FileTooLargeError(
            f"{name!r} has {len(deck.slides)} slides, more than the {limits.max_slides} a "
            f"presentation may have: split it and upload the parts"
        )
    first_title = ""
    slides: list[tuple[str, str]] = []
    layouts: dict[int, dict[int, tuple[int, int]]] = {}
    for number, slide in enumerate(deck.slides, 1):
        title, blocks = _slide_blocks(slide, layouts)
        first_title = first_title or title
        lines = [line for block in blocks for line in block_lines(block)]
        notes = _notes(slide)
        if notes:
            lines += ["Notes:", *notes]
        label = f"Slide {number}: {title}" if title else f"Slide {number}"
        if slide._element.get("show") == "0":
            label += " (hidden)"
        slides.append((label, "\n".join(lines)))
    return first_title, slides


def _slide_blocks(
    slide: Any, layouts: dict[int, dict[int, tuple[int, int]]]
) -> tuple[str, list[Block]]:
    title = ""
    blocks: list[Block] = []
    for shape, ph in _reading_order(slide, layouts):
        kind = ph.type if ph is not None else None
        if kind in _CHROME:
            continue
        if kind in _TITLES and shape.has_text_frame:
            text = clean(shape.text_frame.text.replace("\v", " "))
            if text and not title:
                title = text
                blocks.insert(0, Heading(1, text))
                continue
        blocks.extend(_shape_blocks(shape, bulleted=kind in _BULLETED))
    return title, blocks


def _reading_order(
    slide: Any, layouts: dict[int, dict[int, tuple[int, int]]]
) -> list[tuple[Any, Any]]:
    """The slide's shapes with their placeholder elements, top to bottom, left to right. A
    placeholder without a position of its own sits where its layout puts it, looked up once
    per layout and only when needed: python-pptx's own lookups (`shape.top`, `is_placeholder`)
    run an XPath query each, measured at 65% of a 120-slide deck's conversion."""
    placed = []
    for shape in slide.shapes:
        element = shape._element
        ph = _placeholder(element)
        top, left = element.y, element.x
        if top is None and ph is not None:
            top, left = _layout_positions(slide, layouts).get(ph.idx, (0, 0))
        placed.append(((top or 0, left or 0), shape, ph))
    placed.sort(key=lambda item: item[0])
    return [(shape, ph) for _, shape, ph in placed]


def _placeholder(element: Any) -> Any:
    """The shape's `p:ph` element or None, by walking children (not XPath)."""
    if len(element) == 0:
        return None
    properties = element[0].find(f"{_P}nvPr")
    return None if properties is None else properties.find(f"{_P}ph")


def _layout_positions(
    slide: Any, layouts: dict[int, dict[int, tuple[int, int]]]
) -> dict[int, tuple[int, int]]:
    """Where the slide's layout puts each placeholder (by idx): its own position, else the
    master's placeholder of the same type. Read from the XML directly: python-pptx's
    inherited `top` looks each one up through its shape factories (measured: half of a
    one-slide deck's conversion)."""
    layout = slide.slide_layout
    positions = layouts.get(id(layout))
    if positions is None:
        master = {
            ph.type: (element.y, element.x)
            for element, ph in _placeholders(layout.slide_master.shapes._spTree)
            if element.y is not None
        }
        positions = {
            ph.idx: (element.y, element.x) if element.y is not None else master.get(ph.type, (0, 0))
            for element, ph in _placeholders(layout.shapes._spTree)
        }
        layouts[id(layout)] = positions
    return positions


def _placeholders(tree: Any) -> Iterator[tuple[Any, Any]]:
    for element in tree.iterchildren():
        ph = _placeholder(element)
        if ph is not None and hasattr(element, "y"):
            yield element, ph


def _group_order(shapes: Any) -> list[Any]:
    return sorted(shapes, key=lambda s: (s._element.y or 0, s._element.x or 0))


def _shape_blocks(shape: Any, *, bulleted: bool) -> Iterator[Block]:
    if isinstance(shape, GroupShape):
        for child in _group_order(shape.shapes):
            yield from _shape_blocks(child, bulleted=False)
        return
    if getattr(shape, "has_table", False) and shape.has_table:
        yield from _table(shape.table)
        return
    if getattr(shape, "has_chart", False) and shape.has_chart:
        yield from _chart(shape.chart)
        return
    if isinstance(shape, Picture):
        alt = clean(shape._element._nvXxPr.cNvPr.get("descr") or "")
        if alt:
            yield Para(f"Image: {alt}")
        return
    if shape.has_text_frame:
        yield from _paragraphs(shape.text_frame, bulleted=bulleted)


def _paragraphs(frame: Any, *, bulleted: bool) -> Iterator[Block]:
    numbers: dict[int, int] = {}
    for paragraph in frame.paragraphs:
        text = clean(paragraph.text.replace("\v", " "))
        if not text:
            continue
        bullet = _bullet(paragraph, bulleted=bulleted)
        level = paragraph.level
        if bullet == "number":
            numbers[level] = numbers.get(level, 0) + 1
            numbers = {k: v for k, v in numbers.items() if k <= level}
            yield Para(f"{'  ' * level}{numbers[level]}. {text}")
        elif bullet == "bullet":
            yield Para(f"{'  ' * level}- {text}")
        else:
            yield Para(text)


def _bullet(paragraph: Any, *, bulleted: bool) -> str:
    """'bullet', 'number' or '' from the paragraph's own properties; a body placeholder's
    paragraphs are bulleted unless they say otherwise (the master's body style bullets them)."""
    props = paragraph._p.pPr
    if props is not None:
        if props.find(f"{_A}buNone") is not None:
            return ""
        if props.find(f"{_A}buAutoNum") is not None:
            return "number"
        if props.find(f"{_A}buChar") is not None or props.find(f"{_A}buBlip") is not None:
            return "bullet"
    return "bullet" if bulleted else ""


def _table(table: Any) -> Iterator[Block]:
    """The table's cells read from its XML (python-pptx's cell objects parse every attribute
    on the way: a third of a table-heavy slide's time). A cell spanned by a merge
    (hMerge/vMerge) is empty; its origin keeps the text."""
    rows = []
    for tr in table._tbl.iterchildren(f"{_A}tr"):
        cells = []
        for tc in tr.iterchildren(f"{_A}tc"):
            spanned = tc.get("hMerge") in ("1", "true") or tc.get("vMerge") in ("1", "true")
            cells.append("" if spanned else " ".join(_paragraph_texts(tc)))
        rows.append(cells)
    if any(any(clean(c) for c in row) for row in rows):
        yield Table(rows=rows, header_rows=1)


def _paragraph_texts(tc: Any) -> Iterator[str]:
    for paragraph in tc.iter(f"{_A}p"):
        yield "".join(
            (node.text or "") if node.tag == f"{_A}t" else " "
            for node in paragraph.iter(f"{_A}t", f"{_A}br")
        )


def _chart(chart: Any) -> Iterator[Block]:
    """A chart's title, then per plot its data: one row per category, one column per series,
    numbers as the chart caches them. Read from the chart XML: python-pptx's series API runs
    an XPath query per point."""
    if chart.has_title and chart.chart_title.has_text_frame:
        title = clean(chart.chart_title.text_frame.text)
        if title:
            yield Para(title)
    plots: dict[Any, list[Any]] = {}
    for series in chart._chartSpace.iter(f"{_C}ser"):
        plots.setdefault(series.getparent(), []).append(series)
    for series_list in plots.values():
        categories: dict[int, str] = {}
        columns = []
        for series in series_list:
            categories = categories or _points(series, "cat", "xVal")
            columns.append((_series_name(series), _points(series, "val", "yVal")))
        count = max([len(categories), *(max(v, default=-1) + 1 for _, v in columns)])
        rows = [["", *(name for name, _ in columns)]]
        for i in range(count):
            rows.append([categories.get(i, str(i + 1)), *(v.get(i, "") for _, v in columns)])
        yield Table(rows=rows, header_rows=1)


def _series_name(series: Any) -> str:
    name = series.find(f"{_C}tx")
    if name is None:
        return ""
    cached = name.find(f".//{_C}v")  # a cell reference's cached text, not the reference
    return clean((cached.text or "") if cached is not None else "".join(name.itertext()))


def _printed(text: str) -> str:
    """A cached number as General prints it ("2", not "2.0"); other text as it is."""
    try:
        value = float(text)
    except ValueError:
        return text
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.15g}"


def _points(series: Any, *tags: str) -> dict[int, str]:
    """idx -> cached text of a series' categories or values (`c:pt` under its cache)."""
    for tag in tags:
        holder = series.find(f"{_C}{tag}")
        if holder is not None:
            return {
                int(pt.get("idx", "0")): _printed(pt.findtext(f"{_C}v") or "")
                for pt in holder.iter(f"{_C}pt")
            }
    return {}


def _notes(slide: Any) -> list[str]:
    if not slide.has_notes_slide:
        return []
    frame = slide.notes_slide.notes_text_frame
    if frame is None:
        return []
    return [clean(p.text.replace("\v", " ")) for p in frame.paragraphs if clean(p.text)]
