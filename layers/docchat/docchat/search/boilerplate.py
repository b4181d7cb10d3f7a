"""Boilerplate: text that recurs nearly verbatim across many documents (an officer's
certification, a safe-harbour notice, a legend), measured in the index rather than by word
lists, and a form's row of check boxes (a filing cover's "Large accelerated filer ☒
Accelerated filer ☐ …", which every filing carries in a layout of its own), so that the
extractive answer quotes evidence before it, and a search lists the passages that are mostly
boilerplate after the others (`evidence_first`): the model reading a search's result, as the
extractive answer, reads the evidence first."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from docchat.models import Passage
from docchat.ports import ChunkStore
from docchat.search.sentences import chunk_sentences

# Text is boilerplate when this many documents or more hold nearly verbatim (an officer's
# certification, a safe-harbour notice, a legend): found by searching the index for the
# sentence, among this many best keyword hits, for sentences of at least BOILERPLATE_WORDS runs
# of SHINGLE words (16 words or more; a shorter one says too little to be told apart).
BOILERPLATE_DOCUMENTS = 3
BOILERPLATE_PROBE = 12
BOILERPLATE_WORDS = 12
BOILERPLATE_SHARE = 0.8
SHINGLE = 5
# A form's check box, as filings print them: the box characters (☐ ☑ ☒ □ ⌧), and the letters a
# symbol font's boxes are often extracted as (þ, ý, ¨) standing alone. A sentence with two or
# more is a form's row; so is one with one of them and a lone "x" or "o" (Amazon's "Large
# accelerated filer x … Non-accelerated filer ¨", Coca-Cola's "ý … o"), letters that alone
# are no box ("2 x 3"). A symbol font's glyphs in Unicode's private use area are no sign: the
# codes Wingdings 2 draws boxes with (U+F04F to U+F054, U+F0A3) are the Symbol font's Greek
# capitals and "≤" (COVID-QA's HeteSim paper: "the path \uf050 = \uf04c P P"), so General
# Mills' 2020 cover, boxed in those, is not told by its glyphs.
_CHECK_BOX = re.compile(r"[\u2610-\u2612\u25a1\u2327]|(?<!\S)[þý¨](?!\S)")
_BOX_LETTER = re.compile(r"(?<!\S)[xXo](?!\S)")
CHECK_BOXES = 2
# A passage is boilerplate when the sentences that are hold more than this share of its text (an
# exhibit's certification under its signature, a cover's check boxes under the form's name).
BOILERPLATE_PASSAGE = 0.5
_NOT_WORD = re.compile(r"[\W_]+")
# Verdicts kept per process (`Verdicts`): a sentence's is two index reads (a keyword search and
# its chunks), and every search asks it again of the passages it lists.
KEPT_VERDICTS = 20_000


class Verdicts:
    """Each sentence's verdict on one shelf (the documents' versions it was judged among),
    kept while that shelf is unchanged: a shelf that gains or loses a document judges again.
    The oldest go past KEPT_VERDICTS. Shared by the threads of one server."""

    def __init__(self, size: int = KEPT_VERDICTS) -> None:
        self._size = size
        self._kept: OrderedDict[tuple[int, str], bool] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def shelf(versions: Mapping[str, str]) -> int:
        return hash(frozenset(versions.items()))

    def get(self, shelf: int, sentence: str) -> bool | None:
        with self._lock:
            return self._kept.get((shelf, sentence))

    def put(self, shelf: int, sentence: str, verdict: bool) -> None:
        with self._lock:
            self._kept[shelf, sentence] = verdict
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)


def boilerplate(
    index: ChunkStore,
    versions: Mapping[str, str],
    sentences: Sequence[str],
    *,
    kept: Verdicts | None = None,
) -> set[str]:
    """Those of `sentences` that are boilerplate among the documents of `versions` (doc_id ->
    version): held nearly verbatim (BOILERPLATE_SHARE of its runs of SHINGLE words, case and
    punctuation aside; an officer's name differs from one certification to the next) by
    BOILERPLATE_DOCUMENTS documents or more. A keyword search for each sentence, then a look
    at the documents its best hits are in. A form's row of check boxes (CHECK_BOXES or more)
    is boilerplate in any shelf: what it asks is the form's, whatever the boxes say. Verdicts
    in `kept` are not asked of the index again."""
    found = {s for s in sentences if _check_boxes(s)}
    if len(versions) < BOILERPLATE_DOCUMENTS:
        return found
    shelf = Verdicts.shelf(versions) if kept is not None else 0
    for sentence in dict.fromkeys(sentences):
        if sentence in found:
            continue
        verdict = kept.get(shelf, sentence) if kept is not None else None
        if verdict is None:
            verdict = _held_by_many(index, versions, sentence)
            if kept is not None:
                kept.put(shelf, sentence, verdict)
        if verdict:
            found.add(sentence)
    return found


def _held_by_many(index: ChunkStore, versions: Mapping[str, str], sentence: str) -> bool:
    wanted = _shingles(sentence)
    if len(wanted) < BOILERPLATE_WORDS:
        return False
    hits = index.keyword_search(sentence, k=BOILERPLATE_PROBE, versions=versions)
    chunks = index.chunks([chunk_id for chunk_id, _ in hits])
    holding = {
        c.doc_id
        for c in chunks.values()
        if versions.get(c.doc_id) == c.version
        and len(wanted & _shingles(c.text)) >= BOILERPLATE_SHARE * len(wanted)
    }
    return len(holding) >= BOILERPLATE_DOCUMENTS


def evidence_first(
    passages: Sequence[Passage], boilerplate: Callable[[Sequence[str]], set[str]]
) -> list[Passage]:
    """`passages`, those mostly boilerplate after the others, each part in its order: the
    sentences `boilerplate` names (`boilerplate` above, as `Library.boilerplate` asks it) hold
    more than BOILERPLATE_PASSAGE of the passage's text."""
    last = [_mostly_boilerplate(p, boilerplate) for p in passages]
    return [p for p, b in zip(passages, last, strict=True) if not b] + [
        p for p, b in zip(passages, last, strict=True) if b
    ]


def _mostly_boilerplate(passage: Passage, boilerplate: Callable[[Sequence[str]], set[str]]) -> bool:
    """Whether the sentences `boilerplate` names hold more than BOILERPLATE_PASSAGE of the
    passage's text. Each is a search of the index: the longest are asked first, and no more
    once the answer is known (a page of evidence is told by its two or three longest)."""
    texts = sorted((s.text for s in chunk_sentences(passage.chunk)), key=len, reverse=True)
    share = BOILERPLATE_PASSAGE * sum(len(text) for text in texts)
    held, left = 0, sum(len(text) for text in texts)
    for text in texts:
        if held > share or held + left <= share:
            break
        held += len(text) if boilerplate([text]) else 0
        left -= len(text)
    return held > share


def _check_boxes(text: str) -> bool:
    """Whether `text` is a form's row of check boxes (CHECK_BOXES or more, one of them a box
    character, not a letter)."""
    boxes = len(_CHECK_BOX.findall(text))
    return boxes > 0 and boxes + len(_BOX_LETTER.findall(text)) >= CHECK_BOXES


def _shingles(text: str) -> set[tuple[str, ...]]:
    """The runs of SHINGLE consecutive words of `text`, folded."""
    words = _NOT_WORD.sub(" ", text.casefold()).split()
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}
