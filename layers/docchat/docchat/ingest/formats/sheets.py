""".xlsx -> one location per sheet, or per range of rows of a long sheet (openpyxl).

Each worksheet's used range (the smallest rectangle holding every non-empty cell, whatever
the sheet's declared dimension says) is one table: its first non-empty row is the header row,
empty rows are left out, each cell is its value as printed (cached formula results; numbers in
their number format: "12.5%", "$ 1,234.00", "(1,234)"; dates ISO). A merged range's value is
in its first cell and the rest are empty, as the table format wants. A sheet whose table is
longer than a location is cut between rows, its header row repeated, and one whose rows are
too wide for a location is first cut between columns into bands, each its own table; each
location's label names the sheet and its cell range ("Sheet 'Revenue' A41:F80"). Chartsheets
hold no cells and are left out; so are empty sheets.

Read-only mode streams each sheet's XML (memory stays flat) and skips what it cannot stream:
merged-cell records, comments, formula text (only cached values).
"""

from __future__ import annotations

import datetime as dt
import io
import re
import warnings
import zipfile
from functools import lru_cache
from typing import Any

import openpyxl
from openpyxl.utils import get_column_letter

from docchat.errors import FileTooLargeError
from docchat.ingest.formats.blocks import MAX_LOCATION_CHARS, Table, table_lines
from docchat.ingest.formats.safety import MIB, Limits

Sheet = tuple[str, str, str]  # label, markdown, cell range


def sheets_from_xlsx(
    name: str, data: bytes, limits: Limits, *, max_chars: int = MAX_LOCATION_CHARS
) -> list[Sheet]:
    """Each non-empty worksheet as one or more (label, markdown, range) locations."""
    _check_sheet_sizes(name, data, limits)
    with warnings.catch_warnings():  # "Unknown extension is not supported": harmless
        warnings.simplefilter("ignore", UserWarning)
        book = openpyxl.load_workbook(
            io.BytesIO(data), read_only=True, data_only=True, keep_links=False
        )
    budget = [limits.max_sheet_cells]
    out: list[Sheet] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for sheet in book.worksheets:
                cells = _filled_cells(name, sheet, budget)
                if cells:
                    hidden = " (hidden)" if sheet.sheet_state != "visible" else ""
                    out.extend(
                        _locations(
                            name,
                            sheet.title,
                            hidden,
                            cells,
                            max_chars=max_chars,
                            max_cells=limits.max_sheet_cells,
                        )
                    )
    finally:
        book.close()
    return out


def _check_sheet_sizes(name: str, data: bytes, limits: Limits) -> None:
    """Refuse at once a workbook with a worksheet larger than a conversion reads (the zip's
    directory says how large each part is; safety.py proved the sizes true)."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        for info in package.infolist():
            part = info.filename
            if not (part.startswith("xl/worksheets/") and part.endswith(".xml")):
                continue
            if info.file_size > limits.max_sheet_xml_bytes:
                raise FileTooLargeError(
                    f"{name!r} has a worksheet of {info.file_size / MIB:.0f} MB "
                    f"({part.rsplit('/', 1)[-1]}), more than the "
                    f"{limits.max_sheet_xml_bytes // MIB} MB a sheet may have: split it into "
                    "smaller sheets or workbooks, or delete unused rows, and upload it again"
                )


def _filled_cells(name: str, sheet: Any, budget: list[int]) -> dict[tuple[int, int], str]:
    """(row, column) -> printed text of every non-empty cell; every cell the reader walks
    (the empty ones between filled ones too) counts against the workbook's budget."""
    sheet.reset_dimensions()  # a declared A1:XFD1048576 must not make the reader pad to it
    cells: dict[tuple[int, int], str] = {}
    for r, row in enumerate(sheet.iter_rows(), 1):
        budget[0] -= len(row) + 1
        if budget[0] < 0:
            raise _too_many_cells(name, sheet.title)
        for c, cell in enumerate(row, 1):
            value = cell.value
            if value is None:
                continue
            kind = type(value)  # the number format only matters to numbers: look it up for them
            if kind is str:
                text = value.strip()
            elif kind is int or kind is float:
                text = cell_text(value, _number_format(cell))
            else:
                text = cell_text(value, None)
            if text:
                cells[(r, c)] = text
    return cells


def _number_format(cell: Any) -> str | None:
    """The cell's number format; None (General) when it names a style or format the workbook
    does not define: writers other than Excel leave the styles part out and still write s="1"."""
    try:
        return str(cell.number_format)
    except IndexError:
        return None


def _too_many_cells(name: str, sheet: str) -> FileTooLargeError:
    return FileTooLargeError(
        f"{name!r} has more cells than a workbook may (sheet {sheet!r} reached the limit): "
        f"split the workbook, or delete unused rows and columns (a stray value far away makes "
        f"the used range huge), and upload it again"
    )


def _locations(
    name: str,
    title: str,
    hidden: str,
    cells: dict[tuple[int, int], str],
    *,
    max_chars: int,
    max_cells: int,
) -> list[Sheet]:
    rows = sorted({r for r, _ in cells})
    first_col = min(c for _, c in cells)
    last_col = max(c for _, c in cells)
    if len(rows) * (last_col - first_col + 1) > max_cells:  # the grid the used range spans
        raise _too_many_cells(name, title)
    grid = [[cells.get((r, c), "") for c in range(first_col, last_col + 1)] for r in rows]
    out: list[Sheet] = []
    for low, high in _column_bands(grid, max_chars=max_chars):
        kept = [i for i, row in enumerate(grid) if any(row[low:high])]
        if not kept:  # columns empty from top to bottom
            continue
        lines = table_lines(Table(rows=[grid[i][low:high] for i in kept], header_rows=1))
        band = (first_col + low, first_col + high - 1)
        heading = "" if out else f"# {title}"
        out += _row_ranges(
            title, hidden, heading, lines, [rows[i] for i in kept], band, max_chars=max_chars
        )
    return out


def _column_bands(grid: list[list[str]], *, max_chars: int) -> list[tuple[int, int]]:
    """[low, high) column ranges of the grid, each one table. A sheet whose header, delimiter
    and widest row fit in a location is one band; a wider one (16,384 columns made one row a
    450,000-character line, which the chunker keeps whole under its header) is cut between
    columns into bands whose header and widest row take at most a quarter of a location, so
    that a location holds several rows and a chunk a row whole."""
    header, body = grid[0], grid[1:]
    widths = [
        len(head) + 9 + max((len(row[c]) for row in body), default=0) + 3
        for c, head in enumerate(header)
    ]  # header cell, "--- | ", widest body cell, each with its " | "
    if sum(widths) <= max_chars:
        return [(0, len(widths))]
    bands: list[tuple[int, int]] = []
    low, size = 0, 0
    for c, width in enumerate(widths):
        if c > low and size + width > max_chars // 4:
            bands.append((low, c))
            low, size = c, 0
        size += width
    bands.append((low, len(widths)))
    return bands


def _row_ranges(
    title: str,
    hidden: str,
    heading: str,
    lines: list[str],
    rows: list[int],
    band: tuple[int, int],
    *,
    max_chars: int,
) -> list[Sheet]:
    """One band's table lines cut between rows into locations, its header repeated."""
    head, body = lines[:2], lines[2:]  # body line i is sheet row rows[i + 1]
    first_col, last_col = band
    out: list[Sheet] = []
    start = 0
    size = len(heading) + sum(len(x) + 1 for x in head)
    for i, line in enumerate(body):
        if i > start and size + len(line) + 1 > max_chars:
            out.append(
                _piece(title, hidden, heading, head, body, rows, start, i, first_col, last_col)
            )
            start, heading = i, ""
            size = sum(len(x) + 1 for x in head)
        size += len(line) + 1
    out.append(
        _piece(title, hidden, heading, head, body, rows, start, len(body), first_col, last_col)
    )
    return out


def _piece(
    title: str,
    hidden: str,
    heading: str,
    head: list[str],
    body: list[str],
    rows: list[int],
    start: int,
    end: int,
    first_col: int,
    last_col: int,
) -> Sheet:
    """Body lines start..end with the header lines; the first piece starts at the header row."""
    top = rows[0] if start == 0 else rows[start + 1]
    bottom = rows[end] if end else rows[0]
    cell_range = f"{get_column_letter(first_col)}{top}:{get_column_letter(last_col)}{bottom}"
    text = "\n".join(([heading] if heading else []) + head + body[start:end])
    return f"Sheet '{title}' {cell_range}{hidden}", text, cell_range


# --- a cell's value as printed -----------------------------------------------------------------

_TOKEN = re.compile(
    r'"(?P<quoted>[^"]*)"|\\(?P<escaped>.)|\[\$(?P<currency>[^\]-]*)[^\]]*\]|\[[^\]]*\]'
    r"|_(?P<space>.)|\*.|(?P<number>[0#?][0#?,.]*(?:[Ee][+-][0#]+)?|\.[0#]+)|(?P<other>.)",
    re.DOTALL,
)


def cell_text(value: Any, number_format: str | None) -> str:
    """A cell value as a reader sees it printed (dates in ISO form, whatever their format)."""
    kind = type(value)  # exact types first: this runs once per cell
    if kind is str:
        return str(value)
    if kind is int or kind is float:
        if number_format == "General" or not number_format:
            return _general(value)
        return _formatted(value, number_format)
    if kind is bool:
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        if value.time() == dt.time():
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, (dt.date, dt.time, dt.timedelta)):
        return str(value)
    return str(value)


def _general(value: float) -> str:
    if type(value) is int:
        return str(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.11g}"


def _formatted(value: float, number_format: str) -> str:
    """The number in its format's first section (or second, for a negative number that has
    one); formats this does not know (fractions, several number slots) print as General."""
    plan = _plan(number_format)
    if plan is None:
        return _general(value)
    sections, percent = plan
    negative = value < 0 and len(sections) > 1
    pieces = sections[1] if negative else sections[0]
    magnitude = abs(value) if negative else value
    if percent[1 if negative else 0]:
        magnitude *= 100
    text = "".join(_number(magnitude, p[1]) if p[0] else p[1] for p in pieces)
    return " ".join(text.split())


@lru_cache(maxsize=512)
def _plan(number_format: str) -> tuple[list[list[tuple[bool, str]]], list[bool]] | None:
    """A number format read once: per section, its pieces (is the number slot, text) and
    whether it shows a percentage. None for General and for formats printed as General."""
    if number_format in ("General", "@"):
        return None
    sections: list[list[tuple[bool, str]]] = []
    percent: list[bool] = []
    for section in _sections(number_format)[:2]:
        tokens = list(_TOKEN.finditer(section))
        if sum(1 for t in tokens if t.group("number")) != 1:
            return None
        pieces = []
        for token in tokens:
            if token.group("number"):
                pieces.append((True, token.group("number")))
            else:
                text = next(
                    (
                        g
                        for g in (
                            token.group("quoted"),
                            token.group("escaped"),
                            token.group("currency"),
                            token.group("other"),
                        )
                        if g is not None
                    ),
                    " " if token.group("space") is not None else "",
                )
                pieces.append((False, text))
        sections.append(pieces)
        percent.append(any(t.group("other") == "%" for t in tokens))
    return (sections, percent) if sections else None


def _sections(number_format: str) -> list[str]:
    return [s for s in re.split(r';(?=(?:[^"]*"[^"]*")*[^"]*$)', number_format)]


def _number(value: float, slot: str) -> str:
    mantissa, _, exponent = slot.upper().partition("E")
    decimals = sum(ch in "0#?" for ch in mantissa.split(".", 1)[1]) if "." in mantissa else 0
    if exponent:
        return f"{value:.{decimals}E}"
    grouping = "," if "," in mantissa.split(".")[0].strip(",") else ""
    return f"{value:{grouping}.{decimals}f}"
