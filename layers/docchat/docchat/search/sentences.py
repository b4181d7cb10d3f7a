"""Sentence spans of page text: abbreviations, decimals, list items and headings kept whole.

Our own rules rather than pysbd (MIT, 0.5 MB, pure Python): pysbd's last release is 0.3.4 from
2021, and it took 5.1 ms per 700 characters here, about 50x this module, which runs once per
retrieved passage in the chat Lambda and 7,000 times per COVID-QA evaluation. Page text from a
PDF is narrower than what pysbd handles: one paragraph or list item per line, where a line
break before a lower-case word only wraps a sentence.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise

from docchat.models import Chunk

# A quote is at most this long: a longer sentence is quoted up to a word end (`clip`).
QUOTE_CHARS = 400

# Words whose period ends no sentence (casefolded, without the period). "etc." is left out:
# it ends sentences as often as not.
ABBREVIATIONS = frozenset(
    [
        "al",
        "approx",
        "art",
        "b.a",
        "b.sc",
        "ca",
        "cf",
        "ch",
        "co",
        "corp",
        "dept",
        "dr",
        "e.g",
        "eq",
        "eqs",
        "est",
        "fig",
        "figs",
        "gen",
        "govt",
        "i.e",
        "inc",
        "jr",
        "ltd",
        "m.d",
        "mr",
        "mrs",
        "ms",
        "mt",
        "no",
        "nos",
        "op",
        "p",
        "pp",
        "ph.d",
        "prof",
        "pub",
        "ref",
        "refs",
        "rev",
        "sec",
        "secs",
        "sr",
        "st",
        "u.k",
        "u.n",
        "u.s",
        "u.s.a",
        "u.s.c",
        "viz",
        "vol",
        "vols",
        "vs",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    ]
)
# A list marker opening a line: "1.", "2)", "(a)", "a.", "iv.", "•", "-", "*", "!" (the
# pdfium rendering of a Wingdings bullet).
LIST_MARKER = re.compile(
    r"(?:\(?(?:\d{1,3}|[a-zA-Z]|[ivxlcdm]{1,5})[.)](?=\s)|[•\u2022\u25aa\u25cf\u2013\-*!](?=\s))"
)
_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s)")
_ACRONYM = re.compile(r"(?:[a-z]\.)+[a-z]")
_INLINE_ITEM = re.compile(r"(?:^|\b(?:and|or))\s*\d{1,2}$")
_NEXT_START = re.compile(r"\s+([\"'\u201c\u2018(\[]?)(\S)")
_PHYSICAL_LINE = re.compile(r"[^\n]+")
# A pipe table's delimiter line: "| --- | --- |" (alignment colons allowed).
_DELIMITER = re.compile(r"\|(?:\s*:?-{3,}:?\s*\|)+")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each sentence of `text`, in order, outer whitespace excluded.

    A line is a paragraph, a heading, a list item or a table row; a line break inside a
    sentence (the next line starts in lower case and is no list item) does not end it. Within
    a line, a sentence ends at . ! or ? before a space, unless the word ending there is an
    abbreviation, an initial or a list marker, or the next word starts in lower case. A table
    row (`table_rows`) is one span, whole, never split nor joined with a neighbour; a table's
    header rows and delimiter line are no span of their own.
    """
    spans: list[tuple[int, int]] = []
    at = 0
    for table in _tables(text):
        spans.extend(_prose_spans(text, at, table.start))
        spans.extend((row.start, row.end) for row in table.rows)
        at = table.end
    spans.extend(_prose_spans(text, at, len(text)))
    return spans


@dataclass(frozen=True)
class TableRow:
    """A body row of a markdown pipe table in page text (one row per line, header rows, then
    a `| --- |` delimiter line, then body rows): text[start:end] is the row's line, `header`
    the lines of its table's header rows as they stand (none when the table's head is not in
    the text, as in a chunk that starts inside a table)."""

    start: int
    end: int
    header: tuple[str, ...]


_CELL_BAR = re.compile(r"(?<!\\)\|")


def row_cells(line: str) -> list[str]:
    """The cells of a table row's line (`| a | b |`), as printed."""
    return [cell.strip().replace("\\|", "|") for cell in _CELL_BAR.split(line.strip())[1:-1]]


def column_names(header: Sequence[str]) -> list[str]:
    """Each column's name: its cells in the header rows, top to bottom, where a spanning
    cell's text (in its first column, the others empty: "Year Ended December 31,") names the
    columns it spans; the last header row spans nothing ("| Years ended | 2019 | 2018 |")."""
    rows = [row_cells(line) for line in header]
    width = max((len(r) for r in rows), default=0)
    names: list[list[str]] = [[] for _ in range(width)]
    for n, cells in enumerate(rows):
        spanning = ""
        for i in range(width):
            cell = cells[i] if i < len(cells) else ""
            spanning = cell or (spanning if n < len(rows) - 1 else "")
            if spanning:
                names[i].append(spanning)
    return [" ".join(name) for name in names]


def table_rows(text: str) -> dict[int, TableRow]:
    """The body rows of the tables in `text`, by their start offset."""
    return {row.start: row for table in _tables(text) for row in table.rows}


@dataclass(frozen=True)
class _Table:
    start: int  # of its first line
    end: int  # of its last line
    rows: list[TableRow]


def _tables(text: str) -> list[_Table]:
    """The tables of `text`: runs of consecutive lines that open and close with a pipe."""
    tables: list[_Table] = []
    run: list[tuple[int, int]] = []
    for match in _PHYSICAL_LINE.finditer(text):
        line = match.group()
        start = match.start() + len(line) - len(line.lstrip())
        end = match.start() + len(line.rstrip())
        if _is_table_line(text[start:end]):
            run.append((start, end))
        elif run:
            tables.append(_table(text, run))
            run = []
    if run:
        tables.append(_table(text, run))
    return tables


def _table(text: str, lines: list[tuple[int, int]]) -> _Table:
    """The table of `lines`: those before its (first) delimiter line are its header rows."""
    delimiters = [i for i, (s, e) in enumerate(lines) if _DELIMITER.fullmatch(text[s:e])]
    head = delimiters[0] if delimiters else -1
    header = tuple(text[s:e] for s, e in lines[: max(head, 0)])
    rows = [
        TableRow(s, e, header) for i, (s, e) in enumerate(lines) if i > head and i not in delimiters
    ]
    return _Table(lines[0][0], lines[-1][1], rows)


def _is_table_line(line: str) -> bool:
    return len(line) >= 2 and line.startswith("|") and line.endswith("|")


def _prose_spans(text: str, pos: int, endpos: int) -> Iterator[tuple[int, int]]:
    for start, end in _lines(text, pos, endpos):
        yield from _split_line(text, start, end)


def sentences(text: str) -> list[str]:
    """The sentences of `text`, each as it stands there (inner line breaks kept)."""
    return [text[start:end] for start, end in sentence_spans(text)]


def is_list_item(sentence: str) -> bool:
    """Whether `sentence` opens with a list marker ("2. System caching;")."""
    return LIST_MARKER.match(sentence) is not None


def _lines(text: str, pos: int, endpos: int) -> Iterator[tuple[int, int]]:
    """Spans of logical lines in text[pos:endpos]: a physical line joins the one before it
    when it wraps it."""
    start: int | None = None
    end = 0
    item = False  # whether the logical line so far is a list item
    for match in _PHYSICAL_LINE.finditer(text, pos, endpos):
        line = match.group()
        stripped = line.lstrip()
        if not stripped.strip():
            continue
        first = match.start() + len(line) - len(stripped)
        last = match.start() + len(line.rstrip())
        # "2. System caching;" then "and 4. Information location tools.": two items.
        closed = item and text[end - 1] in ";:"
        wraps = (
            start is not None
            and stripped[0].islower()
            and not is_list_item(stripped)
            and not closed
        )
        if start is not None and not wraps:
            yield start, end
            start = None
        if start is None:
            start = first
            item = is_list_item(stripped)
        end = last
    if start is not None:
        yield start, end


def _split_line(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    line = text[start:end]
    marker = LIST_MARKER.match(line)
    begin = 0
    search_from = marker.end() if marker else 0
    for match in _END.finditer(line, search_from):
        cut = match.end()
        if not _ends_sentence(line, match.start(), cut):
            continue
        yield start + begin, start + cut
        rest = len(line) - len(line[cut:].lstrip())
        begin = rest
    if begin < len(line):
        yield start + begin, end


def _ends_sentence(line: str, stop: int, cut: int) -> bool:
    """Whether the punctuation at line[stop:cut] ends a sentence."""
    following = _NEXT_START.match(line, cut)
    if following is None:
        return False
    if following.group(2).islower():
        return False
    if line[stop] != ".":
        return True
    # The word the period ends: the run of non-space characters back from it (a regex
    # anchored at the end would try every start in the line, for every period in it).
    begin = stop
    while begin and not line[begin - 1].isspace():
        begin -= 1
    token = line[begin : stop + 1].lstrip("\"'\u201c\u2018([").casefold().rstrip(".")
    if token in ABBREVIATIONS:
        return False
    # An initial ("J."), a dotted acronym ("U.S.A.") or an inline list number ("and 4.") is no end.
    if (len(token) == 1 and token.isalpha()) or _ACRONYM.fullmatch(token):
        return False
    return not (token.isdigit() and len(token) <= 2 and _INLINE_ITEM.search(line, 0, stop))


_LETTER = re.compile(r"[^\W\d_]")
# A backslash that ingest/convert.py put before a line's "#", "```", "~~~" or ">" (markdown escape).
_ESCAPE = re.compile(r"\\(?=#|```|~~~|>)")
_ESCAPE_LINE = re.compile(r"(?m)^\\(?=#|```|~~~|>)")


@dataclass(frozen=True)
class Span:
    """A sentence (or sentence run) of a chunk: `text` is chunk.text[start:end], whitespace
    runs made single spaces, on `page`. A table row's `text` is its line as it stands, and
    `table_header` its table's header rows (`TableRow`)."""

    chunk: Chunk
    page: int
    start: int
    end: int
    text: str
    list_item: bool
    table_row: bool = False
    table_header: tuple[str, ...] = ()

    @property
    def with_header(self) -> str:
        """The text with a table row's header rows before it: what the span says."""
        return "\n".join([*self.table_header, self.text])


def chunk_sentences(chunk: Chunk) -> list[Span]:
    """The sentences and table rows of a chunk, in order; none crosses a page break."""
    bounds = [0, *chunk.page_breaks, len(chunk.text)]
    return [
        Span(chunk, chunk.page_start + offset, low + start, low + end, text, item, row, header)
        for offset, (low, high) in enumerate(pairwise(bounds))
        for start, end, text, item, row, header in _page_spans(chunk.text[low:high])
    ]


@functools.lru_cache(maxsize=4096)
def _page_spans(page_text: str) -> tuple[tuple[int, int, str, bool, bool, tuple[str, ...]], ...]:
    """(start, end, text, list_item, table_row, table_header) of each sentence and table row of
    one page's text in a chunk. Remembered: each question's reranker and extractive answer
    split the same passages again, with the GIL held."""
    rows = table_rows(page_text)
    spans = []
    for start, end in sentence_spans(page_text):
        row = rows.get(start)
        if row is None:
            start += 1 if _ESCAPE.match(page_text, start) else 0
        # A row is quoted whole and as it stands: it is one line, its cells verbatim.
        text = page_text[start:end] if row else quote_text(page_text, start, end)
        if not _LETTER.search(text):
            continue
        list_item = row is None and is_list_item(text)
        spans.append((start, end, text, list_item, row is not None, row.header if row else ()))
    return tuple(spans)


def quote_text(text: str, start: int, end: int, *, limit: int | None = QUOTE_CHARS) -> str:
    """text[start:end] as a quote: markdown escapes at line starts dropped, whitespace runs
    made single spaces, clipped to `limit`."""
    quote = " ".join(_ESCAPE_LINE.sub("", text[start:end]).split())
    return quote if limit is None else clip(quote, limit)


def clip(text: str, limit: int) -> str:
    """`text`, or its head up to a word end when longer than `limit` (still verbatim)."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit]
