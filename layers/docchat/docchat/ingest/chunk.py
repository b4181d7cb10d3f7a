"""Pages -> chunks: split at headings, then by size, keeping each chunk's exact page span."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence

from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

from docchat.errors import ConfigError
from docchat.models import Chunk, Page, chunk_id_of, own_file_name

_HEADERS = [("#", "h1"), ("##", "h2"), ("###", "h3")]
# A page marker on its own line survives both splitters (the header splitter keeps printable
# text only: see `_printable`).
_MARK = "⟦{}⟧"
# Where `_printable` finds stand-ins: CJK ideographs are printable, not whitespace, and no
# splitter separator, so a stand-in changes neither lengths nor split points.
_STAND_INS = range(0x4E00, 0xA000)
_MARK_RE = re.compile(r"⟦(\d+)⟧")
_HEADING_RE = re.compile(r"^#{1,3} (.*)$", re.MULTILINE)
# A table in page text (specs/table-text.md): header rows (a few: the bound keeps a page of
# lines that start and end with a bar from costing a scan per line), delimiter, body rows.
_TABLE = re.compile(
    r"^(?P<header>(?:\|.*\|\n){1,10}?\|(?: --- \|)+)\n(?P<body>\|.*\|(?:\n\|.*\|)*)$", re.MULTILINE
)
_MAX_CAPTION = 200  # characters: a longer paragraph above a table is text, not its caption


def chunks_from_pages(
    pages: Sequence[Page],
    *,
    doc_id: str,
    version: str,
    source: str,
    title: str,
    chunk_size: int,
    chunk_overlap: int,
    name: str = "",
) -> list[Chunk]:
    """Split markdown pages into chunks whose page_start/page_end are exact; the tuned
    `chunk_size` and `chunk_overlap` are the settings'. `name` is the file's name when the
    document was read as one its source does not end in."""
    if chunk_size < 100:
        raise ConfigError(f"chunk size ({chunk_size}) must be at least 100 characters")
    if not 0 <= chunk_overlap < chunk_size:
        raise ConfigError(
            f"chunk overlap ({chunk_overlap}) must be between 0 and the chunk size ({chunk_size})"
        )
    marked, restore = _printable(
        "\n".join(f"{_MARK.format(p.number)}\n{p.markdown}\n" for p in pages)
    )
    sections = MarkdownHeaderTextSplitter(_HEADERS, strip_headers=True).split_text(marked)
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, add_start_index=True
    )
    built: list[tuple[list[str], str, list[int]]] = []
    page = pages[0].number if pages else 1
    for section in sections:
        headings = [
            restore(section.metadata[key]).strip() for _, key in _HEADERS if key in section.metadata
        ]
        content = restore(section.page_content).replace("  \n", "\n")
        page_at = _page_finder(content, page)
        captions = _captions(content)
        for start, raw in _pieces(content, splitter, chunk_size=chunk_size):
            text, spans = _unmark(raw, page_at(start))
            if text:
                built.append((headings + _caption_left_out(text, captions.get(start)), text, spans))
        page = page_at(len(content))
    _keep_lone_headings(built, pages)
    # A non-PDF document's locations carry labels its chunks keep for citations: one for
    # each page from page_start to page_end (spans are the first page, then break offsets).
    labels = {p.number: p.where for p in pages} if any(p.label for p in pages) else {}
    named = own_file_name(source, name)
    chunks = [
        Chunk(
            chunk_id=chunk_id_of(doc_id, version, n),
            doc_id=doc_id,
            version=version,
            source=source,
            title=title,
            headings=headings,
            page_start=spans[0],
            page_end=spans[0] + len(spans[1:]),
            page_breaks=spans[1:],
            page_labels=[labels[page] for page in range(spans[0], spans[0] + len(spans))]
            if labels
            else [],
            text=text,
            file_name=named,
        )
        for n, (headings, text, spans) in enumerate(built)
    ]
    return chunks


def _keep_lone_headings(
    built: list[tuple[list[str], str, list[int]]], pages: Sequence[Page]
) -> None:
    """Put each heading that no chunk of `built` carries into them (in place)."""
    # A heading with no text under it lives on in the headings of the chunks below it; the
    # splitter drops one that a heading of its own level follows ("Circumvention of ..." then
    # "General approach"): it joins the headings of the first chunk under the next heading,
    # before that heading. One that nothing follows (a one-line PDF whose line is a heading, a
    # last heading) is a chunk of its own, in page order: never a chunk next to the text it
    # names, where its words alone would outrank the text (and be quoted as an answer).
    carried = {heading for headings, _, _ in built for heading in headings}
    found = _headings(pages)
    for k, (number, heading) in enumerate(found):
        if heading in carried:
            continue
        carried.add(heading)
        after = next((later for _, later in found[k + 1 :] if later in carried), None)
        under = next((i for i, b in enumerate(built) if after and after in b[0]), None)
        if under is not None:
            headings, text, spans = built[under]
            place = headings.index(after) if after in headings else len(headings)
            built[under] = ([*headings[:place], heading, *headings[place:]], text, spans)
            continue
        at = next((i for i, b in enumerate(built) if b[2][0] > number), len(built))
        built.insert(at, ([], heading, [number]))


def _pieces(
    content: str, splitter: RecursiveCharacterTextSplitter, *, chunk_size: int
) -> Iterator[tuple[int, str]]:
    """(offset in `content`, text) of each piece of a section: the splitter's pieces of the
    text between tables, and each table whole or, when too long for one chunk, split between
    rows with its header rows over each piece (the splitter would cut it at any line)."""
    done = 0
    for table in _TABLE.finditer(content):
        yield from _split(content[done : table.start()], done, splitter)
        yield from ((table.start(), rows) for rows in _table_pieces(table, chunk_size))
        done = table.end()
    yield from _split(content[done:], done, splitter)


def _split(
    text: str, offset: int, splitter: RecursiveCharacterTextSplitter
) -> Iterator[tuple[int, str]]:
    for piece in splitter.create_documents([text]):
        yield offset + piece.metadata["start_index"], piece.page_content


def _table_pieces(table: re.Match[str], chunk_size: int) -> Iterator[str]:
    """The table's body rows in runs that fit a chunk (one row at least) under its header
    rows and delimiter line; a row is never cut."""
    header, body = table.group("header"), table.group("body").split("\n")
    rows: list[str] = []
    for row in body:
        if rows and len(header) + sum(len(r) + 1 for r in rows) + len(row) >= chunk_size:
            yield "\n".join([header, *rows])
            rows = []
        rows.append(row)
    if rows:
        yield "\n".join([header, *rows])


def _captions(content: str) -> dict[int, list[str]]:
    """Each table's caption by the table's offset in `content`: the short paragraphs just above
    it on its page (a title, a units line such as "(in millions)"), up to two."""
    # By offset, not by the table's first line: a filing's tables share header rows
    # ("| (Millions) | 2018 | 2017 | 2016 |"), and the cash-flow statement took the caption of a
    # note's table further down (3M's 2018 10-K, FinanceBench's capital-expenditure question).
    found: dict[int, list[str]] = {}
    for table in _TABLE.finditer(content):
        page = content[: table.start()].rpartition("⟧")[2]  # a caption is on the table's page
        lines = [line.strip() for line in page.strip().split("\n")[-2:] if line.strip()]
        while lines and (len(lines[0]) > _MAX_CAPTION or lines[0].startswith("|")):
            lines.pop(0)
        if lines and all(len(p) <= _MAX_CAPTION and not p.startswith("|") for p in lines):
            found[table.start()] = lines
    return found


def _caption_left_out(text: str, caption: list[str] | None) -> list[str]:
    """The caption of the table `text` is a piece of, when `text` itself does not hold it (every
    piece of a table: the splitter parts a table from the paragraphs above it)."""
    if not caption or all(line in text for line in caption):
        return []
    return [" ".join(caption)]


def _printable(text: str) -> tuple[str, Callable[[str], str]]:
    """`text` with each unprintable character (a thin or no-break space, a tab, a private-use
    glyph) but line ends swapped for a printable stand-in that `text` lacks, and the function
    that swaps them back. langchain's markdown splitter drops unprintable characters, which
    glued "35 000" into "35000": chunk text must be the page text."""
    kinds = sorted({c for c in text if not c.isprintable() and c not in "\n\r"})
    if not kinds:
        return text, lambda piece: piece
    present = set(text)
    free = (chr(code) for code in _STAND_INS if chr(code) not in present)
    swap: dict[str, str | int | None] = dict(zip(kinds, free, strict=False))
    back = str.maketrans({str(stand_in): kind for kind, stand_in in swap.items()})
    return text.translate(str.maketrans(swap)), lambda piece: piece.translate(back)


def _headings(pages: Sequence[Page]) -> list[tuple[int, str]]:
    """(page number, text) of each heading the header splitter recognises, in order."""
    return [
        (page.number, match.group(1).strip())
        for page in pages
        for match in _HEADING_RE.finditer(page.markdown)
        if match.group(1).strip()
    ]


def _page_finder(text: str, page: int) -> Callable[[int], int]:
    """The page in force at an offset of `text`: the last marker ending by it, else `page`."""
    ends: list[int] = []
    numbers = [page]
    for mark in _MARK_RE.finditer(text):
        ends.append(mark.end())
        numbers.append(int(mark.group(1)))
    return lambda offset: numbers[bisect_right(ends, offset)]


def _unmark(raw: str, page: int) -> tuple[str, list[int]]:
    """Drop page markers; return the text and [first page, offset of each later page...]."""
    parts = _MARK_RE.split(raw)
    segments = [(page, parts[0])] + [(int(parts[i]), parts[i + 1]) for i in range(1, len(parts), 2)]
    text = ""
    first = last = 0
    breaks: list[int] = []
    for number, segment in segments:
        segment = segment.strip()
        if not segment:
            continue
        if not text:
            first = last = number
            text = segment
            continue
        text += "\n"
        breaks.extend([len(text)] * (number - last))
        last = number
        text += segment
    return text, [first, *breaks]
