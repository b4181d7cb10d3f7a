"""Terms: the words of a text as search and quoting compare them, crudely stemmed.

The BM25 side of the index tokenizes on its own (FTS5 or OpenSearch); these terms weigh a
question's words in the sentences the reranker and the extractive answer score.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from itertools import pairwise

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
        # What is left of "3M's" and "don't" once apostrophes split words.
        "s",
        "t",
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
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "s", "e", "ly")
_JOINED = re.compile(r"(?<=[a-z0-9])[-\u2010\u2011](?=[a-z0-9])")


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A crude stem: cache, cached and caching are one term. Remembered: a question's
    candidate sentences stem thousands of words, most of them seen before (the call holds
    the GIL, so concurrent questions waited on it)."""
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
    return set(_terms(text))


@functools.lru_cache(maxsize=1 << 14)
def _terms(text: str) -> frozenset[str]:
    # Remembered: a question's reranker and extractive answer take the terms of the same
    # sentences again (and so does the next question), with the GIL held.
    return frozenset(
        stem(w) for w in _WORD.findall(_JOINED.sub("", text.casefold())) if w not in _STOP
    )


def query_terms(question: str) -> set[str]:
    """The words a sentence should hold to answer `question`: its content words, or all its
    words when it has only stop words ("Who are you?")."""
    return terms(question) or set(words(question))


def term_weights(wanted: set[str], seen: Sequence[set[str]]) -> dict[str, float]:
    """Each wanted word's weight: rarer among the candidate sentences (`seen`, each a set of
    terms) weighs more."""
    n = len(seen)
    return {
        t: math.log((n + 1) / (0.5 + sum(1 for found in seen if t in found))) + 1.0 for t in wanted
    }


def word_pairs(sequence: Sequence[str]) -> set[tuple[str, str]]:
    """The pairs of consecutive content words of `sequence` (stemmed words, as `words` gives)."""
    content = [w for w in sequence if w not in _STOP]
    return set(pairwise(content))


# A year as a word ("in 2019", "fiscal 2019", "December 31, 2019"), not inside a name or a
# number ("2019-nCoV", "$2019", "2,019"); and a span of years ("2003-2007").
_YEAR = re.compile(r"(?<![\w$,.-])((?:19|20)\d\d)(?![\w-]|[.,]\d)")
_YEARS = re.compile(r"(?<![\w$,.-])((?:19|20)\d\d)\s*[-\u2013]\s*((?:19|20)\d\d)(?![\w-]|[.,]\d)")


# A fiscal year or a quarter or half of one, as filings and analysts write them: "FY2022",
# "FY 2023", "FY23", "Q2 2023", "Q2'2023", "Q22023", "FY2023Q1", "2Q23", "H1 FY2023".
_FISCAL = re.compile(
    r"(?<![A-Za-z0-9])(?:FY|[QH][1-4]|[1-4]Q)\s?'?((?:19|20)?\d\d)(?!\d|,\d)", re.IGNORECASE
)


def years(text: str) -> set[str]:
    """The years `text` names, each year of a span ("2003-2007") among them, and those of
    fiscal years and quarters ("FY2022", "Q2'23")."""
    found = set(_YEAR.findall(text))
    found.update(y if len(y) == 4 else f"20{y}" for y in _FISCAL.findall(text))
    for first, last in _YEARS.findall(text):
        if first < last:
            found.update(str(y) for y in range(int(first), int(last) + 1))
    return found


# A sentence that tells the answerer what to write when the question does not apply ("If gross
# margin is not a useful metric for a company like this, then state that and explain why."):
# "if", no question mark, and a verb of saying as its main clause's first word. It names no
# fact to find, and its words ("useful", "company", "explain") match any page.
_SENTENCE = re.compile(r"(?<=[.?!])\s+")
_INSTRUCTION = re.compile(
    r"if\b[^?]*?[,;]?\s(?:then\s+)?(?:please\s+)?"
    r"(?:state|explain|say|answer|indicate|mention|note|write|return|reply|respond)\b[^?]*",
    re.IGNORECASE,
)


def asked(question: str) -> str:
    """`question` without the sentences that only tell the answerer what to write when it does
    not apply; all of it when nothing else is left."""
    kept = [s for s in _SENTENCE.split(question.strip()) if not _INSTRUCTION.fullmatch(s)]
    return " ".join(kept) if kept else question
