"""What the `docchat` command shows of documents: names that cannot pass for other names, and
the documents' status at any terminal width."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from docchat.models import DocStatus, DocumentRecord

# Unicode's Bidi_Control characters (ALM, LRM, RLM, the embeddings and overrides, the isolates),
# with which "report\u202egnp.pdf" reads as "reportfdp.png"; the characters that take no room
# (zero width space, non-joiner and joiner, word joiner and the invisible operators, the
# Mongolian vowel separator, the zero width no-break space), with which "report.pdf" and
# "rep\u200bort.pdf" look the same; and the C0 and C1 controls, which a terminal obeys (an escape
# sequence, a line break in a name). The page shows them the same way (docchat/web/names.js).
_CONTROLS = [
    *range(0x20),
    *range(0x7F, 0xA0),
    0x061C,
    0x180E,
    *range(0x200B, 0x2010),
    *range(0x202A, 0x202F),
    *range(0x2060, 0x2065),
    *range(0x2066, 0x206A),
    0xFEFF,
]
_ESCAPES = {code: f"<U+{code:04X}>" for code in _CONTROLS}
_INTERRUPTED = "interrupted: `docchat serve` resumes it when it starts"
# The fewest columns a title, a file name or a reason is worth wrapping into: a terminal that
# cannot give them as many shows one block per document instead of a table.
_READABLE = 24


def shown(text: str) -> str:
    """`text` as a terminal may print it: each bidirectional control or control character as a
    visible <U+XXXX>. Escaped, not removed: a stripped name would look harmless and differ from
    the file's real name without a sign; the escape says what the name holds."""
    return text.translate(_ESCAPES)


def print_status(
    console: Console,
    documents: Sequence[DocumentRecord],
    *,
    title: str,
    interrupted: Collection[str],
    working: Mapping[str, str] | None = None,
) -> None:
    """The documents as a table when it fits the terminal (or the output is not one), else as
    one block per document; ids are never cut, as `rm`, `text` and `--doc` take them. `working`
    is the progress of the documents a process is ingesting now, by id."""
    notes = _Notes(interrupted, working or {})
    table = _status_table(documents, title=title, notes=notes)
    narrowest = _status_table(documents, title=title, notes=notes, most=_READABLE)
    if console.is_terminal and _width(console, narrowest) > console.width:
        console.print(Text(title))
        for document in documents:
            console.print()
            console.print(_status_block(document, notes=notes))
        console.print()
        return
    if console.is_terminal:
        console.print(table)
    else:  # piped, the table is as wide as its contents (Rich would fold it into 80 columns)
        Console(file=console.file, highlight=False, width=_width(console, table)).print(table)


def _width(console: Console, table: Table) -> int:
    """How wide `table` is with nothing wrapped."""
    return Measurement.get(console, console.options.update_width(10_000), table).maximum


def _pages(document: DocumentRecord) -> str:
    if document.pages_ocr:
        return f"{document.pages} ({document.pages_ocr} OCR)"
    return str(document.pages)


class _Notes:
    """What the reason column says beside a document's own error."""

    def __init__(self, interrupted: Collection[str], working: Mapping[str, str]) -> None:
        self.interrupted = interrupted
        self.working = working

    def reason(self, document: DocumentRecord) -> str:
        if document.doc_id in self.working:
            return self.working[document.doc_id]
        if document.doc_id in self.interrupted:
            return _INTERRUPTED
        return shown(document.error or "") if document.status == DocStatus.FAILED else ""


def _status_table(
    documents: Sequence[DocumentRecord],
    *,
    title: str,
    notes: _Notes,
    most: int | None = None,
) -> Table:
    """The table; `most` caps the width of the columns that wrap (title, file, reason)."""
    table = Table(title=title)
    widest = max((len(d.doc_id) for d in documents), default=2)
    table.add_column("id", no_wrap=True, min_width=widest)
    for name in ("title", "file", "status", "pages", "chunks", "reason"):
        wraps = name in ("title", "file", "reason")
        # A name with no spaces folds rather than ends in "…"
        table.add_column(name, overflow="fold", max_width=most if wraps else None)
    for d in documents:
        # Text, not markup: "Q3 [draft] résumé.pdf" and "[Errno 13]" are shown as they are.
        table.add_row(
            d.doc_id,
            Text(shown(d.title)),
            Text(shown(d.file_name)),
            d.status.value,
            _pages(d),
            str(d.chunks),
            Text(notes.reason(d)),
        )
    return table


def _status_block(document: DocumentRecord, *, notes: _Notes) -> RenderableType:
    """One document: its id on a line of its own, then its facts, each wrapped beside its label."""
    facts = Table.grid(padding=(0, 2, 0, 0))
    facts.add_column(no_wrap=True, min_width=len("status"))  # the same in every block
    facts.add_column(overflow="fold")  # a name with no spaces folds rather than ends in "…"
    pages = f"{document.pages} {'page' if document.pages == 1 else 'pages'}"
    if document.pages_ocr:
        pages += f" ({document.pages_ocr} by OCR)"
    chunks = f"{document.chunks} {'chunk' if document.chunks == 1 else 'chunks'}"
    facts.add_row("status", f"{document.status.value} · {pages} · {chunks}")
    facts.add_row("title", Text(shown(document.title)))
    facts.add_row("file", Text(shown(document.file_name)))
    if reason := notes.reason(document):
        facts.add_row("reason", Text(reason))
    heading = Text(document.doc_id, style="bold", no_wrap=True, overflow="ignore")
    return Group(heading, Padding(facts, (0, 0, 0, 2)))
