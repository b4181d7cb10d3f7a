"""One error hierarchy: every message says what happened and what to do."""

import re


class DocchatError(Exception):
    """Base of every error docchat reports to a user."""

    #: Short machine-readable kind, stored with a failed document.
    code = "error"


class ConversionError(DocchatError):
    """A PDF could not be turned into text."""

    code = "conversion_failed"

    def worded_for(self, command: str) -> str:
        """The message with its advice worded for how the file came in: the messages say
        "upload" (the web page, the bucket); `docchat ingest` says "ingest"."""
        return re.sub(r"\bupload\b", command, str(self))


class EmptyPdfError(ConversionError):
    code = "empty_pdf"


class EncryptedPdfError(ConversionError):
    code = "encrypted_pdf"


class MalformedPdfError(ConversionError):
    code = "malformed_pdf"


class NeedsOcrError(ConversionError):
    code = "needs_ocr"


class OcrError(ConversionError):
    code = "ocr_failed"


class PdfTooLargeError(ConversionError):
    code = "too_large"


class ConversionTimeoutError(ConversionError):
    code = "timeout"


class ConversionCrashedError(ConversionError):
    code = "engine_crash"


class EmbedderMismatchError(DocchatError):
    code = "embedder_mismatch"


class ModelFileError(DocchatError):
    code = "model_file"


class DocumentNotFoundError(DocchatError):
    code = "not_found"


class ConfigError(DocchatError):
    code = "config"


class EmbeddingError(DocchatError):
    """An embedding model could not embed the texts."""

    code = "embedding_failed"


class EmbeddingAccessDeniedError(EmbeddingError):
    """The model is not enabled for this account or the role may not invoke it: not retryable."""

    code = "embedding_access_denied"


class EmbeddingThrottledError(EmbeddingError):
    """The model kept throttling after the client's own retries: the pipeline retries later."""

    code = "embedding_throttled"


class SearchIndexError(DocchatError):
    """The search index refused or failed a request."""

    code = "index_failed"


class SearchIndexUnavailableError(SearchIndexError):
    """The search index is overloaded or unreachable (429, 5xx, timeout): retry later."""

    code = "index_unavailable"


class ObjectMissingError(DocchatError):
    """The object is gone (deleted, or replaced before it was read)."""

    code = "object_missing"


class ObjectAccessDeniedError(DocchatError):
    """S3 refused to read an object (403): a missing permission, or a missing key read
    without s3:ListBucket, which S3 also answers with 403."""

    code = "object_access_denied"


class StaleWriteError(DocchatError):
    """A newer version or event owns the document now; this write was dropped."""

    code = "stale_write"


class IndexSchemaError(DocchatError):
    """The index file was written by a docchat with another layout."""

    code = "index_schema"


class StorageError(DocchatError):
    """The data directory or its index cannot be read or written as needed."""

    code = "storage"
    #: The HTTP status the API answers with.
    http_status = 503


class IndexMissingError(StorageError):
    """There is no index where one was expected (a mistyped --data-dir, say)."""

    code = "no_index"
    http_status = 404


class IndexCorruptError(StorageError):
    """The index file is damaged or is not an SQLite database at all."""

    code = "index_corrupt"
    http_status = 500


class StorageFullError(StorageError):
    """The disk holding the data directory is full."""

    code = "disk_full"
    http_status = 507


class ReadOnlyStorageError(StorageError):
    """The data directory is read-only: reading works, adding or removing documents does not."""

    code = "read_only"
    http_status = 409
