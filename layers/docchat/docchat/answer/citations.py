"""Citations: the `[n]` markers of a model's answer as the passages, pages and sentences
they cite."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from docchat.models import Chunk, Citation, source_name
from docchat.search.sentences import QUOTE_CHARS, Span, chunk_sentences
from docchat.search.terms import terms

_MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")


def citations_for_answer(answer: str, sources: Sequence[Chunk]) -> list[Citation]:
    """Citations for the `[n]` markers in `answer`, where `sources[n-1]` is passage n.

    Each cites the passage's sentence (or table row) that best matches the claim around the
    marker, with the page that sentence is on. Markers naming a passage that was never
    retrieved are dropped.
    """
    citations: list[Citation] = []
    seen: set[tuple[int, int, str]] = set()
    for claim, numbers in _claims(answer):
        wanted = terms(claim)
        for number in numbers:
            if not 1 <= number <= len(sources):
                continue
            chunk = sources[number - 1]
            span = best_quote(chunk, wanted) or _opening(chunk)
            if span is None or (number, span.page, span.text) in seen:
                continue
            seen.add((number, span.page, span.text))
            citations.append(
                citation(number, chunk, span.page, span.text, table_header=span.table_header)
            )
    return citations


def citation(
    number: int,
    chunk: Chunk,
    page: int,
    quote: str,
    *,
    table_header: Sequence[str],
    page_end: int | None = None,
) -> Citation:
    """Passage `number` (a retrieved chunk) cited at `page` with `quote`; a quoted table row
    with its table's header rows; a quote going on at the top of the next page ends on
    `page_end`."""
    return Citation(
        number=number,
        doc_id=chunk.doc_id,
        title=chunk.title,
        source=source_name(chunk.source),
        page=page,
        label=chunk.label_of(page),
        quote=quote,
        table_header=list(table_header),
        page_end=page_end if page_end is not None and page_end != page else None,
    )


def best_quote(chunk: Chunk, wanted: set[str], *, limit: int = QUOTE_CHARS) -> Span | None:
    """The chunk's sentence or table row sharing most words with `wanted` (a row's header
    rows count as its words)."""
    best: tuple[float, Span] | None = None
    for span in chunk_sentences(chunk):
        hits = len(wanted & terms(span.with_header))
        if not hits or len(span.text) > limit:
            continue
        score = hits + 0.1 * min(len(span.text), 200) / 200
        if best is None or score > best[0]:
            best = (score, span)
    return best[1] if best else None


def _claims(answer: str) -> Iterator[tuple[str, list[int]]]:
    """(text before the marker in its sentence, cited numbers) for each marker group."""
    start = 0
    for match in _MARKER.finditer(answer):
        sentence_start = max(
            answer.rfind(". ", 0, match.start()), answer.rfind("\n", 0, match.start())
        )
        claim = answer[max(start, sentence_start + 1) : match.start()]
        numbers = [int(n) for n in match.group(1).split(",")]
        yield claim or answer[: match.start()], numbers
        start = match.end()


def _opening(chunk: Chunk) -> Span | None:
    spans = chunk_sentences(chunk)
    return spans[0] if spans else None
