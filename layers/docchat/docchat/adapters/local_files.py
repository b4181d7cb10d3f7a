"""The PDFs of a local data directory's documents, for the page's viewer: each record's own
source file (an upload under the data directory, or the file `docchat ingest` was given; for a
PDF `docchat sync` fetched, the copy it kept), and only while it still holds the bytes that
were indexed."""

from __future__ import annotations

import hashlib
from pathlib import Path

from docchat.errors import DocumentFileChangedError, DocumentFileError
from docchat.models import DocumentRecord, FileLink, is_url, synced_copy

_READ_BYTES = 1 << 20


class LocalFiles:
    """A registered document's source file, checked against the version that was indexed;
    a synced web document's copy in `synced` (`synced_copy`)."""

    def __init__(self, synced: Path | None = None) -> None:
        self.synced = synced

    def pdf(self, record: DocumentRecord) -> Path | FileLink:
        if self.synced is not None and is_url(record.source):
            path = synced_copy(self.synced, record.doc_id)
        else:
            path = Path(record.source)
        # A source is an absolute path as ingestion resolved it; anything else (a bucket/key of
        # a cloud record) is not a file this server may read.
        if not path.is_absolute() or not path.is_file():
            raise DocumentFileError(
                f"the PDF of {record.title!r} is no longer where it was indexed from: "
                "ingest or upload it again"
            )
        if _sha256(path) != record.version:
            raise DocumentFileChangedError(
                f"the PDF of {record.title!r} changed after it was indexed: ingest it again "
                "so that pages and quotes match"
            )
        return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(_READ_BYTES):
            digest.update(block)
    return digest.hexdigest()
