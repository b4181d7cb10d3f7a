"""How local mode writes a document into the index's two ports: `Shelf` holds the catalog, the
chunk store and the page keeper (one SQLite file, or with DOCCHAT_OPENSEARCH_ENDPOINT the file
and the cluster's chunks) and writes them in the cloud pipeline's order, so that a process
killed at any point leaves no record naming chunks that are not there:

1. the new version's page text (kept by version; no record names it yet),
2. its chunks (searched only under the versions the records name, so not yet),
3. its record, INDEXED (the catalog drops the page text of the version it left behind),
4. the document's chunks of every other version.

A kill after 3 leaves the old version's chunks, which no search returns (they are not the
record's version); the next ingest of the file finds it unchanged and removes them (`settle`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from docchat.errors import DocumentNotFoundError
from docchat.models import Chunk, DocStatus, DocumentRecord, Page
from docchat.ports import ChunkStore, DocumentCatalog, PageKeeper, Vectors


@dataclass(frozen=True)
class Shelf:
    catalog: DocumentCatalog
    chunks: ChunkStore
    pages: PageKeeper

    def put(
        self,
        record: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: Vectors,
        *,
        pages: Sequence[Page],
    ) -> DocumentRecord:
        """Index `record`'s version with these chunks and page text; the record as kept."""
        self.pages.keep_pages(record.version, pages)
        self.chunks.write_chunks(chunks, vectors)
        indexed = record.model_copy(update={"status": DocStatus.INDEXED, "chunks": len(chunks)})
        self.catalog.set_record(indexed)
        self.chunks.finalize_document(record.doc_id, record.version)
        return indexed

    def copy(self, twin_id: str, record: DocumentRecord) -> DocumentRecord:
        """Index `record` (copy_record of document `twin_id`: the same bytes) from the twin's
        chunks, which share its page text (kept by version), embedding nothing."""
        twin = self.catalog.document(twin_id)
        if twin is None or twin.status != DocStatus.INDEXED or twin.version != record.version:
            raise DocumentNotFoundError(
                f"{twin_id!r} is not an indexed document: copy one that `docchat status` "
                "lists as INDEXED"
            )
        copied = self.chunks.copy_document(twin_id, record)
        indexed = record.model_copy(update={"status": DocStatus.INDEXED, "chunks": copied})
        self.catalog.set_record(indexed)
        return indexed

    def settle(self, record: DocumentRecord) -> None:
        """Remove what a killed ingest of `record`'s version left: other versions' chunks."""
        self.chunks.finalize_document(record.doc_id, record.version)

    def fail(self, failed: DocumentRecord) -> None:
        """Mark the document FAILED with no chunks: the index follows the file, and an
        unreadable new version leaves no stale chunks behind."""
        self.chunks.delete_document(failed.doc_id)
        self.catalog.set_record(failed)

    def remove(self, doc_id: str) -> None:
        """Forget the document: its chunks, then its record (a kill between leaves it listed,
        with nothing to find, and removing it again ends the work)."""
        self.chunks.delete_document(doc_id)
        self.catalog.forget(doc_id)
