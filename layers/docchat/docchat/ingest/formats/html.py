"""HTML -> blocks, for web pages and for the HTML mammoth makes of a .docx.

selectolax (lexbor) parses; one walk turns the tree into blocks: h1-h6 are headings, each
paragraph and list item one line ("- item", "1. item", nested items indented), tables a grid
(colspan/rowspan: the text in the first cell, the spanned ones empty), pre a fenced block.
A table holding another table is layout: its cells are read as blocks. Web pages first lose
their chrome: the walk starts at the page's one <main> (or role=main, or its one <article>),
and scripts, styles, navigation, forms, hidden elements (by attribute, or by their own style
as a filing's inline XBRL header is) and elements whose class or id names chrome (nav,
sidebar, menu, breadcrumb, cookie, ...) are removed.
"""

from __future__ import annotations

import functools
import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from docchat.ingest.formats.blocks import Block, Heading, Para, Table, clean
from docchat.ingest.formats.grid import compact, header_rows

_DROP_TAGS = {
    *("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed"),
    *("nav", "aside", "form", "button", "input", "select", "textarea", "label", "head"),
    *("audio", "video", "map", "dialog"),
}
_CHROME = {
    "nav",
    "navbar",
    "navbox",
    "navigation",
    "menu",
    "sidebar",
    "breadcrumb",
    "breadcrumbs",
    "toc",
    "noprint",
    "editsection",
    "cookie",
    "cookies",
    "consent",
    "share",
    "sharing",
    "social",
    "skip",
    "jump",
    "dropdown",
    "pagination",
    "pager",
    "advert",
    "advertisement",
    "popup",
    "modal",
    "catlinks",
    "printfooter",
    "sr-only",
    "visually-hidden",
    "screen-reader-text",
    "toolbar",
}
# A chrome word is a whole class or id word, or a part of one between -/_ ("vector-dropdown",
# not "canvas"); a word with a hyphen of its own ("sr-only") only whole. One regex search per
# element with a class or id: 70 substring selectors made lexbor test every element 70 times.
_CHROME_WORD = re.compile(
    r"(?<![^\s_-])(?:"
    + "|".join(sorted((w for w in _CHROME if "-" not in w), key=len, reverse=True))
    + r")(?![^\s_-])|(?<!\S)(?:"
    + "|".join(sorted((re.escape(w) for w in _CHROME if "-" in w), key=len, reverse=True))
    + r")(?!\S)"
)
_INLINE = {
    "a",
    "abbr",
    "b",
    "bdi",
    "bdo",
    "big",
    "cite",
    "code",
    "data",
    "del",
    "dfn",
    "em",
    "font",
    "i",
    "ins",
    "kbd",
    "mark",
    "nobr",
    "q",
    "s",
    "samp",
    "small",
    "span",
    "strike",
    "strong",
    "sub",
    "sup",
    "time",
    "tt",
    "u",
    "var",
    "wbr",
    "picture",
    "source",
    "-text",
}
#: An element whose class or id names chrome is kept when it holds more than this share of
#: the text of the page's content.
CONTENT_SHARE = 0.5
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_MAX_SPAN = 1000  # a colspan/rowspan beyond any real table's width
_ROLES = {
    "navigation",
    "search",
    "complementary",
    "contentinfo",
    "menu",
    "menubar",
    "dialog",
    "banner",
}


_MAKER = LexborHTMLParser("")


def _id(tag: str) -> int:
    """lexbor's id of a tag name: the walk compares ints, not tag strings it would have to
    copy out of the tree for each node."""
    return int(_MAKER.create_node(tag).tag_id)


# A text node and a comment have no tag name to make them from: lexbor's LXB_TAG__TEXT and
# LXB_TAG__EM_COMMENT (tag/const.h).
_TEXT_ID = 2
_COMMENT_ID = 4
_DROP_IDS = frozenset(map(_id, _DROP_TAGS))
_PAGE_EDGE_IDS = frozenset(map(_id, ("header", "footer")))
# Lexbor numbers the tags it knows below this; a tag it does not know gets a pointer as its id.
_KNOWN_TAGS = 0xFFFF
_UNWRAP_IDS = frozenset(map(_id, _INLINE - {"-text"}))
_INLINE_IDS = _UNWRAP_IDS | {_COMMENT_ID}
_HEADING_IDS = {_id(tag): level for tag, level in _HEADINGS.items()}
_UL, _OL, _MENU, _LI, _TABLE, _PRE, _IMG, _BR = map(
    _id, ("ul", "ol", "menu", "li", "table", "pre", "img", "br")
)
_TR, _TD, _TH, _THEAD, _TBODY, _TFOOT, _ARTICLE = map(
    _id, ("tr", "td", "th", "thead", "tbody", "tfoot", "article")
)


def page_blocks(html: str) -> tuple[str, list[Block]]:
    """A web page's title and its main content as blocks, chrome removed."""
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    root = _main_root(tree)
    if root is None:
        return (clean(title_node.text()) if title_node else ""), []
    for node in _chrome(root):
        node.remove()  # unlinked, not freed: a chrome node may sit inside one removed before
    _flatten_inline(root)
    h1s = root.css("h1")
    title = clean(h1s[0].text()) if len(h1s) == 1 else ""
    title = title or (clean(title_node.text()) if title_node else "")
    walker = _Walker(image_alt=False)
    walker.walk(root)
    return title, walker.finish()


def docx_html_blocks(html: str) -> tuple[str, list[Block]]:
    """The text of the first Title paragraph (mammoth writes it as h1.title) and the blocks of
    mammoth's HTML: no chrome to remove; footnote back-links dropped."""
    tree = LexborHTMLParser(html)
    root = tree.body
    if root is None:
        return "", []
    for node in root.css('a[href^="#footnote-ref"], a[href^="#endnote-ref"]'):
        node.decompose()
    title = root.css_first("h1.title")
    _flatten_inline(root)
    walker = _Walker(image_alt=True)
    walker.walk(root)
    return (inline_text(title) if title is not None else ""), walker.finish()


_HIDDEN_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.I)


def _chrome(root: LexborNode) -> list[LexborNode]:
    """The elements of a page's content that are chrome: by tag, found with one traversal
    (22 tag selectors made lexbor test each element 22 times: 0.84 ms against 0.3 ms on the
    Wikipedia page), and by attribute, found by two selectors and checked here."""
    edges = root.tag == "body"  # a page without <main>: its header and footer are chrome
    found = []
    for node in root.traverse():
        tag_id = node.tag_id
        if tag_id in _DROP_IDS or (
            edges and tag_id in _PAGE_EDGE_IDS and not _inside(node, _ARTICLE)
        ):
            found.append(node)
    for node in root.css("[hidden], [aria-hidden=true], [role]"):
        role = node.attributes.get("role")
        if role is None or role in _ROLES:
            found.append(node)
    # Hidden by its own style, as a filing's inline XBRL header is (`<div style="display:none">
    # <ix:header>`: the facts' contexts, "false 2024 FY 0000320193 P1Y ...", before the cover).
    found.extend(
        node for node in root.css("[style]") if _HIDDEN_STYLE.search(node.attrs["style"] or "")
    )
    named = [node for node in root.css("[class]") if _chrome_names(node.attrs["class"] or "")]
    named += [node for node in root.css("[id]") if _chrome_names(node.id or "")]
    return found + _named_chrome(root, named)


def _named_chrome(root: LexborNode, named: list[LexborNode]) -> list[LexborNode]:
    """The elements of `named` (their class or id says chrome) that are chrome: not one that
    holds most of the page's text, which is its content (an R Markdown vignette's article is
    div.toc-content, beside its div#TOC). One inside an element already dropped goes with it,
    its text never measured (on the Wikipedia page that halves the cost: 2.6 ms, not 5.3)."""
    if not named:
        return []
    most = len(root.text(deep=True, separator="", strip=False)) * CONTENT_SHARE
    dropped: set[int] = set()
    chrome = []
    for node in sorted(named, key=_depth):
        if _inside_any(node, dropped):
            continue
        if len(node.text(deep=True)) <= most:
            dropped.add(node.mem_id)
            chrome.append(node)
    return chrome


def _depth(node: LexborNode) -> int:
    depth, parent = 0, node.parent
    while parent is not None:
        depth, parent = depth + 1, parent.parent
    return depth


def _inside_any(node: LexborNode, ids: set[int]) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.mem_id in ids:
            return True
        parent = parent.parent
    return False


def _flatten_inline(root: LexborNode) -> None:
    """Unwrap inline elements (their text stays) and merge the text nodes left side by side:
    the Python walk then visits a third of the nodes (measured on the Wikipedia page). One
    traversal comparing tag ids finds them (a selector of 33 tags: 0.9 ms against 0.3 ms)."""
    for node in [n for n in root.traverse() if n.tag_id in _UNWRAP_IDS or _prefixed(n)]:
        node.unwrap()
    root.merge_text_nodes()


def _prefixed(node: LexborNode) -> bool:
    """An element of a namespace prefix, as inline XBRL wraps each fact in its sentence (
    "<ix:nonNumeric>NVIDIA CORP</ix:nonNumeric>ORATION", "<ix:nonFraction>60.9</ix:nonFraction>
    billion"): its text belongs to the text around it. Lexbor gives a tag it does not know an
    id above its own (a pointer), and only those are looked at by name."""
    return node.tag_id > _KNOWN_TAGS and ":" in (node.tag or "")


def _main_root(tree: LexborHTMLParser) -> LexborNode | None:
    for selector in ("main", "[role=main]", "article"):
        found = tree.css(selector)
        if len(found) == 1:
            return found[0]
    return tree.body


def _inside(node: LexborNode, tag_id: int) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag_id == tag_id:
            return True
        parent = parent.parent
    return False


@functools.lru_cache(maxsize=4096)
def _chrome_names(names: str) -> bool:
    # A page repeats its class names: of the Wikipedia page's 2,289 elements with a class or
    # an id, 916 are distinct.
    return _CHROME_WORD.search(names.lower()) is not None


def inline_text(node: LexborNode) -> str:
    """A node's text on one line: blocks and line breaks inside it become spaces."""
    parts: list[str] = []
    _collect(node, parts)
    return clean("".join(parts))


def _collect(node: LexborNode, parts: list[str]) -> None:
    for child in node.iter(include_text=True):
        tag_id = child.tag_id
        if tag_id == _TEXT_ID:
            parts.append(child.text_content or "")
        elif tag_id in _INLINE_IDS:
            _collect(child, parts)
        elif tag_id != _IMG:
            parts.append(" ")
            _collect(child, parts)
            parts.append(" ")


class _Walker:
    """Turns a tree into blocks: inline text gathers until a block boundary flushes it."""

    def __init__(self, *, image_alt: bool) -> None:
        self.blocks: list[Block] = []
        self.inline: list[str] = []
        self.prefix = ""  # what the next flushed line starts with (a list marker, an indent)
        self.indent = ""  # what later lines of the same list item start with
        self.image_alt = image_alt

    def finish(self) -> list[Block]:
        self.flush()
        return self.blocks

    def flush(self) -> None:
        if not self.inline:  # most boundaries have nothing gathered
            return
        text = clean("".join(self.inline))
        self.inline.clear()
        if text:
            self.blocks.append(Para(self.prefix + text))
            self.prefix = self.indent

    def walk(self, node: LexborNode) -> None:
        gather = self.inline.append
        for child in node.iter(include_text=True):
            tag_id = child.tag_id
            if tag_id == _TEXT_ID:
                gather(child.text_content or "")
            elif tag_id == _COMMENT_ID:
                continue  # no text, and no boundary: "a<!-- x -->b" is one paragraph
            elif tag_id in _INLINE_IDS:
                self.walk(child)
            elif tag_id in _HEADING_IDS:
                self.flush()
                text = inline_text(child)
                if text:
                    self.blocks.append(Heading(_HEADING_IDS[tag_id], text))
            elif tag_id in (_UL, _OL, _MENU):
                self.flush()
                self._list(child, ordered=tag_id == _OL)
            elif tag_id == _TABLE:
                self.flush()
                self._table(child)
            elif tag_id == _PRE:
                self.flush()
                code = (child.text(deep=True) or "").strip("\n")
                if code.strip():
                    self.blocks.append(Para(f"```\n{code}\n```"))
            elif tag_id == _IMG:
                alt = clean(child.attributes.get("alt") or "")
                if self.image_alt and alt:
                    self.flush()
                    self.blocks.append(Para(f"{self.prefix}Image: {alt}"))
            elif tag_id == _BR:
                self.flush()
            else:  # p, div, section, li out of a list, unknown elements: a block
                self.flush()
                self.walk(child)
                self.flush()

    def _list(self, node: LexborNode, *, ordered: bool) -> None:
        outer = self.indent  # items of a nested list sit under their parent item's text
        number = _int(node.attributes.get("start"), 1)
        for item in node.iter():
            if item.tag_id == _COMMENT_ID:
                continue
            if item.tag_id == _LI:
                marker = f"{number}. " if ordered else "- "
                number += 1
                self.prefix, self.indent = outer + marker, outer + " " * len(marker)
            else:
                self.prefix = self.indent = outer
            self.walk(item)
            self.flush()
        self.prefix = self.indent = outer

    def _table(self, node: LexborNode) -> None:
        rows, head = _table_rows(node)
        caption = node.css_first("caption")
        if caption is not None:
            text = inline_text(caption)
            if text:
                self.blocks.append(Para(text))
        # One query on the table, not one per cell (a table inside is always in a cell); a
        # node's css() includes the node itself.
        if len(node.css("table")) > 1:
            for row in rows:  # a layout table: its cells are the page's blocks
                for cell in row:
                    self.walk(cell)
                    self.flush()
            return
        grid, heading = _grid(rows, head)
        if grid:
            self.blocks.append(Table(rows=grid, header_rows=heading))


def _table_rows(table: LexborNode) -> tuple[list[list[LexborNode]], int]:
    """The table's own rows (never a nested table's), thead first, as lists of cells; and
    how many rows the thead has."""
    head: list[LexborNode] = []
    body: list[LexborNode] = []
    foot: list[LexborNode] = []
    groups = {_THEAD: head, _TBODY: body, _TFOOT: foot}
    for child in table.iter():
        tag_id = child.tag_id
        if tag_id == _TR:
            body.append(child)
        elif tag_id in groups:
            groups[tag_id].extend(tr for tr in child.iter() if tr.tag_id == _TR)
    cells = (_TD, _TH)
    rows = [[c for c in tr.iter() if c.tag_id in cells] for tr in head + body + foot]
    return rows, len(head)


def _grid(rows: list[list[LexborNode]], head: int) -> tuple[list[list[str]], int]:
    """Cell texts on a grid: a spanning cell's text in its first cell, spanned cells empty."""
    filled: dict[tuple[int, int], str] = {}
    spans: dict[tuple[int, int], int] = {}  # a cell spanning columns: its first, and how many
    width = 0
    for r, row in enumerate(rows):
        c = 0
        for cell in row:
            while (r, c) in filled:
                c += 1
            attrs = cell.attributes
            colspan = min(_int(attrs.get("colspan"), 1), _MAX_SPAN)
            rowspan = min(_int(attrs.get("rowspan"), 1), len(rows) - r)
            for dr in range(max(rowspan, 1)):
                for dc in range(max(colspan, 1)):
                    filled[(r + dr, c + dc)] = ""
            filled[(r, c)] = inline_text(cell)
            if colspan > 1:
                spans[(r, c)] = colspan
            c += max(colspan, 1)
        width = max(width, c)
    grid = compact(
        [[filled.get((r, c), "") for c in range(width)] for r in range(len(rows))], spans
    )
    if not head:  # leading rows of <th> only are header rows
        while head < len(rows) and rows[head] and all(c.tag_id == _TH for c in rows[head]):
            head += 1
    kept = [row for row in grid if any(row)]
    if not head:  # nothing says: the rows before the values start (`header_rows`)
        return kept, header_rows(kept)
    return kept, max(sum(1 for row in grid[:head] if any(row)), 1)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
