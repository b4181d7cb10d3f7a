"""Which file types docchat reads and the converter of each: the one registry that `docchat
ingest`, uploads (the page, the API, the bucket's presigned PUTs) and the cloud's Convert step
consult.

PDFs go through docchat.ingest.convert (text layer, OCR); every other format here becomes a
ConvertedDocument whose pages are locations (sections, slides, sheet ranges), each with a kind
and a label that a citation shows where a PDF citation shows the page number.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from docchat.errors import UnsupportedFormatError

if TYPE_CHECKING:
    from docchat.ingest.formats.safety import Limits
    from docchat.models import ConvertedDocument


@dataclass(frozen=True)
class Format:
    """A file type docchat reads: its short name (also its converter's in documents.py,
    which is imported only to convert: uploads and the chat app never load the libraries),
    and the media type a browser PUTs it with. PDF has its own stage (with OCR)."""

    name: str
    media_type: str


_OOXML = "application/vnd.openxmlformats-officedocument."
_DOCX = Format("docx", _OOXML + "wordprocessingml.document")
_PPTX = Format("pptx", _OOXML + "presentationml.presentation")
_XLSX = Format("xlsx", _OOXML + "spreadsheetml.sheet")
_HTML = Format("html", "text/html")
_MD = Format("md", "text/markdown")
_TXT = Format("txt", "text/plain")

#: suffix -> format. Macro-enabled suffixes are read so that they fail with their own reason
#: (has_macros) rather than as an unknown type.
FORMATS: dict[str, Format] = {
    ".pdf": Format("pdf", "application/pdf"),
    ".docx": _DOCX,
    ".docm": _DOCX,
    ".dotx": _DOCX,
    ".dotm": _DOCX,
    ".pptx": _PPTX,
    ".pptm": _PPTX,
    ".ppsx": _PPTX,
    ".ppsm": _PPTX,
    ".potx": _PPTX,
    ".xlsx": _XLSX,
    ".xlsm": _XLSX,
    ".xltx": _XLSX,
    ".xltm": _XLSX,
    ".html": _HTML,
    ".htm": _HTML,
    ".xhtml": _HTML,
    ".md": _MD,
    ".markdown": _MD,
    ".txt": _TXT,
    ".text": _TXT,
}
SUFFIXES = tuple(FORMATS)
#: What a user is told docchat reads.
READABLE = "a PDF, .docx, .pptx, .xlsx, .html, .md or .txt file"
_LEGACY = {
    ".doc": ".docx",
    ".xls": ".xlsx",
    ".ppt": ".pptx",
    ".rtf": ".docx",
    ".odt": ".docx",
    ".ods": ".xlsx",
    ".odp": ".pptx",
}


def suffix_of(name: str) -> str:
    """A file name's extension, lower case ("" without one); ".pdf" of a file named ".pdf"."""
    base = PurePosixPath(name.replace("\\", "/").lower()).name
    return "." + base.rpartition(".")[2] if "." in base else ""


def is_readable(name: str) -> bool:
    """Whether a file of this name is one docchat reads (by its extension)."""
    return suffix_of(name) in FORMATS


def format_of(name: str) -> Format:
    """The format a file of this name is read as, or UnsupportedFormatError saying what to
    do (a legacy binary Office file: save it in its modern format)."""
    suffix = suffix_of(name)
    found = FORMATS.get(suffix)
    if found is not None:
        return found
    if suffix in _LEGACY:
        raise UnsupportedFormatError(
            f"{name!r} is a {suffix} file, which docchat does not read: save it as "
            f"{_LEGACY[suffix]} (or PDF) and upload that"
        )
    raise UnsupportedFormatError(f"{name!r} is not a file type docchat reads: upload {READABLE}")


def convert(name: str, data: bytes, limits: Limits | None = None) -> ConvertedDocument:
    """A non-PDF document converted by its name's extension, or a typed refusal."""
    from docchat.ingest.formats import documents
    from docchat.ingest.formats.safety import DEFAULT_LIMITS

    fmt = format_of(name)
    if fmt.name == "pdf":
        raise UnsupportedFormatError(f"{name!r} is a PDF: docchat.ingest.convert reads it")
    converter = getattr(documents, fmt.name)
    with _collector_paused():
        document: ConvertedDocument = converter(name, data, limits or DEFAULT_LIMITS)
    return document


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a converter runs, as it was after. The readers
    build trees of millions of objects that hold no cycles, and each collection walks the objects
    built so far again, so the cost grew faster than the file (mammoth on a generated 800-table
    .docx: 8.3 s of CPU with it, 2.9 s without; a 16,384-column sheet 6.4 s, 3.9 s). What a
    conversion leaves is freed by reference counting; ingest converts in a child process."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
