"""Reranking without a rerank model: a passage rises when one of its sentences answers the query.

A chunk is embedded whole, and all-MiniLM-L6-v2 reads only its first 256 tokens; BM25 counts
the query's words anywhere in it. The sentence that answers is a sharper signal: each
candidate's sentences are embedded, each after its chunk's context (once per process while
the chunk stays cached), and scored by their cosine with the query plus the weighted share of
the query's words they hold.
Sentence vectors are computed once per chunk, the first time a question reranks it, and kept
in a `ChunkStore` when there is one (the local index), so a later question costs about what
a repeated one does. Ingestion leaves them to this: made there for every chunk, they were more
than half of its CPU (bench/ingest.py).
A passage's best sentence, rescaled over the candidates to 0..1, is added to its rescaled
fused score.
The weights are `Settings.sentence_weight` and `Settings.sentence_words`
(`bench/eval_sweep.py rerank`, docs/performance.md "Retrieval quality").
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from docchat.models import Chunk, Passage
from docchat.ports import ChunkStore, Embedder, SentenceVectors, Vectors
from docchat.search.concepts import as_asked
from docchat.search.hybrid import rescaled
from docchat.search.sentences import Span, chunk_sentences
from docchat.search.terms import query_terms, term_weights, terms
from docchat.vectors import cosines

# A sentence shorter than this (not a list item nor a table row) says too little to speak for
# its passage: "Safe." alone would match "safe harbor for caching" better than the section that
# answers it.
SHORT = 20
# Chunks whose sentences (their terms and vectors) are kept per process: about 14 KB each
# at 384 dimensions and 9 sentences.
CACHED_CHUNKS = 4_000


@dataclass(frozen=True)
class _Sentences:
    starts: list[int]  # each sentence's offset in its chunk's text (`Span.start`)
    texts: list[str]  # each sentence with its table's header (`Span.with_header`)
    rows: list[bool]  # whether each is a table row
    terms: list[set[str]]
    vectors: Vectors


class SentenceReranker:
    """Reorders passages by their fused score plus their best sentence's match with the query."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        sentence_weight: float,
        sentence_words: float,
        cached: int = CACHED_CHUNKS,
        store: ChunkStore | None = None,
    ) -> None:
        self.embedder = embedder
        self.model_id = f"sentences:{embedder.model_id}"
        self.sentence_weight = sentence_weight
        self.sentence_words = sentence_words
        self.store = store
        self._cached = cached
        self._lock = threading.Lock()  # the cache is shared by concurrent searches
        self._sentences: OrderedDict[str, _Sentences] = OrderedDict()

    def search_units(self, passages: int) -> int:
        return 0  # the embedder's own model, here: nothing billed

    def rerank(self, query: str, passages: Sequence[Passage], *, top_n: int) -> list[Passage]:
        """The `top_n` best of `passages`, best first, each scored anew."""
        if not passages or top_n < 1:
            return []
        best = self._best_sentences(query, self._sentences_of([p.chunk for p in passages]))
        scores = [
            fused + self.sentence_weight * sentence
            for fused, sentence in zip(
                rescaled([p.score for p in passages]), rescaled(best), strict=True
            )
        ]
        order = sorted(range(len(passages)), key=lambda i: -scores[i])  # stable: fused order
        return [passages[i].model_copy(update={"score": float(scores[i])}) for i in order[:top_n]]

    def similarities(self, query: str, chunks: Sequence[Chunk]) -> dict[tuple[str, int], float]:
        """The cosine with `query` of each scored sentence of `chunks`, by (chunk id, the
        sentence's `Span.start`): what the extractive answer adds to its own scores. The
        sentences of chunks just reranked are cached, and so is the query's vector."""
        vector = self._query_vector(query)
        return {
            (chunk.chunk_id, start): float(cosine)
            for chunk, sentences in zip(chunks, self._sentences_of(list(chunks)), strict=True)
            for start, cosine in zip(
                sentences.starts, cosines(sentences.vectors, vector), strict=True
            )
        }

    def _query_vector(self, query: str) -> Vectors:
        # Embedders remember their last queries (RecentQueries): the search just before and
        # the extractive answer just after ask for the same one.
        return self.embedder.embed_query(query).reshape(-1)

    def _best_sentences(self, query: str, passages: list[_Sentences]) -> list[float]:
        """Per passage, its best sentence's cosine with the query plus `sentence_words` times the
        weighted share of the query's words in it (0 for a passage without sentences). A word
        the sentence holds under another name counts as held (`concepts.as_asked`): a balance
        sheet's "Total current assets" row holds the "quick ratio" asked about, which the
        model's cosine alone does not see."""
        wanted = query_terms(query)
        held = [
            [found | as_asked(query, text) for found, text in zip(p.terms, p.texts, strict=True)]
            for p in passages
        ]
        weight = term_weights(wanted, [t for passage in held for t in passage])
        total = sum(weight.values()) or 1.0
        vector = self._query_vector(query)
        best: list[float] = []
        for passage, found_in in zip(passages, held, strict=True):
            cosine = cosines(passage.vectors, vector)
            scores = [
                float(cosine[k])
                + self.sentence_words * sum(weight[t] for t in wanted & found) / total
                for k, found in enumerate(found_in)
            ]
            # A table answers a measure with several rows ("EBITDA less capex": operating
            # profit, depreciation and capital spending): its rows' words count together.
            rows = [k for k, row in enumerate(passage.rows) if row]
            if len(rows) > 1:
                table = "\n".join(passage.texts[k] for k in rows)
                together = set().union(*(found_in[k] for k in rows)) | as_asked(query, table)
                scores.append(
                    max(float(cosine[k]) for k in rows)
                    + self.sentence_words * sum(weight[t] for t in wanted & together) / total
                )
            best.append(max(scores, default=0.0))
        return best

    def _sentences_of(self, chunks: list[Chunk]) -> list[_Sentences]:
        """Each chunk's sentences: cached, else kept in the store, else embedded (in one call
        for the chunks that need it, then kept)."""
        with self._lock:
            missing = list(
                {c.chunk_id: c for c in chunks if c.chunk_id not in self._sentences}.values()
            )
        spans = {chunk.chunk_id: scored_spans(chunk) for chunk in missing}
        kept = self.store.sentence_vectors(list(spans)) if self.store and missing else {}
        stale = [
            c
            for c in missing
            if c.chunk_id not in kept
            or kept[c.chunk_id].starts != tuple(span.start for span in spans[c.chunk_id])
        ]
        made = dict(
            zip([c.chunk_id for c in stale], sentence_vectors(stale, self.embedder), strict=True)
        )
        if made and self.store is not None:
            self.store.save_sentence_vectors(made)
        found = {**kept, **made}
        with self._lock:
            for chunk in missing:
                vectors = found[chunk.chunk_id]
                texts = [span.with_header for span in spans[chunk.chunk_id]]
                self._sentences[chunk.chunk_id] = _Sentences(
                    list(vectors.starts),
                    texts,
                    [span.table_row for span in spans[chunk.chunk_id]],
                    [terms(text) for text in texts],
                    vectors.vectors,
                )
            ordered = []
            for chunk in chunks:
                self._sentences.move_to_end(chunk.chunk_id)
                ordered.append(self._sentences[chunk.chunk_id])
            while len(self._sentences) > self._cached:
                self._sentences.popitem(last=False)
        return ordered


def scored_spans(chunk: Chunk) -> list[Span]:
    """The sentences of a chunk that can speak for it (see SHORT)."""
    return [
        span
        for span in chunk_sentences(chunk)
        if span.list_item or span.table_row or len(span.text) >= SHORT
    ]


def sentence_vectors(
    chunks: Sequence[Chunk], embedder: Embedder, *, on_batch: Callable[[int], None] | None = None
) -> list[SentenceVectors]:
    """Each chunk's scored sentences, embedded in one call, each after its chunk's context
    (file, title, headings), as the chunk itself is: "It cut deaths by half." alone does not
    say what did."""
    spans = [scored_spans(chunk) for chunk in chunks]
    flat = [
        "\n".join(part for part in (chunk.context, span.with_header) if part)
        for chunk, chunk_spans in zip(chunks, spans, strict=True)
        for span in chunk_spans
    ]
    vectors = (
        embedder.embed_documents(flat, on_batch=on_batch)
        if flat
        else np.zeros((0, embedder.dimension), dtype=np.float32)
    )
    # Half precision, as they are kept (a cosine moves by less than 1e-3): a sentence scores
    # the same whether its vector was just embedded or read back.
    vectors = vectors.astype(np.float16).astype(np.float32)
    found, start = [], 0
    for chunk_spans in spans:
        end = start + len(chunk_spans)
        found.append(SentenceVectors(tuple(span.start for span in chunk_spans), vectors[start:end]))
        start = end
    return found
