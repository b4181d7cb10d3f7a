"""What the chat side reads: hybrid search and reranking, the documents, pages of a document."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from docchat.embed import Embedder
from docchat.errors import DocchatError
from docchat.models import Chunk, DocumentRecord, Passage
from docchat.retrieve import VECTOR_WEIGHT, Fusion, SearchIndex, hybrid_search


class Reranker(Protocol):
    def rerank(self, query: str, passages: Sequence[Passage], *, top_n: int) -> list[Passage]: ...


class ChunkReader(SearchIndex, Protocol):
    def document_chunks(self, doc_id: str) -> list[Chunk]: ...


class DocumentRegistry(Protocol):
    def documents(self) -> list[DocumentRecord]: ...

    def document(self, doc_id: str) -> DocumentRecord | None: ...


@dataclass(frozen=True)
class SearchResult:
    passages: list[Passage]
    reranked: bool
    rerank_note: str = ""  # why the fused order was kept, when reranking was on but failed


class Library:
    """The indexed documents as the agent and the API see them."""

    def __init__(
        self,
        *,
        index: ChunkReader,
        embedder: Embedder,
        registry: DocumentRegistry,
        reranker: Reranker | None = None,
        candidates: int = 50,
        fusion: Fusion = "rank",
        vector_weight: float = VECTOR_WEIGHT,
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.registry = registry
        self.reranker = reranker
        self.candidates = candidates
        self.fusion: Fusion = fusion
        self.vector_weight = vector_weight

    def search(
        self, query: str, *, top_k: int, doc_ids: Sequence[str] | None = None
    ) -> SearchResult:
        """Hybrid candidates, reranked when a reranker is set; the fused order if it fails."""
        pool = top_k * 4 if self.reranker else top_k
        fused = hybrid_search(
            self.index,
            self.embedder,
            query,
            top_k=pool,
            candidates=self.candidates,
            doc_ids=doc_ids,
            fusion=self.fusion,
            vector_weight=self.vector_weight,
        )
        if self.reranker is None or not fused:
            return SearchResult(fused[:top_k], reranked=False)
        try:
            return SearchResult(self.reranker.rerank(query, fused, top_n=top_k), reranked=True)
        except DocchatError as exc:
            return SearchResult(fused[:top_k], reranked=False, rerank_note=str(exc))

    def documents(self) -> list[DocumentRecord]:
        return self.registry.documents()

    def document(self, doc_id: str) -> DocumentRecord | None:
        return self.registry.document(doc_id)

    def pages(self, doc_id: str, first: int, last: int) -> list[Chunk]:
        """Chunks of a document that overlap pages first..last, in reading order."""
        return [
            c
            for c in self.index.document_chunks(doc_id)
            if c.page_end >= first and c.page_start <= last
        ]
