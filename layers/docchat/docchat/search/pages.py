"""A document's pages as conversion extracted them, read back for `docchat text`, the viewer's
page route and MCP (kept by ingestion: docchat.ingest.pagetext)."""

from __future__ import annotations

from docchat.errors import DocumentNotFoundError, PageNotFoundError, PageTextMissingError
from docchat.models import DocStatus, DocumentRecord, Page
from docchat.ports import PageStore


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
