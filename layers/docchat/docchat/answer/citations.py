"""Quotes and citations: which sentence of a retrieved chunk backs a claim, and on which page."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from docchat.models import Chunk, Citation, source_name
from docchat.search.sentences import is_list_item, sentence_spans

_LETTER = re.compile(r"[^\W\d_]")
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
# Quotes an extractive answer gives at most.
EXTRACTIVE_QUOTES = 4
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "s", "e", "ly")
_JOINED = re.compile(r"(?<=[a-z0-9])[-\u2010\u2011](?=[a-z0-9])")
# A backslash that ingest/convert.py put before a line's "#", "```", "~~~" or ">" (markdown escape).
_ESCAPE = re.compile(r"\\(?=#|```|~~~|>)")
_ESCAPE_LINE = re.compile(r"(?m)^\\(?=#|```|~~~|>)")
# Questions whose answer is a number ("How many nucleotides…?", "What size…?").
_NUMERIC_QUESTION = re.compile(
    r"\b(?:how (?:many|much|long|old|large|big|far|often|high|frequent)|when|what year|"
    r"percentage|proportion|size|length|number|rate|ratio|age|duration|period)\b"
)
_DIGIT = re.compile(r"\d")
# A sentence is quoted with the next when both together are shorter than this.
JOIN_CHARS = QUOTE_CHARS
# A sentence that announces a list ("the following four conditions"); its items, at most
# LIST_ITEMS, are quoted after it.
_ANNOUNCES = re.compile(r"(?i)\bfollowing\b|:$")
LIST_ITEMS = 8
_COUNTS = ("one", "two", "three", "four", "five", "six", "seven", "eight")
_COUNT = re.compile(rf"(?i)\bfollowing ({'|'.join(_COUNTS)})\b")
# A page's or chunk's last line without a full stop is cut short when longer than this (else a
# heading).
CUT_OFF_CHARS = 80
# Parts of a sentence's score in `answer_quotes`, chosen on the questions of the COVID-QA tune
# half (bench/extractive_answers.py; the README reports the test half).
NUMBER_BONUS = 0.15
HEADING_WEIGHT = 0.6
RANK_WEIGHT = 0.3
DIVERSITY = 0.6
PHRASE_WEIGHT = 0.2
OPENING_WEIGHT = 0.15
SECTION_WEIGHT = 0.3
# Times the sentence's cosine with the question, when the reranker embedded it (`similarity`):
# chosen on COVID-QA tune with bench/extractive_answers.py similarity (README).
SIMILARITY_WEIGHT = 2.0


def stem(word: str) -> str:
    """A crude stem: cache, cached and caching are one term."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:6]


def words(text: str) -> list[str]:
    """Stemmed words of `text` in order; "1040-NR" and "1040NR" are one word."""
    return [stem(w) for w in _WORD.findall(_JOINED.sub("", text.casefold()))]


def terms(text: str) -> set[str]:
    """Content words of `text`, crudely stemmed, for overlap scoring."""
    return {stem(w) for w in _WORD.findall(_JOINED.sub("", text.casefold())) if w not in _STOP}


def query_terms(question: str) -> set[str]:
    """The words a sentence should hold to answer `question`: its content words, or all its
    words when it has only stop words ("Who are you?")."""
    return terms(question) or set(words(question))


@dataclass(frozen=True)
class Span:
    """A sentence (or sentence run) of a chunk: `text` is chunk.text[start:end], whitespace
    runs made single spaces, on `page`."""

    chunk: Chunk
    page: int
    start: int
    end: int
    text: str
    list_item: bool


def chunk_sentences(chunk: Chunk) -> list[Span]:
    """The sentences of a chunk, in order; none crosses a page break."""
    spans: list[Span] = []
    bounds = [0, *chunk.page_breaks, len(chunk.text)]
    for offset, (low, high) in enumerate(pairwise(bounds)):
        page_text = chunk.text[low:high]
        for start, end in sentence_spans(page_text):
            start += 1 if _ESCAPE.match(page_text, start) else 0
            text = _quote_text(page_text, start, end)
            if not _LETTER.search(text):
                continue
            spans.append(
                Span(
                    chunk=chunk,
                    page=chunk.page_start + offset,
                    start=low + start,
                    end=low + end,
                    text=text,
                    list_item=is_list_item(text),
                )
            )
    return spans


def _quote_text(text: str, start: int, end: int, *, limit: int | None = QUOTE_CHARS) -> str:
    """text[start:end] as a quote: markdown escapes at line starts dropped, whitespace runs
    made single spaces, clipped to `limit`."""
    quote = " ".join(_ESCAPE_LINE.sub("", text[start:end]).split())
    return quote if limit is None else _clip(quote, limit)


def _clip(text: str, limit: int = QUOTE_CHARS) -> str:
    """`text`, or its head up to a word end when longer than `limit` (still verbatim)."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit]


def best_quote(
    chunk: Chunk, wanted: set[str], *, limit: int = QUOTE_CHARS
) -> tuple[int, str] | None:
    """The page and text of the chunk's sentence sharing most words with `wanted`."""
    best: tuple[float, int, str] | None = None
    for span in chunk_sentences(chunk):
        hits = len(wanted & terms(span.text))
        if not hits or len(span.text) > limit:
            continue
        score = hits + 0.1 * min(len(span.text), 200) / 200
        if best is None or score > best[0]:
            best = (score, span.page, span.text)
    return (best[1], best[2]) if best else None


@dataclass(frozen=True)
class Quote:
    """A sentence chosen to answer a question: `number` is its passage's (1-based)."""

    number: int
    span: Span  # the (first) sentence quoted
    text: str
    score: float
    coverage: float  # weighted share of the question's words in the sentence and its headings
    last: Span  # the last sentence quoted: `span` itself, or the one joined to it

    @property
    def chunk(self) -> Chunk:
        return self.span.chunk

    @property
    def page(self) -> int:
        return self.span.page

    @property
    def partial(self) -> bool:
        """Whether `text` is only the head of what it quotes: clipped to QUOTE_CHARS, or cut
        short by a page break or the chunk's end."""
        whole = _quote_text(self.chunk.text, self.span.start, self.last.end, limit=None)
        return self.text != whole or _cut_off(self.last)


def answer_quotes(
    question: str,
    passages: Sequence[Chunk],
    *,
    threshold: float,
    limit: int = EXTRACTIVE_QUOTES,
    similarity: Mapping[tuple[str, int], float] | None = None,
) -> list[Quote]:
    """The sentences of `passages` (best first, as retrieved) that best answer `question`;
    none when no passage holds `threshold` of the question's (weighted) words in its text,
    headings and title (`Settings.answer_threshold`).

    A sentence scores by the share of the question's words it holds, each weighted by how rare
    it is among the candidate sentences, with some credit for words only in its headings, for
    the question's word pairs in order, for opening with the question's words, and for its
    passage's rank, plus `SIMILARITY_WEIGHT` times its cosine with the question where
    `similarity` has it (by chunk id and `Span.start`; a sentence quoted with the next takes the
    better of the two: `SentenceReranker.similarities`). A sentence ending in a colon is not
    quoted: "It is subject to the following conditions:" says nothing without what follows.
    Near duplicates are dropped and each pick is discounted by its overlap with those already
    chosen.
    """
    similarity = similarity or {}
    wanted = query_terms(question)
    candidates = [
        (number, span)
        for number, chunk in enumerate(passages, start=1)
        for span in chunk_sentences(chunk)
    ]
    if not wanted or not candidates:
        return []
    seen = [terms(span.text) for _, span in candidates]
    weight = term_weights(wanted, seen)
    total = sum(weight.values())
    if _coverage(wanted, weight, passages) < threshold:
        return []
    headings = [terms(" ".join([c.title, *c.headings])) for c in passages]
    pairs = _pairs(words(question))
    scored: list[Quote] = []
    numeric = _NUMERIC_QUESTION.search(question.casefold()) is not None
    openers = _section_openers(wanted, passages)
    lists: dict[tuple[str, int], list[tuple[int, Span]]] = {}
    for k, ((number, span), found) in enumerate(zip(candidates, seen, strict=True)):
        items = _list_after(candidates, k) if _ANNOUNCES.search(span.text) else []
        if _lead_in(span) and not items:
            continue
        if items:
            lists[span.chunk.chunk_id, span.start] = items
        text = span.text
        last = span
        cosines = [similarity.get((span.chunk.chunk_id, span.start), 0.0)]
        after = candidates[k + 1][1] if k + 1 < len(candidates) else None
        if (
            after is not None
            and after.chunk is span.chunk
            and after.page == span.page
            and not (span.list_item or after.list_item)  # a list item is quoted alone
            and not _lead_in(after)
            and len(span.text) + len(after.text) < JOIN_CHARS
        ):
            text = _quote_text(span.chunk.text, span.start, after.end)
            last = after
            found = found | seen[k + 1]
            cosines.append(similarity.get((after.chunk.chunk_id, after.start), 0.0))
        inside = sum(weight[t] for t in wanted & found) / total
        around = sum(weight[t] for t in (wanted & headings[number - 1]) - found) / total
        coverage = inside + HEADING_WEIGHT * around
        if coverage <= 0:
            continue
        sentence = words(text)
        phrase = len(pairs & _pairs(sentence)) / len(pairs) if pairs else 0.0
        opening = _opening_words(sentence, wanted, list_item=span.list_item)
        short = len(span.text) < 40 and not span.list_item
        score = (
            coverage
            + PHRASE_WEIGHT * phrase
            + OPENING_WEIGHT * opening
            + RANK_WEIGHT * (1 - (number - 1) / len(passages))
            + (SECTION_WEIGHT if k in openers else 0.0)
            + (NUMBER_BONUS if numeric and _DIGIT.search(text) else 0.0)
            - (0.2 if short else 0.0)
            + SIMILARITY_WEIGHT * max(cosines)
        )
        scored.append(Quote(number, span, text, score, coverage, last))
    return _with_lists(_diverse(scored, limit=limit), lists, limit=limit)


def _list_after(candidates: Sequence[tuple[int, Span]], k: int) -> list[tuple[int, Span]]:
    """The list items that follow candidate `k` in its chunk ("1. …", "2. …", or "• …"), of
    the kind of the first, as many as the lead-in counts ("the following four conditions");
    sentences between items (an item's own sub-items and notes) are passed over, and the list
    ends where prose goes on for more than three sentences."""
    _, lead = candidates[k]
    counted = _COUNT.search(lead.text)
    wanted = _COUNTS.index(counted.group(1).casefold()) + 1 if counted else LIST_ITEMS
    items: list[tuple[int, Span]] = []
    kind = ""
    between = 0
    for number, span in candidates[k + 1 :]:
        if span.chunk is not lead.chunk:
            break
        if not span.list_item:
            between += 1
            if not items or between > 3:
                break
            continue
        mark = _item_kind(span.text)
        kind = kind or mark
        if mark == kind:
            items.append((number, span))
            between = 0
            if len(items) == wanted:
                break
    return items


def _item_kind(text: str) -> str:
    head = text.split(maxsplit=1)[0]
    return "number" if head[:1].isdigit() else "letter" if head[:1].isalpha() else "bullet"


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


_FINISHED = re.compile(r"[.!?;:][\"'\u201d\u2019)\]]*$")


def _cut_off(span: Span) -> bool:
    """A sentence that a page break or the chunk's end cuts short ("… measures that prevent";
    the next page or chunk goes on with it). A short line without a full stop there is a
    heading or a list item."""
    text = span.chunk.text
    bound = next((b for b in span.chunk.page_breaks if b >= span.end), len(text))
    last = not text[span.end : bound].strip()
    finished = _FINISHED.search(text[span.start : span.end])
    return last and len(span.text) > CUT_OFF_CHARS and not finished


def question_coverage(question: str, passages: Sequence[Chunk]) -> float:
    """The largest (weighted) share of the question's words that one passage holds in its
    text, headings and title: what `answer_quotes` compares with its threshold."""
    wanted = query_terms(question)
    seen = [terms(span.text) for chunk in passages for span in chunk_sentences(chunk)]
    if not wanted or not seen:
        return 0.0
    return _coverage(wanted, term_weights(wanted, seen), passages)


def _coverage(wanted: set[str], weight: dict[str, float], passages: Sequence[Chunk]) -> float:
    total = sum(weight.values())
    context = [terms(" ".join([c.title, *c.headings, c.text])) for c in passages]
    return max((sum(weight[t] for t in wanted & found) / total for found in context), default=0.0)


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


def term_weights(wanted: set[str], seen: Sequence[set[str]]) -> dict[str, float]:
    """Each wanted word's weight: rarer among the candidate sentences (`seen`, each a set of
    terms) weighs more."""
    n = len(seen)
    return {
        t: math.log((n + 1) / (0.5 + sum(1 for found in seen if t in found))) + 1.0 for t in wanted
    }


def _pairs(sequence: Sequence[str]) -> set[tuple[str, str]]:
    content = [w for w in sequence if w not in _STOP]
    return set(pairwise(content))


def _diverse(scored: list[Quote], *, limit: int) -> list[Quote]:
    """Up to `limit` quotes, greedily: best score less overlap with those already chosen."""
    chosen: list[Quote] = []
    chosen_terms: list[set[str]] = []
    pool = sorted(scored, key=lambda q: -q.score)
    while pool and len(chosen) < limit:
        best_i, best_value = -1, -math.inf
        for i, quote in enumerate(pool):
            found = terms(quote.text)
            overlap = max((_jaccard(found, other) for other in chosen_terms), default=0.0)
            if overlap >= NEAR_DUPLICATE or _repeats(quote, chosen):
                continue
            value = quote.score - DIVERSITY * overlap
            if value > best_value:
                best_i, best_value = i, value
        if best_i < 0:
            break
        quote = pool.pop(best_i)
        chosen.append(quote)
        chosen_terms.append(terms(quote.text))
    return chosen


NEAR_DUPLICATE = 0.8


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _repeats(quote: Quote, chosen: Sequence[Quote]) -> bool:
    """Whether `quote` says what a chosen one says (the same text, or inside it)."""
    mine = quote.text.casefold()
    return any(mine in other.text.casefold() or other.text.casefold() in mine for other in chosen)


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
    spans = chunk_sentences(chunk)
    return (spans[0].page, spans[0].text) if spans else None
