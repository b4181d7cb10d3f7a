"""What conversion extracted from each page, kept at ingestion and read back by
`docchat text` and GET /documents/{id}/pages/{n}.

Locally the embedded index keeps the pages beside the chunks. In the cloud the Convert step writes
them as one JSON object per document version under `pages/` in the artifacts bucket, a prefix
the artifacts' expiry does not reach; Remove deletes it with the document. The chat function only
reads that object: no PDF engine is loaded to show a page.
"""

from __future__ import annotations

from typing import Any

from docchat.errors import (
    DocumentNotFoundError,
    ObjectMissingError,
    PageNotFoundError,
    PageTextMissingError,
)
from docchat.ingest.artifacts import pages_key, pages_prefix
from docchat.models import DocStatus, DocumentRecord, Page
from docchat.ports import Objects, PageStore


def drop_pages(objects: Objects, bucket: str, doc_id: str, *, keep: str = "") -> list[str]:
    """Delete the page text the artifacts bucket keeps for versions of `doc_id` other than
    `keep` (all of them when `keep` is empty); the keys deleted. A version's pages go with it:
    when a newer version is indexed, when a run fails, when the document is removed."""
    kept = pages_key(doc_id, keep) if keep else ""
    dropped = [k for k in objects.keys(bucket, pages_prefix(doc_id)) if k != kept]
    for key in dropped:
        objects.delete(bucket, key)
    return dropped


def pages_document(title: str, pages: list[Page]) -> dict[str, Any]:
    """The JSON object the Convert step writes (and the Chunk step reads)."""
    return {"title": title, "pages": [p.model_dump(mode="json") for p in pages]}


class S3PageStore:
    """The pages the Convert step wrote to the artifacts bucket."""

    def __init__(self, objects: Objects, bucket: str) -> None:
        self._objects = objects
        self._bucket = bucket

    def stored_pages(self, doc_id: str, version: str) -> list[Page] | None:
        try:
            stored = self._objects.read_json(self._bucket, pages_key(doc_id, version))
        except ObjectMissingError:
            return None
        if not isinstance(stored, dict):
            return None
        return [Page.model_validate(p) for p in stored.get("pages", [])]


def extracted_pages(
    record: DocumentRecord | None,
    store: PageStore | None,
    *,
    doc_ref: str,
    first: int | None = None,
    last: int | None = None,
) -> list[Page]:
    """Pages first..last (all by default) of the document, as conversion extracted them."""
    if record is None:
        raise DocumentNotFoundError(
            f"no document with id {doc_ref!r}: GET /documents or `docchat status` lists them"
        )
    pages = store.stored_pages(record.doc_id, record.version) if store else None
    if pages is None and record.status == DocStatus.FAILED:
        why = record.error or "add its file again"
        raise PageTextMissingError(f"{record.doc_id} has no page text: it failed to index: {why}")
    if pages is None:
        raise PageTextMissingError(
            f"the page text of {record.doc_id} was not kept (status {record.status.value}; "
            "documents indexed before docchat kept page text have none): remove the document "
            "and add its file again (`docchat rm`, then `docchat ingest`; in the cloud, delete "
            "the object and upload it again)"
        )
    count = len(pages)
    first = 1 if first is None else first
    last = count if last is None else last
    if not (1 <= first <= last <= count):
        wanted = f"page {first}" if first == last else f"pages {first}-{last}"
        raise PageNotFoundError(
            f"{record.doc_id} has {count} page{'s' if count != 1 else ''}: {wanted} is out of "
            f"range, ask for 1-{count}"
        )
    return pages[first - 1 : last]
