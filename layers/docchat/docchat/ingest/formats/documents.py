"""One converter per format, each `(name, bytes, limits) -> ConvertedDocument` whose pages are
locations (models.Page with a `kind` and a `label` a citation shows):

- .docx, .html, .md: sections. A new section starts at each heading of the document's top two
  heading levels, labelled with its heading path ("Section: Introduction > Scope"); a heading
  with nothing under it stays with the next one; a section longer than ~6,000 characters is
  cut between blocks ("... (part 2)"), a table between rows with its header repeated.
- .pptx: one per slide ("Slide 3: Quarterly results"), speaker notes under "Notes:".
- .xlsx: one per sheet ("Sheet 'Revenue' A1:F40"), a long sheet cut into row ranges.
- .txt: one per form-feed page ("Page 2"), or parts of ~6,000 characters ("Lines 1-120").
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import PurePosixPath
from xml.etree import ElementTree

from docchat.errors import EmptyDocumentError, UnsupportedFormatError
from docchat.ingest.formats import wordml
from docchat.ingest.formats.blocks import Block, Heading, sections_from_blocks
from docchat.ingest.formats.html import docx_html_blocks, page_blocks
from docchat.ingest.formats.nesting import check_nesting, too_deep
from docchat.ingest.formats.safety import Limits, open_package, read_by_library
from docchat.ingest.formats.sheets import sheets_from_xlsx
from docchat.ingest.formats.slides import slides_from_pptx
from docchat.ingest.formats.text import blocks_from_markdown, decoded, text_pages
from docchat.models import ConvertedDocument, Page, PageKind

# mammoth maps Heading 1-6 to h1-h6 by itself; a Title paragraph is the document's title and
# a heading (its own front-matter section), a Subtitle a paragraph.
_DOCX_STYLES = "p[style-name='Title'] => h1.title:fresh\np[style-name='Subtitle'] => p:fresh"
_GENERIC_TITLES = re.compile(
    r"^(|powerpoint presentation|slide \d+|presentation\d*|document\d*|"
    r"book\d*|microsoft word - .*|untitled.*)$",
    re.IGNORECASE,
)


def docx(name: str, data: bytes, limits: Limits) -> ConvertedDocument:
    """A Word document as the HTML mammoth writes for it: headings, lists, tables (merges as
    spans), footnotes, endnotes and text boxes; Strict OOXML and BOM-prefixed parts read too.
    Comments, headers and footers are left out (like a PDF's annotations and running heads).
    wordml writes that HTML from lxml's tree at about python-docx's cost; a file using what
    only mammoth does (or one mammoth refuses) goes through mammoth itself."""
    package = open_package(name, data, "docx", limits)
    try:
        page = wordml.docx_html(package)
    except MemoryError:
        raise
    except Exception:
        page = _mammoth_html(name, package, data)
    styled_title, blocks = docx_html_blocks(page)
    title = styled_title or _core_title(package) or _stem(name)
    return _sectioned(name, "docx", title, blocks)


def _mammoth_html(name: str, package: zipfile.ZipFile, data: bytes) -> str:
    import mammoth  # 0.1 s of imports, paid only by the files that need it

    data = _styles_typed(package, data)
    with read_by_library(name, "Word", ".docx"):
        result = mammoth.convert_to_html(
            io.BytesIO(data),
            style_map=_DOCX_STYLES,
            # Images are never opened: only their alt text is kept, and an external picture's
            # target (a local path, a URL) is never read.
            convert_image=mammoth.images.img_element(lambda image: {}),
        )
    return str(result.value)


def pptx(name: str, data: bytes, limits: Limits) -> ConvertedDocument:
    """A presentation, one location per slide (an empty slide stays, so location N is slide
    N)."""
    package = open_package(name, data, "pptx", limits)
    with read_by_library(name, "PowerPoint", ".pptx"):
        first_title, slides = slides_from_pptx(name, data, limits)
    pages = [_page(n, "slide", label, text) for n, (label, text) in enumerate(slides, 1)]
    return _checked(name, "pptx", first_title or _core_title(package) or _stem(name), pages)


def xlsx(name: str, data: bytes, limits: Limits) -> ConvertedDocument:
    """A workbook, one location per sheet (or range of rows of a long sheet)."""
    package = open_package(name, data, "xlsx", limits)
    with read_by_library(name, "Excel", ".xlsx"):
        sheets = sheets_from_xlsx(name, data, limits)
    pages = [_page(n, "sheet", label, text) for n, (label, text, _) in enumerate(sheets, 1)]
    return _checked(name, "xlsx", _core_title(package) or _stem(name), pages)


def html(name: str, data: bytes, limits: Limits) -> ConvertedDocument:
    """A web page's main content, its chrome (navigation, scripts, forms...) removed."""
    page = decoded(name, data, limits, markup=True)
    check_nesting(name, page, max_depth=limits.max_html_depth)
    try:
        title, blocks = page_blocks(page)
    except RecursionError as exc:  # deeper than the count of its tags said
        raise too_deep(name, limits.max_html_depth) from exc
    return _sectioned(name, "html", title or _stem(name), blocks)


def md(name: str, data: bytes, limits: Limits) -> ConvertedDocument:
    """A Markdown file: its headings, lists, tables and code kept, re-written as page text."""
    blocks = blocks_from_markdown(decoded(name, data, limits))
    first_h1 = next((b.text for b in blocks if isinstance(b, Heading) and b.level == 1), "")
    return _sectioned(name, "md", first_h1 or _stem(name), blocks)


def txt(name: str, data: bytes, limits: Limits) -> ConvertedDocument:
    """Plain text, its lines as they are, cut at form feeds or by size."""
    body = decoded(name, data, limits)
    if "\x00" in body:
        raise UnsupportedFormatError(
            f"{name!r} is not text (it holds NUL bytes): upload a text, Markdown, Office or "
            "PDF file"
        )
    pages = [
        _page(n, kind, label, part) for n, (kind, label, part) in enumerate(text_pages(body), 1)
    ]
    return _checked(name, "txt", _stem(name), pages)


def _sectioned(name: str, fmt: str, title: str, blocks: list[Block]) -> ConvertedDocument:
    pages = []
    for n, section in enumerate(sections_from_blocks(blocks), 1):
        # The citation shows the title beside the label: a path under the title's own
        # heading is named without it ("Section: History", not "Microsoft > History").
        shown = (
            section.path[1:]
            if section.path[:1] == [title] and len(section.path) > 1
            else section.path
        )
        where = " > ".join(shown) or "Start"
        part = f" (part {section.part})" if section.part > 1 else ""
        pages.append(_page(n, "section", f"Section: {where}{part}", "\n".join(section.lines)))
    return _checked(name, fmt, title, pages)


def _page(number: int, kind: PageKind, label: str, markdown: str) -> Page:
    return Page(
        number=number,
        markdown=markdown,
        chars=len("".join(markdown.split())),
        kind=kind,
        label=label,
    )


def _checked(name: str, fmt: str, title: str, pages: list[Page]) -> ConvertedDocument:
    if not any(page.chars for page in pages):
        raise EmptyDocumentError(
            f"{name!r} has no text to index (it is empty, or holds only pictures): upload a "
            "file with text, or a PDF of the scanned pages for OCR"
        )
    return ConvertedDocument(
        title=title,
        pages=pages,
        pages_without_text=sum(not page.chars for page in pages),
        used_outline=False,
        format=fmt,
    )


_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"


# A style's w:type is optional: without one it is a paragraph style (ECMA-376 Part 1, 17.7.4.17).
# mammoth requires it (KeyError: 'w:type'); the files other programs write leave it out.
_WORD_NAMESPACES = (
    b"http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    b"http://purl.oclc.org/ooxml/wordprocessingml/main",
)


def _styles_typed(package: zipfile.ZipFile, data: bytes) -> bytes:
    """`data`, or a copy whose style parts give every style the type the standard implies."""
    fixed: dict[str, bytes] = {}
    for info in package.infolist():
        if PurePosixPath(info.filename).name.lower() not in ("styles.xml", "styleswitheffects.xml"):
            continue
        part = package.read(info)
        typed = _typed_styles(part)
        if typed != part:
            fixed[info.filename] = typed
    if not fixed:
        return data
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as copy:
        for info in package.infolist():
            copy.writestr(info, fixed.get(info.filename) or package.read(info))
    return out.getvalue()


def _typed_styles(part: bytes) -> bytes:
    for namespace in _WORD_NAMESPACES:
        bound = re.search(rb'xmlns:([\w.-]+)="' + re.escape(namespace) + b'"', part)
        if bound is None:
            continue
        prefix = re.escape(bound.group(1))
        untyped = re.compile(
            rb"<(" + prefix + rb":style)(?![\w.-])(?![^>]*\s" + prefix + rb":type=)"
        )
        part = untyped.sub(rb"<\1 " + bound.group(1) + rb':type="paragraph"', part)
    return part


def _core_title(package: zipfile.ZipFile) -> str:
    """The title in the package's core properties, unless it is a template's placeholder.
    safety.open_package has refused any part with a DTD, so ElementTree expands nothing."""
    try:
        root = ElementTree.fromstring(package.read("docProps/core.xml"))
    except (KeyError, ElementTree.ParseError):
        return ""
    title = " ".join((root.findtext(_DC_TITLE) or "").split())
    return "" if _GENERIC_TITLES.match(title) else title


def _stem(name: str) -> str:
    return PurePosixPath(name.replace("\\", "/")).stem
