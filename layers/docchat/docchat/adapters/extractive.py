"""The offline answerer: no language model, so the answer quotes the best-matching passages."""

from __future__ import annotations

from collections.abc import Sequence

from docchat.citations import QUOTE_CHARS, best_quote, terms
from docchat.models import Answer, Citation, Passage

MODE = "extractive"
NOTICE = (
    "No language model is configured, so this answer is extractive: "
    "the passages below are quoted from your documents as the best matches for the question."
)
NOT_FOUND = "The indexed documents do not contain a passage that matches the question."


def extractive_answer(
    question: str,
    passages: Sequence[Passage],
    *,
    max_quotes: int = 4,
    quote_chars: int = QUOTE_CHARS,
) -> Answer:
    """Quote the best sentence run of each top passage, each cited with its exact page."""
    wanted = terms(question)
    citations: list[Citation] = []
    seen: set[tuple[str, int, str]] = set()
    for passage in passages:
        quote = best_quote(passage.chunk, wanted, limit=quote_chars)
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
