"""The sentence reranker: a passage rises when one of its sentences answers the query."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from docchat.config import Settings
from docchat.models import Chunk, Passage
from docchat.search.rerank import SHORT, SentenceReranker, sentence_similarities
from docchat.search.sentences import chunk_sentences
from docchat.wiring import reranker
from tests.conftest import WordEmbedder

QUERY = "Which vaccine protects against measles?"
# The words of the query, scattered over sentences about other things.
SCATTERED = (
    "The vaccine schedule changed in 2019. Measles cases were reported in spring. "
    "Nothing here protects anyone against boredom. Which is a question for later."
)
ANSWERS = "Clinics were busy. The MMR vaccine protects against measles, mumps and rubella."


def _passage(text: str, score: float, n: int) -> Passage:
    chunk = Chunk(
        chunk_id=f"d{n}:v:00000",
        doc_id=f"d{n}",
        version="v",
        source=f"d{n}.pdf",
        title=f"Document {n}",
        headings=[],
        page_start=1,
        page_end=1,
        text=text,
    )
    return Passage(chunk=chunk, score=score)


class CountingEmbedder(WordEmbedder):
    """Counts the texts it embeds as documents."""

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed_documents(
        self, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
    ) -> np.ndarray:
        self.embedded.extend(texts)
        return super().embed_documents(texts, on_batch=on_batch)


def test_a_passage_whose_sentence_answers_rises_above_one_with_the_words_scattered() -> None:
    # Scores are rescaled over the candidates: the weaker ones set the scale, as in a search.
    weaker = [_passage(f"Unrelated text number {n}.", 0.5 - n / 10, n) for n in range(3, 6)]
    passages = [_passage(SCATTERED, 0.9, 1), _passage(ANSWERS, 0.8, 2), *weaker]
    ranked = SentenceReranker(WordEmbedder(), sentence_weight=0.45, sentence_words=0.5).rerank(
        QUERY, passages, top_n=2
    )
    assert [p.chunk.doc_id for p in ranked] == ["d2", "d1"]
    assert ranked[0].score > ranked[1].score


def test_without_sentence_weight_the_fused_order_stays() -> None:
    passages = [_passage(SCATTERED, 0.9, 1), _passage(ANSWERS, 0.7, 2)]
    ranked = SentenceReranker(WordEmbedder(), sentence_weight=0.0, sentence_words=0.5).rerank(
        QUERY, passages, top_n=2
    )
    assert [p.chunk.doc_id for p in ranked] == ["d1", "d2"]


def test_only_top_n_come_back_and_nothing_comes_from_nothing() -> None:
    rerank = SentenceReranker(WordEmbedder(), sentence_weight=0.45, sentence_words=0.5)
    passages = [_passage(SCATTERED, 0.9, 1), _passage(ANSWERS, 0.7, 2), _passage("x y", 0.1, 3)]
    assert len(rerank.rerank(QUERY, passages, top_n=2)) == 2
    assert rerank.rerank(QUERY, [], top_n=5) == []
    assert rerank.rerank(QUERY, passages, top_n=0) == []


def test_each_sentence_is_embedded_once_while_it_stays_cached() -> None:
    embedder = CountingEmbedder()
    rerank = SentenceReranker(embedder, sentence_weight=0.45, sentence_words=0.5)
    passages = [_passage(SCATTERED, 0.9, 1), _passage(ANSWERS, 0.7, 2)]
    first = rerank.rerank(QUERY, passages, top_n=2)
    count = len(embedder.embedded)
    assert count == 5  # four sentences, and one ("Clinics were busy." is too short to count)
    assert rerank.rerank(QUERY, passages, top_n=2) == first
    assert len(embedder.embedded) == count


def test_a_cache_smaller_than_one_search_still_scores_every_sentence() -> None:
    roomy = SentenceReranker(WordEmbedder(), sentence_weight=0.45, sentence_words=0.5)
    tight = SentenceReranker(WordEmbedder(), sentence_weight=0.45, sentence_words=0.5, cached=1)
    passages = [_passage(SCATTERED, 0.9, 1), _passage(ANSWERS, 0.7, 2)]
    expected = roomy.rerank(QUERY, passages, top_n=2)
    for _ in range(2):
        assert tight.rerank(QUERY, passages, top_n=2) == expected


@pytest.mark.parametrize(
    ("name", "kind"),
    [("sentences", SentenceReranker), ("none", type(None))],
)
def test_the_settings_choose_the_reranker(name: str, kind: type) -> None:
    chosen = reranker(Settings(reranker=name), WordEmbedder())
    assert isinstance(chosen, kind)


def test_a_short_list_item_still_counts() -> None:
    weaker = [_passage(f"Unrelated text number {n}.", 0.5 - n / 10, n) for n in range(3, 6)]
    items = "The safe harbors are:\n1. Transitory communications;\n2. System caching;"
    passages = [_passage(SCATTERED, 0.9, 1), _passage(items, 0.8, 2), *weaker]
    ranked = SentenceReranker(WordEmbedder(), sentence_weight=1.0, sentence_words=0.8).rerank(
        "system caching", passages, top_n=1
    )
    assert ranked[0].chunk.doc_id == "d2"


def test_similarities_give_each_scored_sentence_its_cosine_by_where_it_starts() -> None:
    embedder = CountingEmbedder()
    sentences = SentenceReranker(embedder, sentence_weight=1.0, sentence_words=0.5)
    passages = [_passage(SCATTERED, 0.9, 1), _passage(ANSWERS, 0.8, 2)]
    sentences.rerank(QUERY, passages, top_n=2)
    embedded = len(embedder.embedded)

    cosines = sentences.similarities(QUERY, [p.chunk for p in passages])

    assert len(embedder.embedded) == embedded  # the reranked sentences are not embedded again
    assert set(cosines) == {
        (p.chunk.chunk_id, span.start)
        for p in passages
        for span in chunk_sentences(p.chunk)
        if len(span.text) >= SHORT  # "Clinics were busy." is too short to be scored
    }
    answer = ANSWERS.index("The MMR vaccine")
    assert max(cosines, key=cosines.__getitem__) == (passages[1].chunk.chunk_id, answer)


def test_without_the_sentence_reranker_there_are_no_similarities() -> None:
    chunk = _passage(ANSWERS, 1.0, 1).chunk
    assert sentence_similarities(None, QUERY, [chunk]) == {}
