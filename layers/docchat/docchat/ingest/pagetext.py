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
    ObjectMissingError,
)
from docchat.ingest.artifacts import pages_key, pages_prefix
from docchat.models import Page
from docchat.ports import Objects


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
