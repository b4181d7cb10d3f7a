"""Local mode over an OpenSearch cluster (DOCCHAT_OPENSEARCH_ENDPOINT set for `docchat serve`):
chunks and vectors go to the cluster through the cloud's adapter (OpenSearchIndex), which also
answers every search; the data directory's SQLite index keeps only the records, the page text
and the notes, so the server's memory no longer grows with the chunks. `ClusterIndex` is both
ports (DocumentCatalog and ChunkStore) over the two, as the SQLite index is over its file.

The sentence reranker's vectors of the cluster's chunks are kept in the SQLite file too (its
`cluster_sentences`, by chunk id): those ingestion embeds, and those a search embeds first, so
a question never asked does not embed them again in this process or the next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from docchat.adapters.opensearch_index import OpenSearchIndex, client_for
from docchat.adapters.sqlite_index import SqliteIndex
from docchat.config import Settings
from docchat.errors import DocumentNotFoundError, StorageError
from docchat.ingest.decision import copy_chunk
from docchat.models import Chunk, DocStatus, DocumentRecord, Page
from docchat.ports import SentenceVectors, Vectors


def cluster_chunks(settings: Settings, *, embedding_model: str, dimension: int) -> OpenSearchIndex:
    """The OpenSearch index of `settings.opensearch_endpoint` for this embedder's vectors."""
    client = client_for(
        settings.opensearch_endpoint, region=settings.region, service=settings.opensearch_service
    )
    return OpenSearchIndex(
        client=client,
        embedding_model=embedding_model,
        dimension=dimension,
        serverless=settings.opensearch_service == "aoss",
        index_prefix=settings.index_prefix,
        endpoint=settings.opensearch_endpoint,
    )


class ClusterIndex:
    """The catalog and chunk store of local mode when chunks live in a cluster: the chunks
    there (`cluster`), records, page text, notes and sentence vectors in `records`."""

    def __init__(self, records: SqliteIndex, cluster: OpenSearchIndex) -> None:
        self.records = records
        self.cluster = cluster

    @property
    def read_only(self) -> bool:
        return self.records.read_only

    @property
    def location(self) -> str:
        return self.cluster.location

    def revision(self) -> int | None:
        return self.records.revision()

    def document(self, doc_id: str) -> DocumentRecord | None:
        return self.records.document(doc_id)

    def documents(self) -> list[DocumentRecord]:
        return self.records.documents()

    def unfinished(self) -> list[DocumentRecord]:
        return self.records.unfinished()

    def indexed_version(self, version: str) -> DocumentRecord | None:
        return self.records.indexed_version(version)

    def set_record(self, record: DocumentRecord) -> None:
        self.records.set_record(record)

    def clear_chunks(self, doc_id: str) -> None:
        self.cluster.delete_document(doc_id)
        self.records.clear_chunks(doc_id)
        self.records.keep_cluster_sentences({}, replacing=doc_id)

    def delete_document(self, doc_id: str) -> None:
        """Forget a document: its chunks in the cluster, then its record."""
        self.cluster.delete_document(doc_id)
        self.records.delete_document(doc_id)
        self.records.keep_cluster_sentences({}, replacing=doc_id)

    # --- the pipeline's writes and the searches: the cluster's ------------------------------

    def write_chunks(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        self.cluster.write_chunks(chunks, vectors)

    def finalize_document(self, doc_id: str, version: str) -> dict[str, int]:
        return self.cluster.finalize_document(doc_id, version)

    def vector_search(
        self,
        query: Vectors,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        return self.cluster.vector_search(query, k=k, doc_ids=doc_ids, versions=versions)

    def keyword_search(
        self,
        query: str,
        *,
        k: int,
        doc_ids: Sequence[str] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        return self.cluster.keyword_search(query, k=k, doc_ids=doc_ids, versions=versions)

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        return self.cluster.chunks(chunk_ids)

    def document_chunks(self, doc_id: str, *, version: str | None = None) -> list[Chunk]:
        return self.cluster.document_chunks(doc_id, version=version)

    # --- kept per chunk, in the SQLite file ----------------------------------------------------

    def notes(self, keys: Sequence[str]) -> dict[str, str]:
        return self.records.notes(keys)

    def save_notes(self, notes: Mapping[str, str]) -> None:
        self.records.save_notes(notes)

    def sentence_vectors(self, chunk_ids: Sequence[str]) -> dict[str, SentenceVectors]:
        """Those kept for these chunks; none from a file that cannot say (they are embedded)."""
        try:
            return self.records.cluster_sentences(chunk_ids)
        except StorageError:  # a read-only file of an earlier docchat lacks the table
            return {}

    def save_sentence_vectors(self, found: Mapping[str, SentenceVectors]) -> None:
        self.records.keep_cluster_sentences(found)

    def replace_document(
        self,
        record: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: Vectors,
        *,
        pages: Sequence[Page] = (),
        sentences: Sequence[SentenceVectors] = (),
    ) -> None:
        """Write the new version's chunks to the cluster and remove its other versions' there,
        then mark the record indexed (with its page text) here."""
        if sentences and len(sentences) != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {len(sentences)} sets of sentences")
        self.cluster.write_chunks(chunks, vectors)
        self.cluster.finalize_document(record.doc_id, record.version)
        empty = np.zeros((0, self.cluster.dimension), dtype=np.float32)
        self.records.replace_document(record, [], empty, pages=pages)
        kept = dict(zip([c.chunk_id for c in chunks], sentences, strict=False))
        self.records.keep_cluster_sentences(kept, replacing=record.doc_id)
        indexed = record.model_copy(update={"status": DocStatus.INDEXED, "chunks": len(chunks)})
        self.records.set_record(indexed)

    def copy_document(self, from_doc_id: str, record: DocumentRecord) -> None:
        """Make `record` a document of its own from the cluster's chunks and vectors of
        `from_doc_id` (the same bytes under another name), embedding nothing."""
        original = self.records.document(from_doc_id)
        if original is None or original.status != DocStatus.INDEXED:
            raise DocumentNotFoundError(
                f"{from_doc_id!r} is not an indexed document: copy one that `docchat status` "
                "lists as INDEXED"
            )
        chunks, vectors = self.cluster.document_vectors(from_doc_id, original.version)
        copies = [copy_chunk(chunk, from_doc_id, record) for chunk in chunks]
        pages = self.records.stored_pages(from_doc_id, original.version) or []
        kept = self.sentence_vectors([c.chunk_id for c in chunks])
        sentences = [kept[c.chunk_id] for c in chunks if c.chunk_id in kept]
        self.replace_document(
            record,
            copies,
            vectors,
            pages=pages,
            sentences=sentences if len(sentences) == len(chunks) else (),
        )
