"""mammoth's model of a .docx, for wordml: its element names (either namespace of a prefix,
Strict OOXML's too), styles and numbering as it reads them, the paths its style map wraps a
paragraph in, its HTML tree with html.strip_empty and html.collapse, its vMerge rule, and a
writer. Each follows mammoth 1.13 (docx/body_xml.py, styles_xml.py, numbering_xml.py,
options.py, conversion.py, html/__init__.py) rule by rule, so the blocks come out the same."""

from __future__ import annotations

from html import escape
from typing import Any, TypeAlias

from lxml import etree  # type: ignore[import-untyped]

_W = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",
)
_PREFIXES = {
    _W[0]: "w",
    _W[1]: "w",
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships": "r",
    "http://purl.oclc.org/ooxml/officeDocument/relationships": "r",
    "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing": "wp",
    "http://purl.oclc.org/ooxml/drawingml/wordprocessingDrawing": "wp",
    "http://schemas.openxmlformats.org/drawingml/2006/main": "a",
    "http://purl.oclc.org/ooxml/drawingml/main": "a",
    "http://schemas.openxmlformats.org/drawingml/2006/picture": "pic",
    "http://purl.oclc.org/ooxml/drawingml/picture": "pic",
    "http://schemas.openxmlformats.org/package/2006/content-types": "content-types",
    "http://schemas.openxmlformats.org/package/2006/relationships": "relationships",
    "http://schemas.openxmlformats.org/markup-compatibility/2006": "mc",
    "urn:schemas-microsoft-com:vml": "v",
    "urn:schemas-microsoft-com:office:word": "office-word",
    "http://schemas.microsoft.com/office/word/2010/wordml": "wordml",
}
_NAMES: dict[object, str] = {}


class NeedsMammoth(Exception):
    """The document needs what only mammoth does, or mammoth would refuse it: mammoth decides."""


def name_of(tag: object) -> str:
    """mammoth's name of an element ("w:p"), or "" for what is not one (an entity)."""
    name = _NAMES.get(tag)
    if name is None:
        if not isinstance(tag, str):
            return ""
        ns, _, local = tag[1:].rpartition("}")
        prefix = _PREFIXES.get(ns) if tag.startswith("{") else None
        name = f"{prefix}:{local}" if prefix else (local if not tag.startswith("{") else tag)
        if len(_NAMES) < 10_000:  # a document's own names are a few dozen; a hostile one's not
            _NAMES[tag] = name
    return name


_KEYS: dict[str, tuple[str, ...]] = {}


def attr(element: etree._Element | None, key: str) -> str | None:
    """The attribute mammoth calls `key` ("w:val"), in either namespace its prefix stands for."""
    if element is None:
        return None
    keys = _KEYS.get(key)
    if keys is None:
        prefix, _, local = key.rpartition(":")
        keys = _KEYS[key] = tuple(
            f"{{{ns}}}{local}" for ns, bound in _PREFIXES.items() if bound == prefix
        ) or (local,)
    for clark in keys:
        value = element.get(clark)
        if value is not None:
            return str(value)
    return None


def val(element: etree._Element | None, name: str) -> str | None:
    """The w:val of the element's first child called `name`."""
    return attr(child(element, name), "w:val")


def child(element: etree._Element | None, name: str) -> etree._Element | None:
    if element is None:
        return None
    for child in element:
        if name_of(child.tag) == name:
            return child
    return None


def children_named(element: etree._Element | None, name: str) -> list[etree._Element]:
    return [] if element is None else [c for c in element if name_of(c.tag) == name]


class El:
    """An HTML element of mammoth's tree: `tags` are what it may collapse into (ul|ol)."""

    __slots__ = ("attrs", "children", "collapsible", "tags")

    def __init__(
        self,
        tags: tuple[str, ...],
        attrs: dict[str, str],
        children: list[Node],
        *,
        collapsible: bool = False,
    ) -> None:
        self.tags, self.attrs, self.children, self.collapsible = tags, attrs, children, collapsible


class NoteRef:
    __slots__ = ("kind", "note_id")

    def __init__(self, kind: str, note_id: str) -> None:
        self.kind, self.note_id = kind, note_id


class Force:
    """mammoth's force_write: keeps an element that has no other content (a table cell)."""


FORCE = Force()
Node: TypeAlias = "str | El | NoteRef | Force"
_VOID = {"br", "img", "input"}
Path = tuple[tuple[tuple[str, ...], dict[str, str], bool], ...]


def _path(spec: str) -> Path:
    """An HTML path in mammoth's style-map notation: "ul|ol > li > ol > li:fresh"."""
    out = []
    for part in spec.split(" > "):
        fresh = part.endswith(":fresh")
        tag, _, cls = part.removesuffix(":fresh").partition(".")
        out.append((tuple(tag.split("|")), {"class": cls} if cls else {}, not fresh))
    return tuple(out)


_P = _path("p:fresh")
_TITLE = _path("h1.title:fresh")
_HEADINGS = {str(n): _path(f"h{n}:fresh") for n in range(1, 7)}
_NOTE_STYLES = {"FOOTNOTE TEXT", "ENDNOTE TEXT", "ANNOTATION TEXT", "FOOTNOTE", "ENDNOTE"}
_LISTS = {
    (str(level), ordered): _path(
        " > ".join(["ul|ol > li"] * level + ["ol > li:fresh" if ordered else "ul > li:fresh"])
    )
    for level in range(5)
    for ordered in (False, True)
}


def paragraph_path(
    style_id: str | None, style_name: str | None, numbering: tuple[str, bool] | None
) -> Path:
    """mammoth's style map, in its order: docchat's lines, then the default map's."""
    name = style_name.upper() if style_name is not None else None
    if name == "TITLE":
        return _TITLE
    if name == "SUBTITLE":
        return _P
    if style_id and style_id.startswith("Heading") and style_id[7:] in _HEADINGS:
        return _HEADINGS[style_id[7:]]
    if name and name.startswith("HEADING ") and name[8:] in _HEADINGS:
        return _HEADINGS[name[8:]]
    if style_id == "Heading" or name == "HEADING":
        return _HEADINGS["1"]
    if name in _NOTE_STYLES:
        return _P
    return _LISTS.get(numbering, _P) if numbering is not None else _P


def wrap(path: Path, nodes: list[Node]) -> list[Node]:
    for tags, attrs, collapsible in reversed(path):
        nodes = [El(tags, dict(attrs), nodes, collapsible=collapsible)]
    return nodes


class Row:
    __slots__ = ("cells", "header")

    def __init__(self, cells: list[Any], header: bool) -> None:
        self.cells, self.header = cells, header


class Cell:
    __slots__ = ("children", "colspan", "rowspan", "vmerge")

    def __init__(self, children: list[Any], colspan: int, vmerge: bool) -> None:
        self.children, self.colspan, self.rowspan, self.vmerge = children, colspan, 1, vmerge


def row_spans(rows: list[Row]) -> None:
    """mammoth's vMerge rule: a merged cell adds a row to the cell its column started with."""
    columns: dict[int, Cell] = {}
    for row in rows:
        index = 0
        for cell in row.cells:
            if cell.vmerge and index in columns:
                columns[index].rowspan += 1
            else:
                columns[index] = cell
                cell.vmerge = False
            index += cell.colspan
    for row in rows:
        row.cells = [c for c in row.cells if not c.vmerge]


def rows_html(rows: list[Any], tag: str) -> list[Node]:
    """Rows as tr elements of `tag` cells; what is not a row (a bookmark) stays as it is."""
    out: list[Node] = []
    for row in rows:
        if isinstance(row, Row):
            out.append(El(("tr",), {}, [FORCE, *(_cell_html(c, tag) for c in row.cells)]))
        else:
            out.append(_cell_html(row, tag))
    return out


def _cell_html(cell: Any, tag: str) -> Node:
    if not isinstance(cell, Cell):
        return cell  # type: ignore[no-any-return]
    attrs = {}
    if cell.colspan != 1:
        attrs["colspan"] = str(cell.colspan)
    if cell.rowspan != 1:
        attrs["rowspan"] = str(cell.rowspan)
    return El((tag,), attrs, [FORCE, *cell.children])


def strip_empty(nodes: list[Node]) -> list[Node]:
    """mammoth's html.strip_empty: empty text and elements with nothing in them go."""
    kept: list[Node] = []
    for node in nodes:
        if isinstance(node, El):
            node.children = strip_empty(node.children)
            if node.children or node.tags[0] in _VOID:
                kept.append(node)
        elif node:
            kept.append(node)
    return kept


def collapse(nodes: list[Node]) -> list[Node]:
    """mammoth's html.collapse: a collapsible element joins the like one just before it."""
    out: list[Node] = []
    for node in nodes:
        collapsing_add(out, node)
    return out


def collapsing_add(out: list[Node], node: Node) -> None:
    if isinstance(node, El):
        node.children = collapse(node.children)
        if node.collapsible and out:
            last = out[-1]
            if isinstance(last, El) and last.tags[0] in node.tags and last.attrs == node.attrs:
                for child in node.children:
                    collapsing_add(last.children, child)
                return
    out.append(node)


class Writer:
    """Writes the nodes as HTML, numbering note references in the order they are written."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.references: list[NoteRef] = []

    def write(self, nodes: list[Node]) -> None:
        parts = self.parts
        for node in nodes:
            if isinstance(node, str):
                parts.append(escape(node, quote=False))
            elif isinstance(node, El):
                tag = node.tags[0]
                attrs = "".join(f' {k}="{escape(v)}"' for k, v in sorted(node.attrs.items()))
                if not node.children and tag in _VOID:
                    parts.append(f"<{tag}{attrs} />")
                else:
                    parts.append(f"<{tag}{attrs}>")
                    self.write(node.children)
                    parts.append(f"</{tag}>")
            elif isinstance(node, NoteRef):
                self.references.append(node)
                parts.append(f"<sup>[{len(self.references)}]</sup>")


class Numbering:
    def __init__(self, root: etree._Element | None, numbering_styles: dict[str, str | None]):
        self.abstract: dict[str | None, tuple[dict[str, tuple[str, bool]], str | None]] = {}
        self.by_style: dict[str, tuple[str, bool]] = {}
        for element in children_named(root, "w:abstractNum"):
            levels: dict[str, tuple[str, bool]] = {}
            unindexed = None
            for lvl in children_named(element, "w:lvl"):
                index = attr(lvl, "w:ilvl")
                level = (index if index is not None else "0", val(lvl, "w:numFmt") != "bullet")
                style = val(lvl, "w:pStyle")
                if style is not None:
                    self.by_style[style] = level
                if index is None:
                    unindexed = level
                else:
                    levels[index] = level
            if unindexed is not None and "0" not in levels:
                levels["0"] = unindexed
            link = child(element, "w:numStyleLink")
            self.abstract[attr(element, "w:abstractNumId")] = (levels, attr(link, "w:val"))
        self.nums: dict[str | None, str] = {}
        for num in children_named(root, "w:num"):
            ref = child(num, "w:abstractNumId")
            value = attr(ref, "w:val")
            if value is None:
                raise KeyError("w:val")
            self.nums[attr(num, "w:numId")] = value
        self.styles = numbering_styles

    def level(
        self, num_id: str | None, level: str, seen: set[str | None]
    ) -> tuple[str, bool] | None:
        if num_id in seen or num_id not in self.nums:
            return None
        seen.add(num_id)
        abstract = self.abstract.get(self.nums[num_id])
        if abstract is None:
            return None
        levels, link = abstract
        if link is None:
            return levels.get(level)
        if link not in self.styles:
            raise NeedsMammoth("a numbering style link to no style")  # mammoth: AttributeError
        return self.level(self.styles[link], level, seen)


def styles(root: etree._Element | None) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """Paragraph style names and numbering styles' num ids by style id, the first one kept."""
    paragraph: dict[str, str | None] = {}
    numbering: dict[str, str | None] = {}
    for style in children_named(root, "w:style"):
        kind, style_id = attr(style, "w:type"), attr(style, "w:styleId")
        if kind is None or style_id is None:
            raise NeedsMammoth("a style without a type or an id")  # mammoth: KeyError
        if kind == "numbering":
            num = child(child(child(style, "w:pPr"), "w:numPr"), "w:numId")
            numbering.setdefault(style_id, attr(num, "w:val"))
        elif kind == "paragraph":
            name = child(style, "w:name")
            paragraph.setdefault(style_id, attr(name, "w:val"))
    return paragraph, numbering
