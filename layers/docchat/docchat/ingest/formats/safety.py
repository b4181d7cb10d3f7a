"""Checks an Office package passes before any library parses it.

Order matters: size first (cheap), then what the bytes are (an OLE2 container is either an
encrypted OOXML file or a legacy binary one), then the zip's central directory (part count,
declared sizes, compression ratios: a zip bomb is refused before a byte is inflated), then
macros, then every part is inflated once here, in bounded steps, to prove its declared size
true (and every XML part's prolog is read: a DTD is refused, so no entity is ever expanded).

Why inflate here: zipfile returns no more than a part's declared size, but `ZipFile.read` (what
python-docx, python-pptx and mammoth call) inflates the whole deflate stream in one call before
cutting it to that size: a part declaring 300 bytes that inflates to 2 GB costs 2 GB (measured
in hostile.py: a 50 MB part declared as 300 bytes peaks at 218 MB). Once every part's declared
size is proven, the directory checks bound what the libraries can inflate.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from docchat.errors import (
    ConversionError,
    CorruptFileError,
    EncryptedFileError,
    FileTooLargeError,
    MacroFileError,
    UnsafeXmlError,
    UnsupportedFormatError,
    ZipBombError,
)

MIB = 1024 * 1024
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP_MAGIC = b"PK\x03\x04"
OoxmlKind = Literal["docx", "pptx", "xlsx"]

# The main part's content type names the kind; the macro-enabled and template variants too.
_MAIN_TYPES: dict[str, OoxmlKind] = {
    "wordprocessingml.document.main": "docx",
    "wordprocessingml.template.main": "docx",
    "ms-word.document.macroenabled.main": "docx",
    "ms-word.template.macroenabledtemplate.main": "docx",
    "presentationml.presentation.main": "pptx",
    "presentationml.slideshow.main": "pptx",
    "presentationml.template.main": "pptx",
    "ms-powerpoint.presentation.macroenabled.main": "pptx",
    "ms-powerpoint.slideshow.macroenabled.main": "pptx",
    "spreadsheetml.sheet.main": "xlsx",
    "spreadsheetml.template.main": "xlsx",
    "ms-excel.sheet.macroenabled.main": "xlsx",
    "ms-excel.template.macroenabled.main": "xlsx",
}
MACRO_SUFFIXES = (".docm", ".dotm", ".pptm", ".potm", ".ppsm", ".ppam", ".xlsm", ".xltm", ".xlam")
_LEGACY = {
    "docx": ".doc (Word 97-2003)",
    "pptx": ".ppt (PowerPoint 97-2003)",
    "xlsx": ".xls (Excel 97-2003)",
}
_SAVE_AS = {"docx": ".docx", "pptx": ".pptx", "xlsx": ".xlsx"}


@dataclass(frozen=True)
class Limits:
    """How much one conversion may read. Upload's own limit is 100 MB. Real Office parts
    compress 5-45x (measured: at most 43x over every part of the test set, 15x for a generated
    200,000-row sheet), so a large part inflating more than `max_ratio` times is a bomb."""

    max_file_bytes: int = 100 * MIB
    max_uncompressed_bytes: int = 1024 * MIB  # all parts, media included
    max_xml_bytes: int = 256 * MIB  # the XML parts the libraries build trees from
    max_parts: int = 10_000
    max_ratio: float = 200.0
    ratio_floor_bytes: int = 1 * MIB  # smaller parts may compress as well as they like
    max_slides: int = 2_000
    max_sheet_cells: int = 2_000_000  # cells scanned, empty ones between filled ones included
    # One worksheet's XML, checked before it is read: reading costs about 8 s per 10 MB (a
    # 1,000,000-row sheet of two columns is 119 MB and ran into the 300 s conversion limit).
    max_sheet_xml_bytes: int = 64 * MIB
    max_text_chars: int = 50_000_000  # HTML / Markdown / text, decoded
    # How deep an HTML page's elements may nest: Chromium's parser stops at 512 levels too;
    # real pages nest 15-40 (the Wikipedia page of the test set: 31).
    max_html_depth: int = 512


DEFAULT_LIMITS = Limits()


def check_size(name: str, data: bytes, limits: Limits) -> None:
    """Refuse a file larger than a conversion reads."""
    if len(data) > limits.max_file_bytes:
        raise FileTooLargeError(
            f"{name!r} has {len(data) / MIB:.1f} MB, more than the "
            f"{limits.max_file_bytes // MIB} MB a document may have: split it and upload the parts"
        )


def open_package(name: str, data: bytes, expected: OoxmlKind, limits: Limits) -> zipfile.ZipFile:
    """The checked zip of an OOXML file whose content is of kind `expected`, or a typed
    refusal: too large, encrypted, legacy binary, corrupt, zip bomb, macros, or a DTD."""
    check_size(name, data, limits)
    if name.lower().endswith(MACRO_SUFFIXES):
        raise _macros(name, expected)
    if data.startswith(OLE_MAGIC):
        raise _ole_reason(name, data, expected)
    if not data.startswith(ZIP_MAGIC):
        raise CorruptFileError(
            f"{name!r} is not a {_SAVE_AS[expected]} file (it is not a zip package"
            f"{', it is empty' if not data else ''}): open it in its application, save it as "
            f"{_SAVE_AS[expected]} and upload that"
        )
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
        infos = package.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise _corrupt(name, expected, f"its zip directory is damaged: {exc}") from exc
    _check_directory(name, infos, limits)
    kind = _main_kind(name, package, expected)
    if kind != expected:
        raise CorruptFileError(
            f"{name!r} holds a {_SAVE_AS[kind]} document under a {_SAVE_AS[expected]} name: "
            f"rename it to {_SAVE_AS[kind]} and upload it again"
        )
    if any(i.filename.lower().endswith("vbaproject.bin") for i in infos):
        raise _macros(name, expected)
    for info in infos:
        _check_part(name, data, info)
    return package


def _ole_reason(name: str, data: bytes, kind: OoxmlKind) -> Exception:
    """An OLE2 container named like OOXML: encrypted OOXML, or a legacy binary file."""
    import msoffcrypto  # only encrypted-looking files pay for olefile's import

    try:
        encrypted = msoffcrypto.OfficeFile(io.BytesIO(data)).is_encrypted()
    except Exception:
        encrypted = False
    if encrypted:
        return EncryptedFileError(
            f"{name!r} is encrypted with a password: open it, remove the password "
            f"(File > Info > Protect), save a copy without one and upload that"
        )
    return UnsupportedFormatError(
        f"{name!r} is a legacy {_LEGACY[kind]} file, not {_SAVE_AS[kind]}: "
        f"open it, save it as {_SAVE_AS[kind]} and upload that"
    )


def _check_directory(name: str, infos: list[zipfile.ZipInfo], limits: Limits) -> None:
    if len(infos) > limits.max_parts:
        raise ZipBombError(
            f"{name!r} has {len(infos)} parts, more than the {limits.max_parts} a document "
            f"may have: save it again from its application, or split it, and upload that"
        )
    total = sum(i.file_size for i in infos)
    xml = sum(i.file_size for i in infos if i.filename.lower().endswith((".xml", ".rels")))
    worst = max(infos, key=lambda i: i.file_size / max(i.compress_size, 1), default=None)
    if worst is not None and worst.file_size > limits.ratio_floor_bytes:
        ratio = worst.file_size / max(worst.compress_size, 1)
        if ratio > limits.max_ratio:
            raise ZipBombError(
                f"{name!r} has a part ({worst.filename}) that would expand {ratio:.0f} times "
                f"to {worst.file_size / MIB:.0f} MB, as zip bombs do and documents do not: "
                f"it was not opened; if the file is genuine, save it again and upload that"
            )
    if total > limits.max_uncompressed_bytes or xml > limits.max_xml_bytes:
        raise ZipBombError(
            f"{name!r} would expand to {total / MIB:.0f} MB ({xml / MIB:.0f} MB of XML), more "
            f"than the {limits.max_uncompressed_bytes // MIB} MB ({limits.max_xml_bytes // MIB}"
            f" MB of XML) a document may: split it and upload the parts"
        )


_OVERRIDE = re.compile(
    rb'ContentType="application/vnd\.(?:openxmlformats-officedocument\.|)'
    rb'([a-z0-9.-]+)\+xml"',
    re.IGNORECASE,
)


def _main_kind(name: str, package: zipfile.ZipFile, expected: OoxmlKind) -> OoxmlKind:
    """The kind the package's content types declare for its main part."""
    try:
        types = package.read("[Content_Types].xml")
    except KeyError as exc:
        raise _corrupt(name, expected, "it has no [Content_Types].xml part") from exc
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise _corrupt(name, expected, f"its content types are damaged: {exc}") from exc
    if b"<!DOCTYPE" in types or b"<!ENTITY" in types:
        raise _unsafe(name, "[Content_Types].xml")
    for match in _OVERRIDE.finditer(types):
        kind = _MAIN_TYPES.get(match.group(1).decode("ascii").lower())
        if kind is not None:
            return kind
    raise _corrupt(name, expected, "no main document part is declared")


_MAX_PROLOG = 1 * MIB
_STEP = 1 * MIB


def _check_part(name: str, data: bytes, info: zipfile.ZipInfo) -> None:
    """Inflate one part in bounded steps: its real size must be its declared size, and an
    XML part's prolog (before its root element) must hold no DTD."""
    if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise CorruptFileError(
            f"{name!r} has a part ({info.filename}) stored in a way Office never writes (zip "
            f"encryption or method {info.compress_type}): save it again from its application"
        )
    header = info.header_offset
    if data[header : header + 4] != b"PK\x03\x04":
        raise _damaged(name, info, "no local header where the directory points")
    start = (
        header
        + 30
        + int.from_bytes(data[header + 26 : header + 28], "little")
        + int.from_bytes(data[header + 28 : header + 30], "little")
    )
    raw = data[start : start + info.compress_size]
    xml = info.filename.lower().endswith((".xml", ".rels", ".vml"))
    if info.compress_type == zipfile.ZIP_STORED:
        size, head = len(raw), raw[:_MAX_PROLOG]
    else:
        size, head = _inflated(name, info, raw, keep=_MAX_PROLOG if xml else 0)
    if size != info.file_size:
        raise _lie(name, info, size)
    if xml and size:
        verdict = _prolog_verdict(_ascii_view(head))
        if verdict == "dtd" or (verdict == "more" and len(head) >= _MAX_PROLOG):
            raise _unsafe(name, info.filename)


def _inflated(name: str, info: zipfile.ZipInfo, raw: bytes, *, keep: int) -> tuple[int, bytes]:
    """The real inflated size of a deflated part (stopping past its declared size) and its
    first `keep` bytes; never more than one step of output in memory."""
    inflater = zlib.decompressobj(-15)
    size = 0
    head = b""
    pending = raw
    try:
        while pending and not inflater.eof:
            out = inflater.decompress(pending, _STEP)
            pending = inflater.unconsumed_tail
            size += len(out)
            if len(head) < keep:
                head += out[: keep - len(head)]
            if size > info.file_size:
                raise _lie(name, info, size)
    except zlib.error as exc:
        raise _damaged(name, info, str(exc)) from exc
    return size, head


def _lie(name: str, info: zipfile.ZipInfo, size: int) -> ZipBombError | CorruptFileError:
    if size > info.file_size:
        return ZipBombError(
            f"{name!r} has a part ({info.filename}) that inflates to more than the "
            f"{info.file_size} bytes it declares, as zip bombs do: it was not opened; if the "
            f"file is genuine, save it again and upload that"
        )
    return _damaged(name, info, f"{size} bytes where {info.file_size} are declared")


def _damaged(name: str, info: zipfile.ZipInfo, why: str) -> CorruptFileError:
    return CorruptFileError(
        f"{name!r} has a damaged part ({info.filename}: {why}): open it in its application, "
        f"save it again and upload that"
    )


def _ascii_view(data: bytes) -> str:
    """The bytes as text good enough to find markup: UTF-16 parts decoded, others latin-1."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data[: len(data) // 2 * 2].decode("utf-16", errors="replace")
    return data.decode("latin-1")


_SKIPPABLE = re.compile(r"\ufeff?(?:\s+|<\?.*?\?>|<!--.*?-->)*", re.DOTALL)


def _prolog_verdict(text: str) -> Literal["dtd", "root", "more"]:
    """'dtd' when a DOCTYPE comes before the root element, 'root' when the root comes first,
    'more' when the prolog goes on past what has been read."""
    end = _SKIPPABLE.match(text)
    rest = text[end.end() if end else 0 :]
    if rest.startswith("<!DOCTYPE") or rest.startswith("<!ENTITY"):
        return "dtd"
    if rest.startswith("<") and len(rest) > 1 and rest[1] not in "?!":
        return "root"
    if rest and not rest.startswith("<"):
        return "root"  # text before the root: not well-formed, the parser will say so
    return "more"


def _macros(name: str, kind: OoxmlKind) -> MacroFileError:
    return MacroFileError(
        f"{name!r} contains macros (a VBA project), which docchat does not accept: save it as "
        f"{_SAVE_AS[kind]} (the application drops the macros) and upload that"
    )


def _corrupt(name: str, kind: OoxmlKind, why: str) -> CorruptFileError:
    return CorruptFileError(
        f"{name!r} is not a readable {_SAVE_AS[kind]} file ({why}): open it in its "
        f"application, save it again as {_SAVE_AS[kind]} and upload that"
    )


def _unsafe(name: str, part: str) -> UnsafeXmlError:
    return UnsafeXmlError(
        f"{name!r} has an XML part ({part}) that declares a DTD or entities, which Office "
        f"never writes and entity-expansion attacks do: it was not read; if the file is "
        f"genuine, save it again from its application and upload that"
    )


@contextmanager
def read_by_library(name: str, app: str, suffix: str) -> Iterator[None]:
    """Whatever a library raises while reading a file that passed the checks above means the
    file is damaged (fuzzing generated .docx/.pptx/.xlsx files 450 times raised lxml's
    XMLSyntaxError, expat's ExpatError and ParseError, KeyError, TypeError, OSError...), so it
    becomes a CorruptFileError naming what the library said. MemoryError is not the file's
    fault here: it goes on to the process that caps memory."""
    try:
        yield
    except (ConversionError, MemoryError):
        raise
    except Exception as exc:
        said = " ".join(str(exc).split())[:200]
        raise CorruptFileError(
            f"{name!r} could not be read ({type(exc).__name__}: {said}): open it in {app}, save "
            f"it again as {suffix} and upload that"
        ) from exc
