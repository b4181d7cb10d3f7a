"""Markdown and plain text read into blocks and locations, and text bytes decoded.

No library: ATX/setext headings, fenced code kept whole, pipe tables re-written in the table
format (specs/table-text.md), wrapped paragraph lines joined; plain text keeps its lines (it
lays out tables and code with spaces) and is cut at form feeds or by size.
"""

from __future__ import annotations

import re
from typing import Literal

from docchat.errors import FileTooLargeError
from docchat.ingest.formats.blocks import MAX_LOCATION_CHARS, Block, Heading, Para, Table, clean
from docchat.ingest.formats.safety import Limits, check_size

_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_LIST = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$")
_RULE = re.compile(r"^ {0,3}([-*_])(\s*\1){2,}\s*$")
_DELIMITER = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")


def blocks_from_markdown(text: str) -> list[Block]:
    """Markdown read into blocks: ATX and setext headings, fenced code kept whole (a `#` line
    in it is no heading), pipe tables re-written in the table format, wrapped paragraph lines
    joined into one line each, list items one a line."""
    lines = text.splitlines()
    blocks: list[Block] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            blocks.append(Para(clean(" ".join(para))))
            para.clear()

    i = 0
    in_item = False  # the last block is a list item that an indented line may continue
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            flush()
            end = next((j for j in range(i + 1, len(lines)) if _FENCE.match(lines[j])), len(lines))
            blocks.append(Para("\n".join(lines[i : end + 1])))
            i = end + 1
            continue
        if (
            "|" in line
            and i + 1 < len(lines)
            and _DELIMITER.match(lines[i + 1])
            and "-" in lines[i + 1]
        ):
            flush()
            end = i + 2
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            rows = [_pipe_cells(x) for x in [lines[i], *lines[i + 2 : end]]]
            blocks.append(Table(rows=rows, header_rows=1))
            i = end
            continue
        heading = _ATX.match(line)
        setext = _SETEXT.match(line) if len(para) == 1 else None
        item = _LIST.match(line)
        if heading:
            flush()
            blocks.append(Heading(len(heading.group(1)), clean(heading.group(2))))
        elif setext:
            blocks.append(Heading(1 if setext.group(1)[0] == "=" else 2, clean(para.pop())))
        elif not line.strip() or _RULE.match(line):
            flush()
        elif item:
            flush()
            indent, marker, rest = item.groups()
            bullet = "-" if marker in "-*+" else marker
            blocks.append(Para(f"{' ' * len(indent)}{bullet} {clean(rest)}"))
        elif not para and in_item and isinstance(last := blocks[-1], Para) and line[:1] in " \t":
            blocks[-1] = Para(f"{last.text} {clean(line)}")  # the item goes on
        else:
            para.append(line)
        in_item = bool(item) or (in_item and not para and bool(line.strip()))
        i += 1
    flush()
    return blocks


def _pipe_cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


TextKind = Literal["page", "section"]


def text_pages(
    text: str, *, max_chars: int = MAX_LOCATION_CHARS
) -> list[tuple[TextKind, str, str]]:
    """Plain text cut into (kind, label, text): one page per form feed when it has them, else
    parts of about `max_chars` (at a blank line, else at a line end by 1.25 times it),
    labelled by their line numbers. Lines are
    kept as they are (plain text lays out tables and code with spaces)."""
    if "\f" in text:
        pages = text.split("\f")
        return [("page", f"Page {n}", p.strip("\n")) for n, p in enumerate(pages, 1) if p.strip()]
    parts: list[tuple[TextKind, str, str]] = []
    lines = text.splitlines()
    start = 0
    size = 0
    for n, line in enumerate(lines):
        size += len(line) + 1
        at_break = not line.strip() or n == len(lines) - 1
        if (size >= max_chars and at_break) or size >= max_chars * 5 // 4 or n == len(lines) - 1:
            body = "\n".join(lines[start : n + 1]).strip("\n")
            if body.strip():
                parts.append(("section", f"Lines {start + 1}-{n + 1}", body))
            start, size = n + 1, 0
    return parts


def decoded(name: str, data: bytes, limits: Limits, *, markup: bool = False) -> str:
    """Text bytes as str: a BOM's encoding, else a markup charset declaration, else UTF-8,
    else Windows-1252 (which nearly every byte string decodes as)."""
    check_size(name, data, limits)
    if len(data) > limits.max_text_chars:
        raise FileTooLargeError(f"{name!r} is too long to read: split it and upload the parts")
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", errors="replace")
    declared = re.search(rb"""charset=["']?([A-Za-z0-9_.:-]+)""", data[:4096]) if markup else None
    encodings = [declared.group(1).decode("ascii")] if declared else []
    for encoding in [*encodings, "utf-8", "cp1252"]:
        try:
            return data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            continue
    return data.decode("latin-1")
