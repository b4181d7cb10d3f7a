"""The offline answerer: no language model, so the answer quotes the best-matching passages."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import pairwise

from docchat.models import Answer, Citation, Passage

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+[\"\u201d\u2019)]*|\n|$)")
_SOFT_BREAK = re.compile(r"\n+(?=[a-z(])")
_WORD = re.compile(r"[a-z0-9]+")
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
MODE = "extractive"
NOTICE = (
    "No language model is configured, so this answer is extractive: "
    "the passages below are quoted from your documents as the best matches for the question."
)
NOT_FOUND = "The indexed documents do not contain a passage that matches the question."


def extractive_answer(
    question: str, passages: Sequence[Passage], *, max_quotes: int = 4, quote_chars: int = 400
) -> Answer:
    """Quote the best sentence run of each top passage, each cited with its exact page."""
    terms = _terms(question)
    citations: list[Citation] = []
    seen: set[tuple[str, int, str]] = set()
    for passage in passages:
        quote = _best_quote(passage, terms, quote_chars)
        if quote is None:
            continue
        page, text = quote
        key = (passage.chunk.doc_id, page, text)
        if key in seen:
            continue
        seen.add(key)
        citations.append(
            Citation(
                number=len(citations) + 1,
                doc_id=passage.chunk.doc_id,
                title=passage.chunk.title,
                source=passage.chunk.source,
                page=page,
                quote=text,
            )
        )
        if len(citations) == max_quotes:
            break
    if not citations:
        return Answer(text=NOT_FOUND, citations=[], mode=MODE)
    lines = [NOTICE, ""] + [f"{c.number}. “{c.quote}” [{c.number}]" for c in citations]
    return Answer(text="\n".join(lines), citations=citations, mode=MODE)


def _terms(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.casefold()) if w not in _STOP}


def _stem(word: str) -> str:
    return word[:6]


def _best_quote(passage: Passage, terms: set[str], limit: int) -> tuple[int, str] | None:
    """The page and text of the passage's sentence run that shares most words with the question."""
    best: tuple[float, int, str] | None = None
    for page, sentences in _sentences_by_page(passage):
        for i in range(len(sentences)):
            text = sentences[i]
            if i + 1 < len(sentences) and len(text) + len(sentences[i + 1]) < limit // 2:
                text = f"{text} {sentences[i + 1]}"  # a short sentence reads better with the next
            hits = len(terms & _terms(text))
            if not hits or len(text) > limit:
                continue
            complete = text.endswith((".", "!", "?", '"', "\u201d", ")"))
            score = hits + 0.5 * complete + 0.1 * min(len(text), 200) / 200
            if best is None or score > best[0]:
                best = (score, page, text)
    return (best[1], best[2]) if best else None


def _sentences_by_page(passage: Passage) -> Iterator[tuple[int, list[str]]]:
    """Sentences of a passage grouped by the page they are on; none crosses a page break."""
    chunk = passage.chunk
    bounds = [0, *chunk.page_breaks, len(chunk.text)]
    for offset, (start, end) in enumerate(pairwise(bounds)):
        # A line break before a lower-case word is inside a sentence, not between two.
        text = _SOFT_BREAK.sub(" ", chunk.text[start:end])
        sentences = [" ".join(match.group().split()) for match in _SENTENCE.finditer(text)]
        yield chunk.page_start + offset, [s for s in sentences if len(s) >= 20]
