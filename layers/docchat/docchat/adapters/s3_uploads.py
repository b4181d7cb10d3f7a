"""Uploads through S3: presigned PUT URLs into the documents bucket; deletion removes the object
(the bucket's pipeline then cleans the index and the registry). The viewer reads a document
through a presigned GET (`S3Files`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any, Literal
from urllib.parse import urlsplit

from docchat.errors import (
    DocumentFileError,
    DocumentNotFoundError,
    StaleWriteError,
    UploadError,
    UploadRouteError,
)
from docchat.ingest.uploads import (
    S3_UPLOAD_ROUTE,
    UPLOAD_PREFIX,
    check_name,
    check_size,
    placed_upload,
)
from docchat.models import (
    COLLECTIONS_PREFIX,
    DEFAULT_COLLECTION,
    DocumentRecord,
    FileLink,
    Removal,
    UploadTicket,
    collection_name,
    collections_of,
    is_url,
)
from docchat.ports import Registry, Writer

PRESIGN_EXPIRES_S = 15 * 60
# The viewer fetches the PDF at once: a link that outlives that is only a link to leak.
VIEW_EXPIRES_S = 5 * 60
logger = logging.getLogger(__name__)


class S3Uploads:
    """Presigned PUT URLs into the documents bucket; deletion removes the object."""

    kind: Literal["presigned"] = "presigned"

    def __init__(
        self,
        *,
        client: Any,
        bucket: str,
        registry: Registry,
        expires_s: int = PRESIGN_EXPIRES_S,
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.registry = registry
        self.expires_s = expires_s

    def receive(
        self, filename: str, data: bytes, *, collection: str, writer: Writer
    ) -> DocumentRecord:
        raise UploadRouteError(S3_UPLOAD_ROUTE)

    def upload_url(
        self, filename: str, *, size: int, collection: str, writer: Writer
    ) -> UploadTicket:
        """A URL that accepts exactly this many bytes of a readable type (a PDF, an Office,
        HTML, Markdown or text file) at `uploads/<key>/<name>`, or
        `collections/<collection>/uploads/<key>/<name>` (the key places a new document:
        Register). The key is the one of the document of that name in `collection`, when
        `writer` may change it (placed_upload), else a new document's."""
        from docchat.ingest.decision import doc_id_for

        media_type = check_name(filename).media_type
        check_size(size)
        placed = placed_upload(
            filename,
            collection,
            document_at=lambda path: self.registry.document(
                doc_id_for(f"{self.bucket}/{_key_of(collection, path)}")
            ),
            writer=writer,
        )
        key = _key_of(collection, placed)
        url = self.client.generate_presigned_url(
            "put_object",
            Params={
                "Bucket": self.bucket,
                "Key": key,
                "ContentType": media_type,
                "ContentLength": size,
            },
            ExpiresIn=self.expires_s,
            HttpMethod="PUT",
        )
        return UploadTicket(
            url=url,
            headers={"Content-Type": media_type},
            key=key,
            doc_id=doc_id_for(f"{self.bucket}/{key}"),
            expires_in=self.expires_s,
        )

    def remove(self, doc_id: str) -> Removal:
        record = self.registry.document(doc_id)
        if record is None:
            raise DocumentNotFoundError(
                f"no document with id {doc_id!r}: GET /documents lists them"
            )
        bucket, key = stored_object(record, self.registry)
        if bucket != self.bucket or not key:
            raise UploadError(
                f"document {doc_id} comes from {record.source!r}, outside the documents bucket "
                f"{self.bucket}: delete it where it is stored"
            )
        self.client.delete_object(Bucket=bucket, Key=key)
        logger.info("document object deleted", extra={"doc_id": doc_id})
        return Removal(doc_id=doc_id, status="deleting")

    def move(self, doc_id: str, collections: Sequence[str]) -> DocumentRecord:
        """Put the document in exactly `collections`: its registry entry only (searches read
        the registry, so nothing is embedded or indexed again). A new version keeps them."""
        record = self.registry.document(doc_id)
        if record is None:
            raise DocumentNotFoundError(
                f"no document with id {doc_id!r}: GET /documents lists them"
            )
        names = collections_of(collections)
        try:
            self.registry.update(doc_id, record.version, collections=names)
        except StaleWriteError as exc:
            raise StaleWriteError(
                f"document {doc_id} changed while it was being moved: move it again"
            ) from exc
        return record.model_copy(update={"collections": names})


def _key_of(collection: str, placed: PurePosixPath) -> str:
    """`uploads/<key>/<name>`, under `collections/<collection>/` but for the default collection:
    Register reads the collection from the key."""
    key = UPLOAD_PREFIX + placed.as_posix()
    if collection == DEFAULT_COLLECTION:
        return key
    return f"{COLLECTIONS_PREFIX}{collection_name(collection)}/{key}"


def stored_object(record: DocumentRecord, registry: Registry | None) -> tuple[str, str]:
    """The bucket and key of a document's object: its source's, or, for a synced page (whose
    source is its address), the object its registry entry says the sync wrote."""
    entry = registry.get(record.doc_id) if registry is not None and is_url(record.source) else None
    bucket, _, key = (entry.stored_at if entry else record.source).partition("/")
    return bucket, key


class S3Files:
    """Presigned GET URLs for the viewer, only for documents stored in the documents bucket: an
    upload's object, or the object a synced page or file was written to (its registry entry's
    `stored_at`, its source being its address)."""

    def __init__(
        self,
        *,
        client: Any,
        bucket: str,
        registry: Registry | None = None,
        expires_s: int = VIEW_EXPIRES_S,
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.registry = registry
        self.expires_s = expires_s

    @property
    def origin(self) -> str:
        """The scheme and host the bucket's presigned URLs point at (for the page's policy)."""
        url = self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": "origin"}, ExpiresIn=60
        )
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}"

    def pdf(self, record: DocumentRecord) -> FileLink:
        """A URL that reads the indexed version of the document's object for a few minutes."""
        bucket, key = stored_object(record, self.registry)
        if bucket != self.bucket or not key:
            raise DocumentFileError(
                f"document {record.doc_id} comes from {record.source!r}, outside the documents "
                f"bucket {self.bucket}: open it where it is stored"
            )
        # https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html: the response-*
        # overrides need a signed request, which a presigned URL is. Anything but a PDF is
        # served as a download, so an uploaded HTML file never runs as a page of the bucket.
        params = {
            "Bucket": bucket,
            "Key": key,
            "ResponseContentType": "application/pdf",
            "ResponseCacheControl": "private, max-age=300",
        }
        if not key.lower().endswith(".pdf"):
            params["ResponseContentType"] = "application/octet-stream"
            params["ResponseContentDisposition"] = "attachment"
        url = self.client.generate_presigned_url(
            "get_object",
            Params=params,
            ExpiresIn=self.expires_s,
            HttpMethod="GET",
        )
        return FileLink(url=url, expires_in=self.expires_s)
