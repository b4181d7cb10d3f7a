"""Sentence vectors are the reranker's, not ingestion's (issue 45): an ingest embeds each chunk
once, and the first question that reranks a passage embeds its sentences and keeps them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.config import Settings
from docchat.ingest.local import ingest_bytes
from docchat.ingest.shelf import Shelf
from docchat.search.hybrid import hybrid_search
from docchat.search.rerank import SentenceReranker, sentence_vectors
from tests.chatkit import SEARCH
from tests.conftest import WordEmbedder
from tests.pdfgen import make_pdf

QUERY = "Which vaccine protects against measles?"
ANSWERS = "Clinics were busy. The MMR vaccine protects against measles, mumps and rubella."
SCATTERED = (
    "The vaccine schedule changed in 2019. Measles cases were reported in spring. "
    "Nothing here protects anyone against boredom. Which is a question for later."
)


class CountingEmbedder(WordEmbedder):
    """Keeps the texts it embeds as documents."""

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed_documents(
        self, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
    ) -> np.ndarray:
        self.embedded.extend(texts)
        return super().embed_documents(texts, on_batch=on_batch)


def _reranker(embedder: CountingEmbedder, index: SqliteIndex) -> SentenceReranker:
    return SentenceReranker(embedder, sentence_weight=0.45, sentence_words=0.5, store=index)


@pytest.fixture
def index(tmp_path: Path) -> SqliteIndex:
    return SqliteIndex(tmp_path / "index.sqlite3", embedding_model="test-words", dimension=64)


def _ingested(index: SqliteIndex, tmp_path: Path, embedder: CountingEmbedder) -> list[str]:
    """Ingest a two-page PDF; the ids of its chunks."""
    result = ingest_bytes(
        make_pdf([[("body", ANSWERS)], [("body", SCATTERED)]]),
        source="/docs/vaccines.pdf",
        shelf=Shelf(index, index, index),
        embedder=embedder,
        settings=Settings(data_dir=tmp_path),
    )
    return [c.chunk_id for c in index.document_chunks(result.record.doc_id)]


def test_ingestion_embeds_each_chunk_once_and_no_sentence(
    index: SqliteIndex, tmp_path: Path
) -> None:
    embedder = CountingEmbedder()

    chunk_ids = _ingested(index, tmp_path, embedder)

    assert chunk_ids
    assert len(embedder.embedded) == len(chunk_ids)
    assert index.sentence_vectors(chunk_ids) == {}
    index.close()


def test_the_first_question_embeds_the_sentences_it_reranks_and_keeps_them(
    index: SqliteIndex, tmp_path: Path
) -> None:
    # Given an ingested document
    _ingested(index, tmp_path, CountingEmbedder())
    passages = hybrid_search(index, WordEmbedder(), QUERY, top_k=5, **SEARCH)
    chunks = [p.chunk for p in passages]

    # When a first question reranks its passages
    first = CountingEmbedder()
    ranked = _reranker(first, index).rerank(QUERY, passages, top_n=2)

    # Then their sentences are embedded then, as ingestion embedded them before, and kept
    assert first.embedded
    kept = index.sentence_vectors([c.chunk_id for c in chunks])
    for chunk, expected in zip(chunks, sentence_vectors(chunks, WordEmbedder()), strict=True):
        assert kept[chunk.chunk_id].starts == expected.starts
        assert kept[chunk.chunk_id].vectors == pytest.approx(expected.vectors, abs=1e-3)

    # And a later question, in a fresh process, embeds none and ranks the same
    later = CountingEmbedder()
    again = _reranker(later, index).rerank(QUERY, passages, top_n=2)
    assert later.embedded == []
    assert [p.chunk.chunk_id for p in again] == [p.chunk.chunk_id for p in ranked]
    index.close()
