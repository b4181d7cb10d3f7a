"""Boilerplate: text that recurs nearly verbatim across many documents (an officer's
certification, a safe-harbour notice, a legend), measured in the index rather than by word
lists, so that the extractive answer quotes evidence before it."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from docchat.ports import ChunkStore

# Text is boilerplate when this many documents or more hold nearly verbatim (an officer's
# certification, a safe-harbour notice, a legend): found by searching the index for the
# sentence, among this many best keyword hits, for sentences of at least BOILERPLATE_WORDS runs
# of SHINGLE words (16 words or more; a shorter one says too little to be told apart).
BOILERPLATE_DOCUMENTS = 3
BOILERPLATE_PROBE = 12
BOILERPLATE_WORDS = 12
BOILERPLATE_SHARE = 0.8
SHINGLE = 5
_NOT_WORD = re.compile(r"[\W_]+")


def recurring(index: ChunkStore, versions: Mapping[str, str], sentences: Sequence[str]) -> set[str]:
    """Those of `sentences` that are boilerplate among the documents of `versions` (doc_id ->
    version): held nearly verbatim (BOILERPLATE_SHARE of its runs of SHINGLE words, case and
    punctuation aside; an officer's name differs from one certification to the next) by
    BOILERPLATE_DOCUMENTS documents or more. A keyword search for each sentence, then a look
    at the documents its best hits are in."""
    found: set[str] = set()
    if len(versions) < BOILERPLATE_DOCUMENTS:
        return found
    for sentence in dict.fromkeys(sentences):
        wanted = _shingles(sentence)
        if len(wanted) < BOILERPLATE_WORDS:
            continue
        hits = index.keyword_search(sentence, k=BOILERPLATE_PROBE, versions=versions)
        chunks = index.chunks([chunk_id for chunk_id, _ in hits])
        holding = {
            c.doc_id
            for c in chunks.values()
            if versions.get(c.doc_id) == c.version
            and len(wanted & _shingles(c.text)) >= BOILERPLATE_SHARE * len(wanted)
        }
        if len(holding) >= BOILERPLATE_DOCUMENTS:
            found.add(sentence)
    return found


def _shingles(text: str) -> set[tuple[str, ...]]:
    """The runs of SHINGLE consecutive words of `text`, folded."""
    words = _NOT_WORD.sub(" ", text.casefold()).split()
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}
