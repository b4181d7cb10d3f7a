"""Quotes whose last sentence a chunk's end cuts short, finished from the chunk after it.

A chunk ends where the splitter found room (docchat.ingest.chunk): a paragraph longer than
what is left of a chunk is cut at a line or a word, and the next chunk, which starts up to the
chunk overlap earlier, goes on with it. A quote of that sentence ended at the cut ("… as well
as digital"), and 9 % of a shelf of 10-Ks' chunks end so. Here it is quoted whole: its rest
as the next chunk has it, so the quote stays verbatim on its pages and cites the page where it
ends. A rest that would make the quote longer than QUOTE_CHARS, a table row and a list item
are left as they are (the quote still says that it is cut).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from docchat.answer.extractive import Quote, cut_off
from docchat.models import Chunk
from docchat.search.sentences import QUOTE_CHARS, Span, chunk_sentences, quote_text

# Characters of the cut sentence's end looked for in the next chunk, which repeats them when
# the chunks overlap: enough not to be found by chance in the overlap.
TAIL = 60


def ends_cut(chunk: Chunk) -> bool:
    """Whether the chunk's last sentence is cut short by its end (see `cut_off`)."""
    spans = chunk_sentences(chunk)
    return bool(spans) and _last_of_its_chunk(spans[-1]) and cut_off(spans[-1])


def finished(quotes: Sequence[Quote], following: Mapping[str, Chunk]) -> list[Quote]:
    """`quotes`, each whose last sentence its chunk's end cuts short going on to the end of
    that sentence in the chunk after it (`following`, by the earlier chunk's id)."""
    return [_finished(q, following.get(q.last.chunk.chunk_id)) for q in quotes]


def _finished(quote: Quote, after: Chunk | None) -> Quote:
    last = quote.last
    if after is None or last.table_row or last.list_item or not _last_of_its_chunk(last):
        return quote
    whole = quote_text(last.chunk.text, last.start, last.end, limit=None)
    if last.text != whole or not quote.text.endswith(whole) or not cut_off(last):
        return quote  # clipped already: a rest would not follow what is quoted
    rest = _rest(last, after)
    if rest is None or len(quote.text) + 1 + len(rest[0]) > QUOTE_CHARS:
        return quote
    text, ending = rest
    return replace(quote, text=f"{quote.text} {text}", last=ending)


def _last_of_its_chunk(span: Span) -> bool:
    return not span.chunk.text[span.end :].strip()


def _rest(span: Span, after: Chunk) -> tuple[str, Span] | None:
    """The rest of `span`'s sentence in `after` and the sentence of `after` it ends with; None
    when `after` does not go on with it."""
    if after.headings != span.chunk.headings:
        return None  # a heading stands between: not the rest of the sentence as the page has it
    start = _goes_on_at(span, after)
    if start is None:
        return None
    ending = next((s for s in chunk_sentences(after) if s.end > start), None)
    if ending is None or ending.table_row or ending.list_item:
        return None
    text = quote_text(after.text, start, ending.end, limit=None)
    return (text, ending) if text else None


def _goes_on_at(span: Span, after: Chunk) -> int | None:
    """Where `after`'s text goes on from the end of `span`'s chunk: past the end of `span`
    that it repeats (the chunks' overlap), or at its start when it repeats none; only in
    lower case, as the rest of a sentence goes on."""
    text = span.chunk.text
    tail = text[max(span.start, span.end - TAIL) : span.end]
    at = after.text.find(tail) if len(tail) >= TAIL // 2 else -1
    start = at + len(tail) if at >= 0 else 0
    rest = after.text[start:].lstrip()
    # A capital there opens a sentence of its own (after a heading cut as if it were prose).
    return len(after.text) - len(rest) if rest[:1].islower() else None
