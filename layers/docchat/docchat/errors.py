"""One error hierarchy: every message says what happened and what to do.

Every error class lives here and registers its `code` explicitly (`@registered`): a Step
Functions failure names the exception class, and `code_for_name` turns that name into the code
stored with a failed document. A class outside this module, or one not registered, would
silently become `internal`; tests/unit/test_errors.py fails on either.
"""

from __future__ import annotations

import re
from typing import TypeVar


class DocchatError(Exception):
    """Base of every error docchat reports to a user."""

    #: Short machine-readable kind, stored with a failed document.
    code = "error"


E = TypeVar("E", bound=type[DocchatError])
#: code -> class, for every error docchat reports: each code names one class.
REGISTRY: dict[str, type[DocchatError]] = {DocchatError.code: DocchatError}


def registered(cls: E) -> E:
    """Add `cls` to REGISTRY under its own `code`, which no other class may have."""
    code = cls.__dict__.get("code")
    if not isinstance(code, str) or not code:
        raise TypeError(f"{cls.__name__} must set its own `code` to be registered")
    taken = REGISTRY.get(code)
    if taken is not None and taken is not cls:
        raise TypeError(f"{cls.__name__} reuses the code {code!r} of {taken.__name__}")
    REGISTRY[code] = cls
    return cls


def code_for_name(name: str) -> str | None:
    """The code of the registered error class called `name` (as Step Functions reports a
    Lambda's exception), or None for any other name."""
    for code, cls in REGISTRY.items():
        if cls.__name__ == name:
            return code
    return None


@registered
class ConversionError(DocchatError):
    """A document (a PDF, an Office, HTML, Markdown or text file) could not be turned into
    text."""

    code = "conversion_failed"

    def worded_for(self, command: str) -> str:
        """The message with its advice worded for how the file came in: the messages say
        "upload" (the web page, the bucket); `docchat ingest` says "ingest"."""
        return re.sub(r"\bupload\b", command, str(self))


@registered
class EmptyPdfError(ConversionError):
    code = "empty_pdf"


@registered
class EncryptedPdfError(ConversionError):
    code = "encrypted_pdf"


@registered
class MalformedPdfError(ConversionError):
    code = "malformed_pdf"


@registered
class NeedsOcrError(ConversionError):
    code = "needs_ocr"


@registered
class OcrError(ConversionError):
    code = "ocr_failed"


@registered
class PdfTooLargeError(ConversionError):
    code = "too_large"


@registered
class ConversionTimeoutError(ConversionError):
    code = "timeout"


@registered
class ConversionCrashedError(ConversionError):
    code = "engine_crash"


# Office, HTML, Markdown and text files (docchat.ingest.formats): why one was refused.


@registered
class UnsupportedFormatError(ConversionError):
    """Not a format docchat reads (legacy binary Office, images, unknown types)."""

    code = "unsupported_format"


@registered
class CorruptFileError(ConversionError):
    """The bytes are not a readable file of the type its name or content claims."""

    code = "corrupt_file"


@registered
class EncryptedFileError(ConversionError):
    """A password-protected Office file (an OLE2 container holding an EncryptedPackage)."""

    code = "encrypted_file"


@registered
class MacroFileError(ConversionError):
    """A macro-enabled file (.docm/.pptm/.xlsm, or any package with a VBA project)."""

    code = "has_macros"


@registered
class FileTooLargeError(ConversionError):
    """More bytes, parts, slides or cells than a conversion is allowed to read."""

    code = "file_too_large"


@registered
class ZipBombError(FileTooLargeError):
    """A package whose parts expand far beyond what any real Office file does."""

    code = "zip_bomb"


@registered
class NestingTooDeepError(FileTooLargeError):
    """An HTML page whose elements nest deeper than a conversion follows (Limits)."""

    code = "nested_too_deep"


@registered
class UnsafeXmlError(ConversionError):
    """An XML part with a DTD (entity declarations): Office never writes one; attacks do."""

    code = "unsafe_xml"


@registered
class EmptyDocumentError(ConversionError):
    """The file opened but holds no text to index."""

    code = "empty_document"


@registered
class EmbedderMismatchError(DocchatError):
    code = "embedder_mismatch"


@registered
class ModelFileError(DocchatError):
    code = "model_file"


@registered
class DocumentNotFoundError(DocchatError):
    code = "not_found"


@registered
class PageNotFoundError(DocumentNotFoundError):
    """A page number outside the document."""

    code = "page_not_found"


@registered
class PageTextMissingError(DocchatError):
    """The document is known but the text of its pages was not kept."""

    code = "page_text_missing"


@registered
class ConfigError(DocchatError):
    code = "config"


@registered
class EmbeddingError(DocchatError):
    """An embedding model could not embed the texts."""

    code = "embedding_failed"


@registered
class EmbeddingAccessDeniedError(EmbeddingError):
    """The model is not enabled for this account or the role may not invoke it: not retryable."""

    code = "embedding_access_denied"


@registered
class EmbeddingThrottledError(EmbeddingError):
    """The model kept throttling after the client's own retries: the pipeline retries later."""

    code = "embedding_throttled"


@registered
class SearchIndexError(DocchatError):
    """The search index refused or failed a request."""

    code = "index_failed"


@registered
class SearchIndexUnavailableError(SearchIndexError):
    """The search index is overloaded or unreachable (429, 5xx, timeout): retry later."""

    code = "index_unavailable"


@registered
class SearchIndexNotReadyError(SearchIndexUnavailableError):
    """A new collection's index, or its data access policy, is not in effect yet (a write was
    refused with 403): the Index step retries it for minutes before giving up."""

    code = "index_not_ready"


@registered
class ObjectMissingError(DocchatError):
    """The object is gone (deleted, or replaced before it was read)."""

    code = "object_missing"


@registered
class ObjectAccessDeniedError(DocchatError):
    """S3 refused to read an object (403): a missing permission, or a missing key read
    without s3:ListBucket, which S3 also answers with 403."""

    code = "object_access_denied"


@registered
class StaleWriteError(DocchatError):
    """A newer version or event owns the document now; this write was dropped."""

    code = "stale_write"


@registered
class IndexSchemaError(DocchatError):
    """The index file was written by a docchat with another layout."""

    code = "index_schema"


@registered
class StorageError(DocchatError):
    """The data directory or its index cannot be read or written as needed."""

    code = "storage"


@registered
class IndexMissingError(StorageError):
    """There is no index where one was expected (a mistyped --data-dir, say)."""

    code = "no_index"


@registered
class IndexCorruptError(StorageError):
    """The index file is damaged or is not an SQLite database at all."""

    code = "index_corrupt"


@registered
class SegmentsDamagedError(IndexCorruptError):
    """A segment of the index (saved beside its file) cannot be read; opened writable, the
    index writes them all again from its file."""

    code = "segments_damaged"


@registered
class StorageFullError(StorageError):
    """The disk holding the data directory is full."""

    code = "disk_full"


@registered
class ReadOnlyStorageError(StorageError):
    """The data directory is read-only: reading works, adding or removing documents does not."""

    code = "read_only"


@registered
class ModelError(DocchatError):
    """The language model failed or refused the request."""

    code = "model_failed"


@registered
class ModelUnavailableError(ModelError):
    """Overloaded, rate-limited or unreachable: try again shortly."""

    code = "model_unavailable"


@registered
class ModelAccessError(ModelError):
    """Bad credentials, or no access to the model: fix the configuration."""

    code = "model_access"


@registered
class RerankError(DocchatError):
    """The rerank model could not rank the passages; the retrieval order still stands."""

    code = "rerank_failed"


@registered
class UploadError(DocchatError):
    """An upload or deletion the server refuses."""

    code = "upload_rejected"


@registered
class UnsupportedUploadError(UploadError):
    """A file of a type docchat does not read, refused before it is stored."""

    code = "unsupported_type"


@registered
class NotPdfError(UnsupportedUploadError):
    """A .pdf name whose bytes are not a PDF."""

    code = "not_pdf"


@registered
class UploadTooLargeError(UploadError):
    code = "upload_too_large"


@registered
class UploadRouteError(UploadError):
    """The request suits the other kind of deployment (direct versus presigned uploads)."""

    code = "wrong_upload_route"


@registered
class DocumentFileError(DocchatError):
    """A registered document's PDF cannot be shown: gone from where it was indexed, or changed."""

    code = "document_file_unavailable"


@registered
class DocumentFileChangedError(DocumentFileError):
    """The file at the document's source is no longer the version that was indexed."""

    code = "document_file_changed"


@registered
class SupersededError(DocchatError):
    """A newer upload or a deletion took over this document; this run stops quietly."""

    code = "superseded"


@registered
class EvaluationDataError(DocchatError):
    """An evaluation file is missing or not in the expected format."""

    code = "bad_eval_data"


@registered
class ConversationNotFoundError(DocchatError):
    """No conversation of this user has that id (another user's is not found either)."""

    code = "conversation_not_found"


@registered
class AnswerNotFoundError(ConversationNotFoundError):
    """The conversation has no answer at that position (a question's, or beyond its end)."""

    code = "answer_not_found"


@registered
class ConversationFullError(DocchatError):
    """A conversation reached the size a stored conversation may have."""

    code = "conversation_full"


@registered
class NotOfferedError(DocchatError):
    """This server is not set up for what the request asks (uploads, saved conversations)."""

    code = "not_offered"


@registered
class CallerUnknownError(DocchatError):
    """The request does not say who is asking (no sign-in in API Gateway's request context)."""

    code = "caller_unknown"


@registered
class CollectionNameError(DocchatError):
    """A collection name that is not one (lower-case letters, digits, hyphens)."""

    code = "bad_collection"


@registered
class AccessDeniedError(DocchatError):
    """The caller may read a collection or document but not change it."""

    code = "access_denied"


@registered
class CloudServiceError(DocchatError):
    """An AWS service refused or failed a call the code has no answer of its own for."""

    code = "aws_error"


@registered
class CloudAccessDeniedError(CloudServiceError):
    """An AWS service refused a call: the function's IAM role does not allow it."""

    code = "aws_access_denied"


@registered
class CloudThrottledError(CloudServiceError):
    """An AWS service is throttling this account's calls."""

    code = "aws_throttled"


@registered
class SourceError(DocchatError):
    """A source to sync (`docchat sources`) is misconfigured or unknown: the message says which."""

    code = "source"


@registered
class SecretError(DocchatError):
    """A secret a stack's source syncs with cannot be read (missing, refused, empty): the message
    names the secret and what to do; it never holds the secret's value."""

    code = "secret_unavailable"
