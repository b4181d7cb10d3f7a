"""Extractive answers: the sentences of the retrieved passages that best answer a question.

Without a language model the answer is quotes: each a whole sentence (or list item) of a
passage, verbatim, with the page it is on. The weights of a sentence's score are tuned
settings (`QuoteWeights`, from `Settings.quote_*`), never defaults here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace

from docchat.answer.amounts import (
    asks_amount,
    cell_match,
    figure_scope,
    holds_amount,
    named_as_asked,
    year_figures,
)
from docchat.answer.choosing import diverse, precedence
from docchat.answer.lists import ANNOUNCES, list_after
from docchat.config import Settings
from docchat.models import Chunk
from docchat.search.concepts import as_asked
from docchat.search.sentences import (
    QUOTE_CHARS,
    Span,
    chunk_sentences,
    quote_text,
    row_cells,
)
from docchat.search.terms import query_terms, term_weights, terms, word_pairs, words, years

# Quotes an extractive answer gives at most.
EXTRACTIVE_QUOTES = 4
# Questions whose answer is a number ("How many nucleotides…?", "What size…?").
_NUMERIC_QUESTION = re.compile(
    r"\b(?:how (?:many|much|long|old|large|big|far|often|high|frequent)|when|what year|"
    r"percentage|proportion|size|length|number|rate|ratio|age|duration|period)\b"
)
_DIGIT = re.compile(r"\d")
# On an amount question, a quote holding an amount comes first when it holds at least this
# share of what the best-matching quote holds of the question's words (`Quote.coverage`).
AMOUNT_COVERAGE = 0.5
# A sentence is quoted with the next when both together are shorter than this.
JOIN_CHARS = QUOTE_CHARS
# A page's or chunk's last line without a full stop is cut short when longer than this (else a
# heading).
CUT_OFF_CHARS = 80
# The best candidates checked for boilerplate (each is a search of the index).
BOILERPLATE_CHECKED = 8
# A sentence sharing this much of its words (Jaccard) with a chosen one is not quoted.
_FINISHED = re.compile(r"[.!?;:][\"'\u201d\u2019)\]]*$")


@dataclass(frozen=True, kw_only=True)
class QuoteWeights:
    """The parts of a sentence's score beside the question's words it holds, as the settings
    have them (`Settings.quote_*`, chosen on the COVID-QA tune half with
    bench/extractive_answers.py; docs/performance.md, "Retrieval quality", reports the test
    half)."""

    # Times the sentence's cosine with the question, when the reranker embedded it.
    quote_similarity_weight: float
    # Credit for the question's words that only the passage's headings and title hold.
    quote_heading_weight: float
    # Credit for the passage's rank among those retrieved.
    quote_rank_weight: float
    # Credit for the question's word pairs in order.
    quote_phrase_weight: float
    # Credit for opening with two of the question's words.
    quote_opening_weight: float
    # Credit for opening the section whose heading the question repeats.
    quote_section_weight: float
    # Credit for holding a digit, when the question asks for a number.
    quote_number_bonus: float
    # Discount per unit of overlap with a quote already chosen.
    quote_diversity: float

    @classmethod
    def of(cls, settings: Settings) -> QuoteWeights:
        """The weights `settings` hold."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})


@dataclass(frozen=True)
class Quote:
    """A sentence chosen to answer a question: `number` is its passage's (1-based)."""

    number: int
    span: Span  # the (first) sentence quoted
    text: str
    score: float
    coverage: float  # weighted share of the question's words in the sentence and its headings
    last: Span  # the last sentence quoted: `span` itself, or the one joined to it
    amount: bool = False  # it holds an amount, and the question asks for one
    leads: bool = False  # quoted before those that do not lead (an amount for the asked terms)
    # It names a year the question asks about (a row: its table's header does), and so comes
    # before those that do not, after those that lead; only on an amount question (elsewhere
    # a sentence naming the year says no more than a better one that does not).
    dated: bool = False
    # On an amount question, a table row whose label holds none but the question's words: how
    # many it holds ("Total revenues": 2 for "What were total revenues in 2019?"; "Total
    # non-U.S. revenues": 0). More leads, after those dated: the row named as asked is the
    # figure asked for, not a total of something else.
    named: int = 0
    # A quoted row's cells in the columns of the asked years, named: ("2019: 280,522",).
    figures: tuple[str, ...] = ()
    # Many documents hold it (a certification, a safe-harbour notice), or it is a form's row of
    # check boxes: quoted after the rest.
    boilerplate: bool = False
    # A table row holding a value the question names in the column it names: "Which sample
    # has an Alpha of 89?" is answered by that row first.
    valued: bool = False
    # On an amount question, a segment's figure: the named segment's (1) before the whole
    # company's (0), before another segment's or one the question names none of (-1).
    scoped: int = 0

    @property
    def chunk(self) -> Chunk:
        return self.span.chunk

    @property
    def page(self) -> int:
        return self.span.page

    @property
    def partial(self) -> bool:
        """Whether `text` is only the head of what it quotes: clipped to QUOTE_CHARS, or cut
        short by a page break or the chunk's end. A table row is quoted whole."""
        if self.span.table_row:
            return False
        if self.last.chunk is not self.span.chunk or self.last.page != self.span.page:
            return cut_off(self.last)  # across a page break (`_goes_on`) or a chunk's end
        whole = quote_text(self.chunk.text, self.span.start, self.last.end, limit=None)
        return self.text != whole or cut_off(self.last)


@dataclass(frozen=True)
class _Question:
    """A question and the candidate sentences of its passages, with what each is scored by."""

    text: str
    passages: Sequence[Chunk]
    wanted: set[str]
    candidates: list[tuple[int, Span]]  # (passage number, sentence), in passage order
    seen: list[set[str]]  # each candidate's terms
    weight: dict[str, float]  # each wanted term's weight: rarer among the candidates, more

    @classmethod
    def of(cls, question: str, passages: Sequence[Chunk]) -> _Question | None:
        """The question's candidates; None when it has no words or the passages no sentences."""
        wanted = query_terms(question)
        candidates = [
            (number, span)
            for number, chunk in enumerate(passages, start=1)
            for span in chunk_sentences(chunk)
        ]
        if not wanted or not candidates:
            return None
        # A sentence holds the question's words also under another name ("Purchases of
        # property, plant and equipment" for "capital expenditure").
        seen = [
            terms(span.with_header) | as_asked(question, span.with_header) for _, span in candidates
        ]
        return cls(question, passages, wanted, candidates, seen, term_weights(wanted, seen))

    def share(self, found: set[str]) -> float:
        """The weighted share of the question's words that `found` holds."""
        return self.weighed(self.wanted & found)

    def weighed(self, asked: set[str]) -> float:
        """The weighted share of the question's words that `asked` (some of them) make."""
        return sum(self.weight[t] for t in asked) / sum(self.weight.values())

    def coverage(self) -> float:
        """The largest share of the question's words one passage holds in its text, headings
        and title."""
        texts = (" ".join([c.title, *c.headings, c.text]) for c in self.passages)
        return max(
            (self.share(terms(text) | as_asked(self.text, text)) for text in texts), default=0.0
        )


def answer_quotes(
    question: str,
    passages: Sequence[Chunk],
    *,
    threshold: float,
    weights: QuoteWeights,
    limit: int = EXTRACTIVE_QUOTES,
    similarity: Mapping[tuple[str, int], float] | None = None,
    boilerplate: Callable[[Sequence[str]], set[str]] | None = None,
) -> list[Quote]:
    """The sentences of `passages` (best first, as retrieved) that best answer `question`;
    none when no passage holds `threshold` of the question's (weighted) words in its text,
    headings and title (`Settings.answer_threshold`).

    A sentence scores by the share of the question's words it holds, each weighted by how rare
    it is among the candidate sentences, with some credit for words only in its headings, for
    the question's word pairs in order, for opening with the question's words, and for its
    passage's rank, plus `quote_similarity_weight` times its cosine with the question where
    `similarity` has it (by chunk id and `Span.start`; a sentence quoted with the next takes the
    better of the two: `SentenceReranker.similarities`). A sentence ending in a colon is not
    quoted: "It is subject to the following conditions:" says nothing without what follows.
    Near duplicates are dropped and each pick is discounted by its overlap with those already
    chosen. Of the best BOILERPLATE_CHECKED candidates, those `boilerplate` names (text that
    many documents hold, a form's check boxes: `Library.boilerplate`) come after all others.
    """
    asked = _Question.of(question, passages)
    if asked is None or asked.coverage() < threshold:
        return []
    score = _Scorer(asked, weights, similarity or {})
    scored: list[Quote] = []
    lists: dict[tuple[str, int], list[tuple[int, Span]]] = {}
    for k, (_, span) in enumerate(asked.candidates):
        items = list_after(asked.candidates, k) if ANNOUNCES.search(span.text) else []
        if _lead_in(span) and not items:
            continue
        if items:
            lists[span.chunk.chunk_id, span.start] = items
        quote = score(k)
        if quote is not None:
            scored.append(quote)
    scored = _amounts_first(scored)
    if boilerplate is not None:
        scored = _boilerplate_last(scored, boilerplate)
    chosen = diverse(scored, limit=limit, diversity=weights.quote_diversity, alone=score.alone)
    return _with_lists(chosen, lists, limit=limit)


class _Scorer:
    """Scores the candidate sentences of one question (see `answer_quotes`)."""

    def __init__(
        self,
        asked: _Question,
        weights: QuoteWeights,
        similarity: Mapping[tuple[str, int], float],
    ) -> None:
        self.asked = asked
        self.weights = weights
        self.similarity = similarity
        self.headings = [terms(" ".join([c.title, *c.headings])) for c in asked.passages]
        self.pairs = word_pairs(words(asked.text))
        question = asked.text.casefold()
        self.numeric = _NUMERIC_QUESTION.search(question) is not None
        self.amounts = asks_amount(asked.text)
        self.openers = _section_openers(asked.wanted, asked.passages)
        self.years = years(asked.text)

    def __call__(self, k: int, *, alone: bool = False) -> Quote | None:
        """Candidate `k` as a quote (joined with the next sentence when both are short, unless
        `alone`), or None when neither it nor its headings hold a word of the question."""
        asked, w = self.asked, self.weights
        number, span = asked.candidates[k]
        if span.table_row and _caption_row(span.text):
            return None
        text, last, found = span.text, span, asked.seen[k]
        cosines = [self.similarity.get((span.chunk.chunk_id, span.start), 0.0)]
        after = asked.candidates[k + 1][1] if k + 1 < len(asked.candidates) else None
        j = k
        if after is not None and not alone and _joins(span, after):
            text = quote_text(span.chunk.text, span.start, after.end)
            last, j = after, k + 1
            found = found | asked.seen[j]
            cosines.append(self.similarity.get((after.chunk.chunk_id, after.start), 0.0))
        going_on = asked.candidates[j + 1][1] if j + 1 < len(asked.candidates) else None
        if going_on is not None and not alone and _goes_on(last, going_on):
            # A sentence a page break cuts goes on with the next page's first: quoted whole,
            # each page's part as that page has it.
            text = f"{text} {going_on.text}"
            last = going_on
            found = found | asked.seen[j + 1]
            cosines.append(self.similarity.get((going_on.chunk.chunk_id, going_on.start), 0.0))
        around = (asked.wanted & self.headings[number - 1]) - found
        coverage = asked.share(found) + w.quote_heading_weight * asked.weighed(around)
        if coverage <= 0:
            return None
        sentence = words(text)
        phrase = len(self.pairs & word_pairs(sentence)) / len(self.pairs) if self.pairs else 0.0
        opening = _opening_words(sentence, asked.wanted, list_item=span.list_item)
        short = len(span.text) < 40 and not (span.list_item or span.table_row)
        score = (
            coverage
            + w.quote_phrase_weight * phrase
            + w.quote_opening_weight * opening
            + w.quote_rank_weight * (1 - (number - 1) / len(asked.passages))
            + (w.quote_section_weight if k in self.openers else 0.0)
            + (w.quote_number_bonus if self.numeric and _DIGIT.search(text) else 0.0)
            - (0.2 if short else 0.0)
            + w.quote_similarity_weight * max(cosines)
        )
        amount = self.amounts and holds_amount(text, table_row=span.table_row)
        named = years("\n".join([*span.table_header, text]))
        figures = year_figures(span, self.years) if span.table_row else ()
        return Quote(
            number,
            span,
            text,
            score,
            coverage,
            last,
            amount=amount,
            # Only where the year picks the figure asked for: on an amount question.
            dated=self.amounts and bool(self.years & named),
            named=named_as_asked(span, asked.text, asked.wanted) if self.amounts else 0,
            figures=figures,
            valued=span.table_row and cell_match(span, asked.text, asked.wanted),
            scoped=figure_scope(span, text, question=asked.text, wanted=asked.wanted)
            if self.amounts
            else 0,
        )

    def alone(self, span: Span) -> Quote | None:
        """The sentence `span` quoted by itself, scored as such."""
        for k, (_, candidate) in enumerate(self.asked.candidates):
            if candidate is span:
                return self(k, alone=True)
        return None


def _caption_row(line: str) -> bool:
    """A row of a table of several columns with its label alone ("| Revenues |  |  |"): it
    heads the rows under it and says nothing by itself."""
    cells = row_cells(line)
    return len(cells) >= 2 and bool(cells[0]) and not any(cells[1:])


def _goes_on(span: Span, after: Span) -> bool:
    """Whether `after` finishes `span`: `span` is cut short by a page break (`cut_off`) and
    `after` opens the next page of the same passage going on with it, in lower case, as prose
    (a running head, a footnote or a heading there is not the rest of the sentence)."""
    return (
        after.chunk is span.chunk
        and after.page == span.page + 1
        and cut_off(span)
        and after.text[:1].islower()
        and not (after.list_item or after.table_row or span.table_row)
    )


def _joins(span: Span, after: Span) -> bool:
    """Whether `after` is quoted with `span`: the next sentence on the same page of the same
    passage, neither a list item nor a table row (each quoted alone) nor a lead-in, both short
    together."""
    return (
        after.chunk is span.chunk
        and after.page == span.page
        and not (span.list_item or after.list_item)
        and not (span.table_row or after.table_row)  # a row is quoted alone
        and not _lead_in(after)
        and len(span.text) + len(after.text) < JOIN_CHARS
    )


def _amounts_first(scored: list[Quote]) -> list[Quote]:
    """`scored`, those that hold an amount for the asked terms marked to lead: on an amount
    question, a quote holding an amount and AMOUNT_COVERAGE of the best quote's coverage."""
    best = max((q.coverage for q in scored), default=0.0)
    return [
        replace(q, leads=True) if q.amount and q.coverage >= AMOUNT_COVERAGE * best else q
        for q in scored
    ]


def question_coverage(question: str, passages: Sequence[Chunk]) -> float:
    """The largest (weighted) share of the question's words that one passage holds in its
    text, headings and title: what `answer_quotes` compares with its threshold."""
    asked = _Question.of(question, passages)
    return 0.0 if asked is None else asked.coverage()


def _with_lists(
    chosen: list[Quote], lists: Mapping[tuple[str, int], list[tuple[int, Span]]], *, limit: int
) -> list[Quote]:
    """`chosen`, with the items of a list that a quote announces ("… the following four
    conditions applies to you.", "It is subject to the following conditions:") right after it,
    as quotes of their own; they count towards `limit`, but a list started is quoted whole."""
    out: list[Quote] = []
    for quote in chosen:
        if len(out) >= limit:
            break
        if any(q.span is quote.span for q in out):
            continue  # quoted already, as an item of a list
        out.append(quote)
        for number, item in lists.get((quote.chunk.chunk_id, quote.span.start), []):
            out = [q for q in out if q.span is not item]
            out.append(Quote(number, item, item.text, quote.score, quote.coverage, item))
    return out


def _lead_in(span: Span) -> bool:
    """A sentence ending in a colon: it says nothing without what follows."""
    return span.text.endswith(":")


def cut_off(span: Span) -> bool:
    """A sentence that a page break or the chunk's end cuts short ("… measures that prevent";
    the next page or chunk goes on with it). A short line without a full stop there is a
    heading or a list item."""
    text = span.chunk.text
    bound = next((b for b in span.chunk.page_breaks if b >= span.end), len(text))
    last = not text[span.end : bound].strip()
    finished = _FINISHED.search(text[span.start : span.end])
    return last and len(span.text) > CUT_OFF_CHARS and not finished


def _section_openers(wanted: set[str], passages: Sequence[Chunk]) -> set[int]:
    """Candidate indexes of the first sentence of the earliest passage of each section whose
    heading the question repeats: under "Who Must File", the first sentence answers "Who must
    file Form 1040-NR?"."""
    first: dict[tuple[str, tuple[str, ...]], Chunk] = {}
    for chunk in passages:
        heading = terms(chunk.headings[-1]) if chunk.headings else set()
        if len(heading) < 2 or not heading <= wanted:
            continue
        key = (chunk.doc_id, tuple(chunk.headings))
        if key not in first or chunk.chunk_id < first[key].chunk_id:
            first[key] = chunk
    openers: set[int] = set()
    k = 0
    for chunk in passages:
        count = len(chunk_sentences(chunk))
        if count and any(chunk is c for c in first.values()):
            openers.add(k)
        k += count
    return openers


def _opening_words(sentence: list[str], wanted: set[str], *, list_item: bool) -> float:
    """1 when the sentence opens with two of the question's words ("File Form 1040NR if")."""
    head = sentence[1:4] if list_item else sentence[:3]
    return 1.0 if len(wanted.intersection(head)) >= 2 else 0.0


def _boilerplate_last(
    scored: list[Quote], boilerplate: Callable[[Sequence[str]], set[str]]
) -> list[Quote]:
    """`scored`, those of the best BOILERPLATE_CHECKED that `boilerplate` names marked so."""
    best = sorted(scored, key=lambda q: (*precedence(q), q.score), reverse=True)
    found = boilerplate([q.text for q in best[:BOILERPLATE_CHECKED]])
    return [replace(q, boilerplate=True) if q.text in found else q for q in scored]
