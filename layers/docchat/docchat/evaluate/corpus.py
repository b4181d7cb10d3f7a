"""A benchmark corpus held as the chat holds documents: chunked, embedded (the vectors cached
between runs), written to a temporary SQLite index, and searched per method (bm25, vector,
hybrid, and hybrid+rerank with a reranker). beir.py and qa.py score what this finds."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.config import Settings
from docchat.ingest.chunk import chunks_from_pages
from docchat.ingest.stages import Progress, embed_chunks
from docchat.models import Chunk, DocumentRecord, Page
from docchat.ports import Embedder, Reranker, Vectors
from docchat.search.hybrid import Fusion, check_weight, fused_passages

RERANKED = "hybrid+rerank"


@dataclass(frozen=True, kw_only=True)
class Retrieval:
    """The hybrid-search settings under evaluation."""

    candidates: int
    fusion: Fusion
    vector_weight: float

    @classmethod
    def of(cls, settings: Settings) -> Retrieval:
        """The hybrid search the chat runs with `settings` (the tuned one by default)."""
        return cls(
            candidates=settings.candidates,
            fusion=settings.fusion,
            vector_weight=settings.vector_weight,
        )


# --- indexing a corpus -----------------------------------------------------------------------


# What BM25 reads and the embedder embeds of a chunk: its text alone, or its contextual text
# (`Chunk.embed_text`: title and heading path before the text; benchmark documents have no file).
Context = Literal["plain", "contextual"]
CONTEXTS: tuple[Context, ...] = ("plain", "contextual")


@dataclass(frozen=True)
class Chunking:
    """How corpus documents become chunks: whole (size 0), or split as ingestion splits pages."""

    size: int = 0
    overlap: int = 0

    @property
    def label(self) -> str:
        return f"chunks{self.size}-{self.overlap}" if self.size else "whole"


def corpus_chunks(
    documents: Mapping[str, tuple[str, str]],
    chunking: Chunking,
    *,
    version: str,
    context: Context = "contextual",
) -> list[Chunk]:
    """Each (title, text) document as chunks, in document order: with `context="contextual"`
    each chunk carries its document's title and heading path, with "plain" neither. A
    benchmark document is no file: its chunks have no source, so no file name."""
    chunks: list[Chunk] = []
    for doc_id, (title, text) in documents.items():
        pieces = []
        if chunking.size:
            pieces = chunks_from_pages(
                [Page(number=1, markdown=text, chars=len(text))],
                doc_id=doc_id,
                version=version,
                source="",
                title=title,
                chunk_size=chunking.size,
                chunk_overlap=chunking.overlap,
            )
        pieces = pieces or [_whole(doc_id, title, text, version)]
        if context == "plain":
            pieces = [p.model_copy(update={"title": "", "headings": []}) for p in pieces]
        chunks.extend(pieces)
    return chunks


def _whole(doc_id: str, title: str, text: str, version: str) -> Chunk:
    return Chunk(
        chunk_id=f"{doc_id}:{version[:12]}:00000",
        doc_id=doc_id,
        version=version,
        source="",
        title=title,
        headings=[],
        page_start=1,
        page_end=1,
        text=text,
    )


def cached_vectors(
    chunks: Sequence[Chunk],
    *,
    embedder: Embedder,
    cache_dir: Path | None,
    on_progress: Progress | None = None,
) -> Vectors:
    """The chunks' embeddings: from `cache_dir` when it holds these texts embedded by this
    model, else computed (and saved there)."""
    texts = [c.embed_text for c in chunks]
    cache_file = None
    if cache_dir is not None:
        digest = hashlib.sha256(embedder.model_id.encode())
        for text in texts:
            digest.update(hashlib.sha256(text.encode()).digest())
        cache_file = cache_dir / f"vectors-{digest.hexdigest()[:24]}.npy"
        if cache_file.is_file():
            cached: Vectors = np.load(cache_file)
            if cached.shape == (len(texts), embedder.dimension):
                return cached
    vectors = embed_chunks(chunks, embedder=embedder, on_progress=on_progress)
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        partial = cache_file.with_name(cache_file.name + ".partial.npy")
        np.save(partial, vectors)
        partial.replace(cache_file)
    return vectors


@contextmanager
def filled_index(
    chunks: Sequence[Chunk],
    vectors: Vectors,
    *,
    embedder: Embedder,
    on_progress: Progress | None = None,
) -> Iterator[SqliteIndex]:
    """A SQLite index in a temporary folder holding `chunks` (grouped by document)."""
    with tempfile.TemporaryDirectory(prefix="docchat-eval-") as tmp:
        index = SqliteIndex(
            Path(tmp) / "index.sqlite3",
            embedding_model=embedder.model_id,
            dimension=embedder.dimension,
        )
        try:
            _fill(index, chunks, vectors, on_progress)
            yield index
        finally:
            index.close()


def _fill(
    index: SqliteIndex, chunks: Sequence[Chunk], vectors: Vectors, on_progress: Progress | None
) -> None:
    start = 0
    for end in range(1, len(chunks) + 1):
        if end < len(chunks) and chunks[end].doc_id == chunks[start].doc_id:
            continue
        first = chunks[start]
        record = DocumentRecord(
            doc_id=first.doc_id, source=first.source, title=first.title, version=first.version
        )
        index.replace_document(record, chunks[start:end], vectors[start:end])
        start = end
        if on_progress and (end % 500 == 0 or end == len(chunks)):
            on_progress("index", end, len(chunks))


# --- searching it per method -----------------------------------------------------------------


def ranked_chunks(
    index: SqliteIndex,
    embedder: Embedder,
    query: str,
    *,
    depth: int,
    retrieval: Retrieval,
    reranker: Reranker | None = None,
    rerank_depth: int = 0,
) -> dict[str, list[str]]:
    """Per method, the chunk ids retrieved for `query`, best first.

    With a reranker, the first `rerank_depth` fused passages are reordered and the rest follow.
    """
    # Each list once, as deep as the deepest use: a shorter top-k is always its head.
    check_weight(retrieval.fusion, retrieval.vector_weight)
    deepest = max(depth, retrieval.candidates)
    vector_hits = index.vector_search(embedder.embed_query(query), k=deepest)
    keyword_hits = index.keyword_search(query, k=deepest)
    fused = (
        fused_passages(
            index,
            vector_hits[: retrieval.candidates],
            keyword_hits[: retrieval.candidates],
            top_k=max(depth, rerank_depth),
            fusion=retrieval.fusion,
            vector_weight=retrieval.vector_weight,
        )
        if query.strip()  # as hybrid_search: a blank query finds nothing
        else []
    )
    found = {
        "bm25": [c for c, _ in keyword_hits[:depth]],
        "vector": [c for c, _ in vector_hits[:depth]],
        "hybrid": [p.chunk.chunk_id for p in fused[:depth]],
    }
    if reranker and rerank_depth:
        head = reranker.rerank(query, fused[:rerank_depth], top_n=rerank_depth)
        ids = [p.chunk.chunk_id for p in head]
        reranked = set(ids)
        rest = [p.chunk.chunk_id for p in fused if p.chunk.chunk_id not in reranked]
        found[RERANKED] = [*ids, *rest][:depth]
    return found
