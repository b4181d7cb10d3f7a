"""Which of a question's scored quotes are read, in which order (docchat.answer.extractive):
what puts a quote first, and what a reader would read twice (a near duplicate, a quote inside
another, a sentence another quote holds).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from docchat.search.sentences import Span, quote_text, sentences
from docchat.search.terms import terms

if TYPE_CHECKING:
    from docchat.answer.extractive import Quote

#: Quotes sharing this share of their words say the same.
NEAR_DUPLICATE = 0.8


def precedence(quote: Quote) -> tuple[bool, bool, int, bool, int]:
    """What puts a quote before a better-scored one (`diverse`), most telling first."""
    return (quote.valued, quote.leads, quote.scoped, quote.dated, quote.named)


def diverse(
    scored: list[Quote],
    *,
    limit: int,
    diversity: float,
    alone: Callable[[Span], Quote | None] = lambda _: None,
) -> list[Quote]:
    """Up to `limit` quotes, greedily: boilerplate last; first rows holding a value the
    question names in the column it names (`cell_match`), then those that lead, and of them the
    asked segment's figures and those not of another segment first (`figure_scope`: a
    segment's amount still comes before a sentence holding none), then those naming an asked
    year, then rows named as asked (more of the question's words first), then
    the best score less `diversity` times the overlap with those already chosen."""
    chosen: list[Quote] = []
    chosen_terms: list[set[str]] = []
    said: set[str] = set()  # the sentences of the chosen quotes (`_sentences_of`)
    pool = sorted(scored, key=lambda q: -q.score)
    while pool and len(chosen) < limit:
        best_i, best_value = -1, (False, False, False, -1, False, 0, -math.inf)
        for i, quote in enumerate(pool):
            if _repeats(quote, chosen, said):
                unsaid = _unsaid(quote, chosen, said, alone)
                if unsaid is None:
                    continue
                pool[i] = quote = unsaid
            found = terms(quote.text)
            overlap = max((_jaccard(found, other) for other in chosen_terms), default=0.0)
            if overlap >= NEAR_DUPLICATE:
                continue
            value = (not quote.boilerplate, *precedence(quote), quote.score - diversity * overlap)
            if value > best_value:
                best_i, best_value = i, value
        if best_i < 0:
            break
        quote = pool.pop(best_i)
        chosen.append(quote)
        chosen_terms.append(terms(quote.text))
        said |= _sentences_of(quote.text)
    return chosen


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _repeats(quote: Quote, chosen: Sequence[Quote], said: set[str]) -> bool:
    """Whether `quote` says what a chosen one says: the same text, inside it, or a sentence of
    it, one of those `said` (two quotes of two sentences each from overlapping chunks share
    one, and the reader would read it twice)."""
    mine = quote.text.casefold()
    if any(mine in other.text.casefold() or other.text.casefold() in mine for other in chosen):
        return True
    return not said.isdisjoint(_sentences_of(quote.text))


def _unsaid(
    quote: Quote,
    chosen: Sequence[Quote],
    said: set[str],
    alone: Callable[[Span], Quote | None],
) -> Quote | None:
    """A quote of two sentences joined (`_joins`) of which a chosen quote holds one, as the
    other alone, scored anew (`alone`): "The dividend was $0.55 ... ." after a quote of the
    sentence that followed it; None for any other quote that repeats a chosen one."""
    first, last = quote.span, quote.last
    if last is first or last.chunk is not first.chunk:
        return None
    if quote.text != quote_text(first.chunk.text, first.start, last.end):
        return None  # clipped, or going on past a page break: not two sentences to part
    keep = [span for span in (first, last) if said.isdisjoint(_sentences_of(span.text))]
    if len(keep) != 1 or not _sentences_of(keep[0].text):
        return None
    found = alone(keep[0])
    return None if found is None or _repeats(found, chosen, said) else found


def _sentences_of(text: str) -> set[str]:
    """The sentences of a quote, compared as words (case and spacing aside)."""
    return {" ".join(s.casefold().split()) for s in sentences(text) if len(s.split()) > 3}
