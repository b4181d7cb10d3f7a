"""Quotes and citations: which sentence of a retrieved chunk backs a claim, and on which page."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import pairwise

from docchat.models import Chunk, Citation, source_name

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+[\"\u201d\u2019)]*|\n|$)")
_SOFT_BREAK = re.compile(r"\n+(?=[a-z(])")
_WORD = re.compile(r"[a-z0-9]+")
_MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)
QUOTE_CHARS = 400


def terms(text: str) -> set[str]:
    """Content words of `text`, crudely stemmed, for overlap scoring."""
    return {w[:6] for w in _WORD.findall(text.casefold()) if w not in _STOP}


def best_quote(
    chunk: Chunk, wanted: set[str], *, limit: int = QUOTE_CHARS
) -> tuple[int, str] | None:
    """The page and text of the chunk's sentence run sharing most words with `wanted`."""
    best: tuple[float, int, str] | None = None
    for page, sentences in _sentences_by_page(chunk):
        for i in range(len(sentences)):
            text = sentences[i]
            if i + 1 < len(sentences) and len(text) + len(sentences[i + 1]) < limit // 2:
                text = f"{text} {sentences[i + 1]}"  # a short sentence reads better with the next
            hits = len(wanted & terms(text))
            if not hits or len(text) > limit:
                continue
            complete = text.endswith((".", "!", "?", '"', "\u201d", ")"))
            score = hits + 0.5 * complete + 0.1 * min(len(text), 200) / 200
            if best is None or score > best[0]:
                best = (score, page, text)
    return (best[1], best[2]) if best else None


def _sentences_by_page(chunk: Chunk) -> Iterator[tuple[int, list[str]]]:
    """Sentences of a chunk grouped by the page they are on; none crosses a page break."""
    bounds = [0, *chunk.page_breaks, len(chunk.text)]
    for offset, (start, end) in enumerate(pairwise(bounds)):
        # A line break before a lower-case word is inside a sentence, not between two.
        text = _SOFT_BREAK.sub(" ", chunk.text[start:end])
        sentences = [" ".join(match.group().split()) for match in _SENTENCE.finditer(text)]
        yield chunk.page_start + offset, [s for s in sentences if len(s) >= 20]


def citations_for_answer(answer: str, sources: Sequence[Chunk]) -> list[Citation]:
    """Citations for the `[n]` markers in `answer`, where `sources[n-1]` is passage n.

    Each cites the passage's sentence that best matches the claim around the marker, with the
    page that sentence is on. Markers naming a passage that was never retrieved are dropped.
    """
    citations: list[Citation] = []
    seen: set[tuple[int, int, str]] = set()
    for claim, numbers in _claims(answer):
        wanted = terms(claim)
        for number in numbers:
            if not 1 <= number <= len(sources):
                continue
            chunk = sources[number - 1]
            quote = best_quote(chunk, wanted) or _opening(chunk)
            if quote is None or (number, *quote) in seen:
                continue
            seen.add((number, *quote))
            citations.append(citation(number, chunk, *quote))
    return citations


def citation(number: int, chunk: Chunk, page: int, quote: str) -> Citation:
    """Passage `number` (a retrieved chunk) cited at `page` with `quote`."""
    return Citation(
        number=number,
        doc_id=chunk.doc_id,
        title=chunk.title,
        source=source_name(chunk.source),
        page=page,
        quote=quote,
    )


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


def _opening(chunk: Chunk) -> tuple[int, str] | None:
    for page, sentences in _sentences_by_page(chunk):
        if sentences:
            return page, sentences[0][:QUOTE_CHARS]
    return None
