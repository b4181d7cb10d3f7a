"""The sentence reranker: a passage rises when one of its sentences answers the query."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from docchat.adapters.bedrock_reranker import BedrockReranker
from docchat.adapters.sqlite_index import SqliteIndex
from docchat.config import Settings
from docchat.models import Chunk, DocumentRecord, Passage
from docchat.ports import SentenceVectors
from docchat.search.rerank import SHORT, SentenceReranker
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


def test_bedrock_rerank_scores_no_sentences() -> None:
    chunk = _passage(ANSWERS, 1.0, 1).chunk
    assert BedrockReranker(client=object()).similarities(QUERY, [chunk]) == {}


def _indexed(tmp_path: Path, passages: Sequence[Passage]) -> SqliteIndex:
    index = SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)
    for passage in passages:
        chunk = passage.chunk
        record = DocumentRecord(doc_id=chunk.doc_id, source=chunk.source, version="v")
        index.replace_document(record, [chunk], WordEmbedder().embed_documents([chunk.text]))
    return index


def test_sentence_vectors_are_kept_so_a_new_reranker_embeds_none(tmp_path: Path) -> None:
    # Given an index that keeps sentence vectors, and a search that met two passages
    passages = [_passage(SCATTERED, 0.9, 1), _passage(ANSWERS, 0.7, 2)]
    index = _indexed(tmp_path, passages)
    first = CountingEmbedder()
    expected = SentenceReranker(first, sentence_weight=0.45, sentence_words=0.5, store=index)
    ranked = expected.rerank(QUERY, passages, top_n=2)
    assert len(first.embedded) == 5

    # When another process (a new reranker, nothing cached) meets them with a new question
    later = CountingEmbedder()
    fresh = SentenceReranker(later, sentence_weight=0.45, sentence_words=0.5, store=index)

    # Then it embeds no sentence, and ranks as the first did
    assert [p.chunk.chunk_id for p in fresh.rerank(QUERY, passages, top_n=2)] == [
        p.chunk.chunk_id for p in ranked
    ]
    assert fresh.similarities("measles", [p.chunk for p in passages])
    assert later.embedded == []
    index.close()


def test_sentence_vectors_kept_for_other_sentences_are_embedded_again(tmp_path: Path) -> None:
    # A kept entry whose sentence starts no longer match the chunk (the splitter changed)
    passages = [_passage(ANSWERS, 0.7, 2)]
    index = _indexed(tmp_path, passages)
    vectors = WordEmbedder().embed_documents(["x"])
    index.save_sentence_vectors({"d2:v:00000": SentenceVectors((0, 5), np.vstack([vectors] * 2))})
    embedder = CountingEmbedder()

    SentenceReranker(embedder, sentence_weight=0.45, sentence_words=0.5, store=index).rerank(
        QUERY, passages, top_n=1
    )

    assert len(embedder.embedded) == 1
    kept = index.sentence_vectors(["d2:v:00000"])["d2:v:00000"]
    assert kept.starts == (19,)  # "The MMR vaccine ..." ("Clinics were busy." is too short)
    assert kept.vectors == pytest.approx(
        WordEmbedder().embed_documents(embedder.embedded), abs=1e-3
    )
    index.close()
