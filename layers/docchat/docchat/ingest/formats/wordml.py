"""A .docx read with lxml into the HTML mammoth writes for it, less what no text depends on.

mammoth builds a minidom tree, its own document model and an HTML tree in pure Python: 5-14x
the CPU of a plain python-docx read (issue 44). This reader walks lxml's tree once, following
mammoth 1.13's reader and converter rule by rule (docx/body_xml.py, conversion.py, its
default style map plus docchat's Title/Subtitle lines, html.strip_empty and html.collapse), so
`html.docx_html_blocks` gets the same headings, paragraphs, list nesting, tables (gridSpan and
vMerge as colspan/rowspan), text boxes, image alt texts and notes. Run formatting and link
wrappers are left out: they are inline, and the blocks keep only their text.

Whatever this reader does not follow exactly raises `NeedsMammoth`, and documents.docx hands
the file to mammoth as before: an embedded mammoth style map, w:sym characters, check boxes,
and every case where mammoth itself raises (a missing relationship, note, attribute or part).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from typing import Any

from lxml import etree  # type: ignore[import-untyped]

from docchat.ingest.formats.wordhtml import (
    FORCE,
    Cell,
    El,
    NeedsMammoth,
    Node,
    NoteRef,
    Numbering,
    Path,
    Row,
    Writer,
    attr,
    child,
    children_named,
    collapse,
    name_of,
    paragraph_path,
    row_spans,
    rows_html,
    strip_empty,
    styles,
    wrap,
)

_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
# safety.open_package has refused any part with a DTD; this parser would expand nothing anyway.
_PARSER = etree.XMLParser(
    resolve_entities=False,
    no_network=True,
    load_dtd=False,
    huge_tree=False,
    remove_comments=True,
    remove_pis=True,
    collect_ids=False,
)


class _Package:
    """The parts mammoth reads, parsed once each; a missing required one raises KeyError."""

    def __init__(self, package: zipfile.ZipFile) -> None:
        self.zip = package
        self.names = set(package.namelist())
        if "mammoth/style-map" in self.names:
            raise NeedsMammoth("an embedded style map")

    def xml(self, name: str) -> etree._Element:
        return etree.fromstring(self.zip.read(name), _PARSER)

    def relationships(self, part: str) -> tuple[dict[str, str], dict[str, list[str]]]:
        folder, _, base = part.rpartition("/")
        name = "/".join(p for p in (folder, "_rels", base + ".rels") if p)
        by_id: dict[str, str] = {}
        by_type: dict[str, list[str]] = {}
        if name in self.names:
            for rel in children_named(self.xml(name), "relationships:Relationship"):
                target, kind = rel.attrib["Target"], rel.attrib["Type"]
                by_id[rel.attrib["Id"]] = target
                by_type.setdefault(kind, []).append(target)
        return by_id, by_type

    def find(self, by_type: dict[str, list[str]], kind: str, base: str, fallback: str) -> str:
        for target in by_type.get(kind, []):
            joined = target if target.startswith("/") or not base else f"{base}/{target}"
            if joined.lstrip("/") in self.names:
                return joined.lstrip("/")
        return fallback


class _Reader:
    """One part's body (the document, a note, a comment) as mammoth's HTML nodes; `extras`
    are a text box's blocks, which mammoth puts after the paragraph that holds them."""

    def __init__(
        self,
        relationships: dict[str, str],
        paragraph_styles: dict[str, str | None],
        numbering: Numbering,
    ) -> None:
        self.relationships = relationships
        self.styles = paragraph_styles
        self.numbering = numbering
        self.deleted: list[etree._Element] = []  # a deleted paragraph mark joins the next one
        self.handlers: dict[str, Callable[[etree._Element, list[Any], list[Node]], None]] = {
            "w:t": self.text,
            "w:r": self.inside,
            "w:p": self.paragraph,
            "w:instrText": self.instr_text,
            "w:tab": self.fixed("\t"),
            "w:noBreakHyphen": self.fixed("\u2011"),
            "w:softHyphen": self.fixed("\u00ad"),
            "w:sym": self.unsupported,
            "w:tbl": self.table,
            "w:tr": self.row,
            "w:tc": self.cell,
            "w:pict": self.pict,
            "w:hyperlink": self.hyperlink,
            "w:bookmarkStart": self.bookmark,
            "w:br": self.line_break,
            "wp:inline": self.drawing,
            "wp:anchor": self.drawing,
            "v:imagedata": self.imagedata,
            "w:footnoteReference": self.note("footnote"),
            "w:endnoteReference": self.note("endnote"),
            "w:commentReference": self.comment_reference,
            "mc:AlternateContent": self.alternate,
            "w:sdt": self.sdt,
        }
        for name in (
            "w:customXml",
            "w:ins",
            "w:moveFromRangeEnd",
            "w:moveFromRangeStart",
            "w:moveTo",
            "w:moveToRangeEnd",
            "w:moveToRangeStart",
            "w:object",
            "w:smartTag",
            "w:drawing",
            "v:group",
            "v:rect",
            "v:roundrect",
            "v:shape",
            "v:textbox",
            "w:txbxContent",
        ):
            self.handlers[name] = self.inside
        self.paths: dict[tuple[object, ...], Path] = {}

    def read(self, elements: Any, out: list[Any], extras: list[Node]) -> None:
        handlers = self.handlers
        for element in elements:
            handler = handlers.get(name_of(element.tag))
            if handler is not None:  # anything else mammoth drops, its content with it
                handler(element, out, extras)

    def inside(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        self.read(element, out, extras)

    def text(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        out.append(element.text or "" if not len(element) else "".join(element.itertext()))

    @staticmethod
    def fixed(text: str) -> Callable[[etree._Element, list[Any], list[Node]], None]:
        return lambda element, out, extras: out.append(text)

    def unsupported(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        raise NeedsMammoth(name_of(element.tag))

    def instr_text(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        if "FORMCHECKBOX" in "".join(element.itertext()):
            raise NeedsMammoth("a check box field")

    def paragraph(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        properties = child(element, "w:pPr")
        if child(child(properties, "w:rPr"), "w:del") is not None:
            self.deleted.extend(element)
            return
        children: object = element
        if self.deleted:
            children, self.deleted = [*self.deleted, *element], []
        content: list[Any] = []
        inner: list[Node] = []
        self.read(children, content, inner)
        style = child(properties, "w:pStyle")
        style_id = attr(style, "w:val")
        key = (style_id, self._numbering(style_id, child(properties, "w:numPr")))
        path = self.paths.get(key)
        if path is None:
            path = self.paths[key] = paragraph_path(
                style_id, self.styles.get(style_id or ""), key[1]
            )
        out.extend(wrap(path, content))
        out.extend(inner)

    def _numbering(
        self, style_id: str | None, properties: etree._Element | None
    ) -> tuple[str, bool] | None:
        num = child(properties, "w:numId")
        num_id = attr(num, "w:val")
        ilvl = child(properties, "w:ilvl")
        level = attr(ilvl, "w:val")
        if num_id is not None and level is not None:
            return self.numbering.level(num_id, level, set())
        if style_id is not None and style_id in self.numbering.by_style:
            return self.numbering.by_style[style_id]
        return self.numbering.level(num_id, "0", set()) if num_id is not None else None

    def table(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        rows: list[Any] = []
        self.read(element, rows, extras)
        merge = all(isinstance(r, Row) for r in rows) and all(
            isinstance(c, Cell) for r in rows for c in r.cells
        )
        if merge:
            row_spans(rows)
        body = next(
            (i for i, r in enumerate(rows) if not isinstance(r, Row) or not r.header), len(rows)
        )
        if body == 0:
            children: list[Node] = [FORCE, *rows_html(rows, "td")]
        else:
            children = [
                FORCE,
                El(("thead",), {}, rows_html(rows[:body], "th")),
                El(("tbody",), {}, rows_html(rows[body:], "td")),
            ]
        out.append(El(("table",), {}, children))

    def row(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        properties = child(element, "w:trPr")
        if child(properties, "w:del") is not None:
            return
        cells: list[Any] = []
        self.read(element, cells, extras)
        out.append(Row(cells, child(properties, "w:tblHeader") is not None))

    def cell(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        properties = child(element, "w:tcPr")
        span = child(properties, "w:gridSpan")
        value = attr(span, "w:val")
        vmerge = child(properties, "w:vMerge")
        merge = attr(vmerge, "w:val")
        children: list[Any] = []
        self.read(element, children, extras)
        out.append(
            Cell(
                children,
                1 if value is None else int(value),
                vmerge is not None and (merge == "continue" or not merge),
            )
        )

    def pict(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        content: list[Any] = []
        inner: list[Node] = []
        self.read(element, content, inner)
        extras.extend(inner)
        extras.extend(content)

    def _target(self, rel_id: str) -> str:
        return self.relationships[rel_id]  # mammoth raises KeyError too: it decides

    def hyperlink(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        rel_id = attr(element, "r:id")
        if rel_id is not None:
            self._target(rel_id)
        self.read(element, out, extras)

    def bookmark(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        name = attr(element, "w:name")
        if name != "_GoBack":
            out.append(El(("a",), {"id": name or ""}, [FORCE], collapsible=True))

    def line_break(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        if attr(element, "w:type") in (None, "", "textWrapping"):
            out.append(El(("br",), {}, [], collapsible=False))

    def drawing(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        properties = child(element, "wp:docPr")
        attrs = properties.attrib if properties is not None else {}
        descr = attrs.get("descr", "")
        alt = descr if descr.strip() else attrs.get("title")
        link = child(properties, "a:hlinkClick")
        if link is not None and attr(link, "r:id"):
            self._target(attr(link, "r:id") or "")
        for graphic in children_named(element, "a:graphic"):
            for data in children_named(graphic, "a:graphicData"):
                for pic in children_named(data, "pic:pic"):
                    for fill in children_named(pic, "pic:blipFill"):
                        for blip in children_named(fill, "a:blip"):
                            rel_id = attr(blip, "r:embed")
                            rel_id = rel_id if rel_id is not None else attr(blip, "r:link")
                            if rel_id is not None:
                                self._target(rel_id)
                                out.append(El(("img",), {"alt": alt} if alt else {}, []))

    def imagedata(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        rel_id = attr(element, "r:id")
        if rel_id is not None:  # its o:title is in a namespace mammoth does not map: no alt
            self._target(rel_id)
            out.append(El(("img",), {}, []))

    @staticmethod
    def note(kind: str) -> Callable[[etree._Element, list[Any], list[Node]], None]:
        def reference(element: etree._Element, out: list[Any], extras: list[Node]) -> None:
            note_id = attr(element, "w:id")
            if note_id is None:
                raise KeyError("w:id")
            out.append(NoteRef(kind, note_id))

        return reference

    def comment_reference(
        self, element: etree._Element, out: list[Any], extras: list[Node]
    ) -> None:
        if attr(element, "w:id") is None:
            raise KeyError("w:id")  # comments themselves are left out

    def alternate(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        fallback = child(element, "mc:Fallback")
        if fallback is not None:
            self.read(fallback, out, extras)

    def sdt(self, element: etree._Element, out: list[Any], extras: list[Node]) -> None:
        if child(child(element, "w:sdtPr"), "wordml:checkbox") is not None:
            raise NeedsMammoth("a check box content control")
        content = child(element, "w:sdtContent")
        if content is not None:
            self.read(content, out, extras)


def docx_html(package: zipfile.ZipFile) -> str:
    """The HTML mammoth would write for this Word package (see the module's docstring), or
    NeedsMammoth."""
    parts = _Package(package)
    _, package_types = parts.relationships("_rels/.rels")
    main = parts.find(package_types, _REL + "officeDocument", "", "word/document.xml")
    if main not in parts.names:
        raise NeedsMammoth("no main document part")
    _, main_types = parts.relationships(main)
    base = main.rpartition("/")[0]

    def part(kind: str) -> etree._Element | None:
        name = parts.find(main_types, _REL + kind, base, f"word/{kind}.xml")
        return parts.xml(name) if name in parts.names else None

    def reader(kind: str) -> _Reader:
        name = parts.find(main_types, _REL + kind, base, f"word/{kind}.xml")
        return _Reader(parts.relationships(name)[0], paragraph_styles, numbering)

    _check_content_types(parts.xml("[Content_Types].xml"))
    paragraph_styles, numbering_styles = styles(part("styles"))
    numbering = Numbering(part("numbering"), numbering_styles)
    notes = {
        **_notes(part("footnotes"), "footnote", reader("footnotes")),
        **_notes(part("endnotes"), "endnote", reader("endnotes")),
    }
    comments = children_named(part("comments"), "w:comment")
    comments_reader = reader("comments") if comments else None
    for comment in comments:  # left out, but read: what mammoth refuses is refused
        if attr(comment, "w:id") is None or comments_reader is None:
            raise KeyError("w:id")
        comments_reader.read(comment, [], [])
    body = child(parts.xml(main), "w:body")
    if body is None:
        raise NeedsMammoth("no w:body")
    nodes: list[Node] = []
    _Reader(parts.relationships(main)[0], paragraph_styles, numbering).read(body, nodes, [])
    writer = Writer()
    writer.write(collapse(strip_empty(nodes)))
    writer.write(collapse(strip_empty([_notes_list(writer.references, notes)])))
    return "".join(writer.parts)


def _check_content_types(root: etree._Element) -> None:
    """mammoth reads these attributes with [], so a file missing one is refused."""
    keys = {
        "content-types:Default": ("Extension", "ContentType"),
        "content-types:Override": ("PartName", "ContentType"),
    }
    for entry in root:
        for key in keys.get(name_of(entry.tag), ()):
            entry.attrib[key]


def _notes(
    root: etree._Element | None, kind: str, reader: _Reader
) -> dict[tuple[str, str], list[Node]]:
    """The footnotes or endnotes of a notes part by (kind, id), separators left out."""
    notes: dict[tuple[str, str], list[Node]] = {}
    for note in children_named(root, "w:" + kind):
        if attr(note, "w:type") in ("continuationSeparator", "separator"):
            continue
        note_id = attr(note, "w:id")
        if note_id is None:
            raise KeyError("w:id")
        body: list[Node] = []
        reader.read(note, body, [])
        notes[(kind, note_id)] = body
    return notes


def _notes_list(references: list[NoteRef], notes: dict[tuple[str, str], list[Node]]) -> El:
    """The notes the body refers to, in its order, each with its back link (which
    html.docx_html_blocks drops)."""
    items: list[Node] = []
    for reference in list(references):  # the notes' own references are numbered, not listed
        body = notes[(reference.kind, reference.note_id)]  # KeyError, as in mammoth
        back = El(("a",), {"href": f"#{reference.kind}-ref-{reference.note_id}"}, ["\u2191"])
        note_id = {"id": f"{reference.kind}-{reference.note_id}"}
        items.append(El(("li",), note_id, [*body, El(("p",), {}, [" ", back], collapsible=True)]))
    return El(("ol",), {}, items)
