"""Adding and removing documents from the web page.

Locally the file goes straight into the data directory and is indexed in a background thread;
in the cloud the page gets a presigned S3 URL, so every file still enters through the bucket
and its pipeline, and a deletion removes the object (the pipeline then cleans the index).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import threading
import unicodedata
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path, PurePosixPath
from typing import IO, Literal

from docchat.config import Settings
from docchat.errors import (
    DocchatError,
    DocumentNotFoundError,
    NotPdfError,
    ReadOnlyStorageError,
    StorageError,
    StorageFullError,
    UnsupportedUploadError,
    UploadError,
    UploadRouteError,
    UploadTooLargeError,
)
from docchat.ingest.formats import READABLE, Format, format_of, is_readable
from docchat.ingest.notes import ChunkNotes
from docchat.ingest.shelf import Shelf
from docchat.models import (
    DEFAULT_COLLECTION,
    DocStatus,
    DocumentRecord,
    Removal,
    UploadTicket,
    collection_name,
    collections_of,
)
from docchat.ports import Embedder, Writer

# docchat.ingest.local (and with it the PDF engine and the text splitter) is imported only where a
# file is indexed or named: the chat Lambda loads this module and should start light.

MAX_UPLOAD_BYTES = 100 * 1024 * 1024
UPLOAD_PREFIX = "uploads/"
PDF_MAGIC = b"%PDF-"
MAX_NAME_BYTES = 200  # of UTF-8, below the 255 a file name may have on common file systems
KEY_CHARS = 32  # hex digits of the name's SHA-256: the folder that makes an upload unique
#: How many documents of one name a collection's uploads can tell apart (see placed_upload).
UPLOAD_SLOTS = 16
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {
    f"{kind}{n}" for kind in ("COM", "LPT") for n in range(1, 10)
}
S3_UPLOAD_ROUTE = (
    "this deployment takes uploads through S3: POST /documents/upload-url for a "
    "presigned URL, then PUT the file there"
)
logger = logging.getLogger(__name__)


def display_name(filename: str) -> str:
    """The user's own file name as it is shown and stored: any script, the last part of a
    path, control characters replaced, at most MAX_NAME_BYTES of UTF-8 (the end kept)."""
    base = unicodedata.normalize("NFC", filename).replace("\\", "/").rsplit("/", 1)[-1]
    shown = "".join("_" if unicodedata.category(c) in ("Cc", "Cs") else c for c in base).strip()
    stem, suffix = (shown[:-4], shown[-4:]) if shown.lower().endswith(".pdf") else (shown, "")
    if stem.rstrip(". ").upper() in _WINDOWS_RESERVED:
        stem += "_"
    while len((stem + suffix).encode()) > MAX_NAME_BYTES:
        stem = stem[:-1]
    name = stem + suffix
    return name if name.strip(".") else "document.pdf"


def upload_key(filename: str) -> str:
    """What makes an upload one document: its full name as given (NFC), hashed. Two different
    names never share it; the same name again is a new version of that document."""
    name = unicodedata.normalize("NFC", filename).encode("utf-8", "surrogatepass")
    return hashlib.sha256(name).hexdigest()[:KEY_CHARS]


def collection_folder(collection: str) -> PurePosixPath:
    """Where uploads into `collection` go, under the uploads folder or prefix: the default
    collection's at its top (as before collections), another's under `collections/<name>/`."""
    if collection == DEFAULT_COLLECTION:
        return PurePosixPath()
    return PurePosixPath("collections", collection_name(collection))


def upload_path(filename: str, slot: int = 0) -> PurePosixPath:
    """`<key>/<display name>`: where an upload lives under its collection's uploads folder or
    prefix. A slot past the first (`<key>-2/...`) holds another document of the same name, one
    uploaded after the first was moved out of the collection (placed_upload)."""
    key = upload_key(filename) if slot == 0 else f"{upload_key(filename)}-{slot + 1}"
    return PurePosixPath(key, display_name(filename))


def placed_upload(
    filename: str,
    collection: str,
    *,
    document_at: Callable[[PurePosixPath], DocumentRecord | None],
    writer: Writer,
) -> PurePosixPath:
    """Where an upload of `filename` into `collection` goes (`<key>/<name>`, within the
    collection's uploads), `document_at` telling the document that lives at such a path.

    The same name in the same collection again is the next revision of that document, and that
    changes it in every collection it is in now: the writer must be allowed to write each of
    them (AccessDeniedError otherwise, naming only the collections they may read). A document
    of that name that was moved out of `collection` is left as it is: the upload becomes a
    document of its own beside it, in `collection` alone."""
    free: PurePosixPath | None = None
    for slot in range(UPLOAD_SLOTS):
        path = upload_path(filename, slot)
        current = document_at(path)
        if current is None:
            free = free or path
        elif collection in current.collections:
            writer.check_change(
                current.collections,
                what=f"a new version of {display_name(filename)!r} changes that document in "
                "every collection it is in",
                instead="upload the file under another name, or ask an admin for write access",
            )
            return path
    if free is None:
        raise UploadError(
            f"{UPLOAD_SLOTS} documents named {display_name(filename)!r} that were uploaded into "
            f"{collection!r} are in other collections now: upload this file under another name"
        )
    return free


def check_size(size: int) -> None:
    if size > MAX_UPLOAD_BYTES:
        raise UploadTooLargeError(
            f"the file has {size} bytes, more than the {MAX_UPLOAD_BYTES // (1024 * 1024)} MB "
            "an upload may have: split the document"
        )
    if size <= 0:
        raise UnsupportedUploadError(f"the file is empty: choose {READABLE}")


def check_name(filename: str) -> Format:
    """The format of a file named `filename` (formats.FORMATS), or a refusal saying which
    types docchat reads: an unknown type never reaches the pipeline."""
    if not is_readable(filename):
        raise UnsupportedUploadError(
            f"{filename!r} is not a file type docchat reads: upload {READABLE}"
        )
    return format_of(filename)


def check_upload(filename: str, data: bytes) -> None:
    """Refuse a file docchat does not read, or of an unacceptable size, or whose bytes are
    plainly not what its name says, with a message saying why. Deeper checks (encryption,
    macros, zip bombs) are the conversion's, which fails the document with its reason."""
    kind = check_name(filename).name
    check_size(len(data))
    # The PDF header may follow a little junk; readers look in the first 1024 bytes.
    if kind == "pdf" and PDF_MAGIC not in data[:1024]:
        raise NotPdfError(
            f"{filename!r} does not start like a PDF (no %PDF- header): "
            "upload the PDF itself, not another format renamed"
        )


class LocalUploads:
    """Files saved under `data_dir/uploads/` and indexed one at a time in a background thread.

    The file on disk is the truth: deleting a document deletes its uploaded file, and a job whose
    file was deleted or replaced while it waited does nothing.
    """

    kind: Literal["direct"] = "direct"

    def __init__(
        self,
        *,
        shelf: Shelf,
        embedder: Embedder,
        settings: Settings,
        notes: ChunkNotes | None = None,
    ) -> None:
        self.shelf = shelf
        self.catalog = catalog = shelf.catalog
        self.embedder = embedder
        self.settings = settings
        self.notes = notes
        self.folder = (settings.data_dir / "uploads").resolve()
        self._lock = threading.RLock()  # receive holds it around _queue
        self._latest: dict[str, str] = {}  # doc_id -> the version its newest upload has
        self._jobs = ThreadPoolExecutor(max_workers=1, thread_name_prefix="docchat-ingest")
        # Held while this server may index here: `docchat status` tells work in progress from
        # work a stopped server left, and a second server leaves the resuming to the first.
        self._owner = None if catalog.read_only else _claim(settings.data_dir)
        if self._owner is not None:
            self._resume()

    def receive(
        self, filename: str, data: bytes, *, collection: str, writer: Writer
    ) -> DocumentRecord:
        """Save the document and queue it for indexing into `collection`; its record says
        QUEUED until work starts. The same name in the same collection again is the next
        revision of that document (`revision` says which; placed_upload says who may write
        it); bytes already indexed under another name in the same collections are a document
        of their own at once, copied from the other (nothing embedded)."""
        from docchat.ingest.decision import doc_id_for

        check_upload(filename, data)
        if self.catalog.read_only:
            raise ReadOnlyStorageError(
                f"the data directory {self.settings.data_dir} is read-only: this server only "
                "searches it; add documents where it is writable"
            )
        folder = self.folder / collection_folder(collection)
        with self._lock:  # a move of the document it lands on waits until it is queued
            placed = placed_upload(
                filename,
                collection,
                document_at=lambda path: self.catalog.document(doc_id_for(str(folder / path))),
                writer=writer,
            )
            return self._queue(folder / placed, data, write=True, collections=[collection])

    def upload_url(
        self, filename: str, *, size: int, collection: str, writer: Writer
    ) -> UploadTicket:
        raise UploadRouteError(
            "this server takes uploads directly: POST the PDF to /documents?filename=<name>"
        )

    def remove(self, doc_id: str) -> Removal:
        """Forget a document; a file it came from is deleted only if it was uploaded here."""
        with self._lock:
            record = self.catalog.document(doc_id)
            if record is None:
                raise DocumentNotFoundError(
                    f"no document with id {doc_id!r}: GET /documents lists them"
                )
            self._latest.pop(doc_id, None)
            self.shelf.remove(doc_id)
            self._delete_upload(Path(record.source))
        logger.info("document deleted", extra={"doc_id": doc_id})
        return Removal(doc_id=doc_id, status="deleted")

    def move(self, doc_id: str, collections: Sequence[str]) -> DocumentRecord:
        """Put the document in exactly `collections` (its record only: no re-embedding)."""
        with self._lock:
            record = self.catalog.document(doc_id)
            if record is None:
                raise DocumentNotFoundError(
                    f"no document with id {doc_id!r}: GET /documents lists them"
                )
            moved = record.model_copy(update={"collections": collections_of(collections)})
            self.catalog.set_record(moved)
        return moved

    def _delete_upload(self, path: Path) -> None:
        """Delete a file this server received (and its folder); other files are the user's."""
        if self.folder not in (path.parent.parent, path.parent.parent.parent.parent):
            return
        path.unlink(missing_ok=True)
        with suppress(OSError):  # not empty: a newer upload of the same name is being written
            path.parent.rmdir()

    def close(self) -> None:
        """Wait for the queued jobs (tests, and a clean shutdown)."""
        self._jobs.shutdown(wait=True)
        if self._owner is not None:
            self._owner.close()
            self._owner = None

    def _queue(
        self, path: Path, data: bytes, *, write: bool, collections: Sequence[str] = ()
    ) -> DocumentRecord:
        from docchat.ingest.decision import copy_record, decide, doc_id_for, version_of

        source = str(path)
        doc_id = doc_id_for(source)
        version = version_of(data)
        with self._lock:
            if write:
                _write_atomically(path, data)
            current = self.catalog.document(doc_id)
            # An existing document keeps its collections (moved by an admin, it stays moved).
            placed = current.collections if current else collections_of(collections)
            twin = self.catalog.indexed_version(version)
            if twin is not None and twin.collections != placed:
                twin = None  # the same bytes in other collections are another document
            decision = decide(current, version, twin=twin.doc_id if twin else "")
            if decision.outcome == "unchanged" and current is not None:
                return current
            if decision.outcome == "duplicate" and twin is not None:
                copied = self.shelf.copy(twin.doc_id, copy_record(twin, source, decision.revision))
                self._latest.pop(doc_id, None)
                logger.info("upload copies a twin", extra={"doc_id": doc_id, "twin": twin.doc_id})
                return copied
            queued = DocumentRecord(
                doc_id=doc_id,
                source=source,
                title=path.stem,
                version=version,
                revision=decision.revision,
                collections=placed,
            )
            self.catalog.set_record(queued)
            self._latest[doc_id] = version
        self._jobs.submit(self._ingest, path, data, doc_id, version)
        logger.info("upload queued", extra={"doc_id": doc_id})
        return queued

    def _ingest(self, path: Path, data: bytes, doc_id: str, version: str) -> None:
        from docchat.ingest.local import ingest_bytes

        if self._latest.get(doc_id) != version:
            return  # deleted, or a newer upload of the same name is queued behind this one
        current = self.catalog.document(doc_id)
        if current and current.version == version and current.status == DocStatus.INDEXED:
            return  # the same bytes were uploaded twice and the first job indexed them
        stage = _Stage(lambda status: self._set_status(doc_id, version, status))
        stage.advance(DocStatus.CONVERTING)
        try:
            ingest_bytes(
                data,
                source=str(path),
                shelf=self.shelf,
                embedder=self.embedder,
                settings=self.settings,
                on_progress=stage.progress,
                notes=self.notes,
            )
        except DocchatError as exc:
            self._fail(doc_id, exc.code, str(exc))
        except Exception as exc:  # a bug must not leave the document QUEUED for ever
            logger.exception("indexing an upload failed", extra={"doc_id": doc_id})
            self._fail(doc_id, "internal", f"indexing failed unexpectedly ({exc}): upload again")
        with self._lock:
            if doc_id not in self._latest:  # deleted while it was being indexed
                self.shelf.remove(doc_id)

    def _fail(self, doc_id: str, code: str, message: str) -> None:
        with self._lock:
            record = self.catalog.document(doc_id)
            if record is None:
                return
            self.shelf.fail(
                record.model_copy(
                    update={"status": DocStatus.FAILED, "error_code": code, "error": message}
                )
            )

    def _set_status(self, doc_id: str, version: str, status: DocStatus) -> None:
        with self._lock:
            record = self.catalog.document(doc_id)
            if record is not None and record.version == version:
                self.catalog.set_record(record.model_copy(update={"status": status}))

    def _resume(self) -> None:
        """Queue again the uploads a stopped server left unfinished, so none stays QUEUED or
        EMBEDDING; one that cannot resume fails with the reason."""
        if self.catalog.read_only:
            return
        for record in self.catalog.unfinished():
            path = Path(record.source)
            if not path.is_relative_to(self.folder):
                self._fail(
                    record.doc_id,
                    "interrupted",
                    "indexing was interrupted (docchat stopped): add the file again",
                )
                continue
            try:
                data = path.read_bytes()
            except OSError:
                self._fail(record.doc_id, "missing", "the uploaded file is gone: upload it again")
                continue
            self._queue(path, data, write=False)


class _Stage:
    """Turns ingestion's progress callbacks into registry statuses, writing only changes."""

    def __init__(self, write: Callable[[DocStatus], None]) -> None:
        self.write = write
        self.status: DocStatus | None = None

    def advance(self, status: DocStatus) -> None:
        if status != self.status:
            self.status = status
            self.write(status)

    def progress(self, step: str, done: int, total: int) -> None:
        statuses = {"convert": DocStatus.CONVERTING, "notes": DocStatus.CHUNKING}
        self.advance(statuses.get(step, DocStatus.EMBEDDING))


LOCK_NAME = "indexing.lock"


def _claim(data_dir: Path) -> IO[bytes] | None:
    """An exclusive lock on the data directory's indexing, or None when another process has it:
    whoever holds it finishes what a stopped server left."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        handle = open(data_dir / LOCK_NAME, "ab")  # noqa: SIM115 - held until close()
    except OSError:
        return None
    try:
        import fcntl
    except ImportError:  # no flock (Windows): resume all the same
        return handle
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def interrupted(settings: Settings, documents: Sequence[DocumentRecord]) -> set[str]:
    """Ids of the unfinished documents no running server is working on: a stopped server left
    them, and the next `docchat serve` resumes them."""
    unfinished = {d.doc_id for d in documents if d.status not in _DONE}
    if not unfinished or not os.access(settings.data_dir, os.W_OK):
        return unfinished  # read-only: no server can be indexing there
    owner = _claim(settings.data_dir)
    if owner is None:
        return set()  # a server holds the data directory and works on them
    owner.close()
    return unfinished


_DONE = (DocStatus.INDEXED, DocStatus.FAILED)


def _write_atomically(path: Path, data: bytes) -> None:
    """The whole file or none of it: a failed write (a full disk) leaves nothing behind."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(data)
        partial.replace(path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        with suppress(OSError):  # only an empty folder goes: an earlier version may be there
            path.parent.rmdir()
        raise _storage_error(exc, path.parent.parent) from exc


def _storage_error(exc: OSError, folder: Path) -> StorageError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageFullError(
            f"no space left to save the upload in {folder}: free some space and upload again"
        )
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return ReadOnlyStorageError(
            f"cannot save the upload in {folder} ({exc.strerror}): the data directory must be "
            "writable to add documents"
        )
    return StorageError(f"cannot save the upload in {folder} ({exc.strerror or exc}): try again")
