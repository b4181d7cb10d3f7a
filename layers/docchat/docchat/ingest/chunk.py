"""Pages -> chunks: split at headings, then by size, keeping each chunk's exact page span."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence

from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

from docchat.errors import ConfigError
from docchat.models import Chunk, Page

_HEADERS = [("#", "h1"), ("##", "h2"), ("###", "h3")]
# A page marker on its own line survives both splitters (the header splitter keeps printable
# text only: see `_printable`).
_MARK = "⟦{}⟧"
# Where `_printable` finds stand-ins: CJK ideographs are printable, not whitespace, and no
# splitter separator, so a stand-in changes neither lengths nor split points.
_STAND_INS = range(0x4E00, 0xA000)
_MARK_RE = re.compile(r"⟦(\d+)⟧")
_HEADING_RE = re.compile(r"^#{1,3} (.*)$", re.MULTILINE)


def chunks_from_pages(
    pages: Sequence[Page],
    *,
    doc_id: str,
    version: str,
    source: str,
    title: str,
    chunk_size: int,
    chunk_overlap: int,
) -> list[Chunk]:
    """Split markdown pages into chunks whose page_start/page_end are exact; the tuned
    `chunk_size` and `chunk_overlap` are the settings'."""
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
        for piece in splitter.create_documents([content]):
            text, spans = _unmark(piece.page_content, page_at(piece.metadata["start_index"]))
            if text:
                built.append((headings, text, spans))
        page = page_at(len(content))
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
    chunks = [
        Chunk(
            chunk_id=f"{doc_id}:{version[:12]}:{n:05d}",
            doc_id=doc_id,
            version=version,
            source=source,
            title=title,
            headings=headings,
            page_start=spans[0],
            page_end=spans[0] + len(spans[1:]),
            page_breaks=spans[1:],
            text=text,
        )
        for n, (headings, text, spans) in enumerate(built)
    ]
    return chunks


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
