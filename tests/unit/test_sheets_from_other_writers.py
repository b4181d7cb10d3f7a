"""Workbooks as writers other than Excel make them (issue 44): strings kept inline in the sheet
with no shared-strings part, no styles part, sheets as wide as Excel allows."""

from __future__ import annotations

from docchat.ingest.formats import convert
from docchat.ingest.formats.blocks import MAX_LOCATION_CHARS
from tests import officegen


def _inline(ref: str, text: str, style: str = "") -> str:
    return f'<c r="{ref}"{style} t="inlineStr"><is><t>{text}</t></is></c>'


def test_xlsx_inline_strings_without_a_shared_strings_part_are_read() -> None:
    # Given a workbook whose text is all inline (plain, in rich-text runs, space kept) and
    # which has no shared-strings part
    rows = (
        '<row r="1">'
        + _inline("A1", "Region")
        + '<c r="B1" t="inlineStr"><is><r><rPr><b/></rPr><t>Uni</t></r><r><t>ts</t></r></is></c>'
        + "</row>"
        '<row r="2">' + _inline("A2", "North") + '<c r="B2"><v>12</v></c></row>'
        '<row r="3"><c r="A3" t="inlineStr"><is><t xml:space="preserve"> South </t></is></c>'
        '<c r="B3"><v>7.5</v></c></row>'
    )
    data = officegen.hand_written_xlsx(rows)

    # When it is converted
    document = convert("inline.xlsx", data)

    # Then every inline string is in its table
    assert [loc.label for loc in document.pages] == ["Sheet 'Data' A1:B3"]
    assert document.pages[0].markdown == (
        "# Data\n| Region | Units |\n| --- | --- |\n| North | 12 |\n| South | 7.5 |"
    )


def test_xlsx_a_cell_style_the_workbook_does_not_define_prints_as_general() -> None:
    # Given cells naming styles 1 and 2 in a workbook without a styles part (openpyxl's
    # read-only cell raised IndexError looking up a number's format: corrupt_file)
    rows = (
        '<row r="1">'
        + _inline("A1", "Item", ' s="1"')
        + _inline("B1", "Price", ' s="1"')
        + "</row>"
        '<row r="2">' + _inline("A2", "Tea", ' s="1"') + '<c r="B2" s="2"><v>4.25</v></c></row>'
    )

    # When it is converted
    document = convert("styled.xlsx", officegen.hand_written_xlsx(rows))

    # Then its numbers print as General
    assert document.pages[0].markdown == "# Data\n| Item | Price |\n| --- | --- |\n| Tea | 4.25 |"


def test_xlsx_a_sheet_as_wide_as_excel_allows_is_cut_into_column_bands() -> None:
    # Given a sheet of 16,384 columns (A to XFD): one row was a 65,000-character line, and each
    # location one row under the whole header
    data = officegen.wide_xlsx(columns=16_384, rows=3)

    # When it is converted
    document = convert("wide.xlsx", data)

    # Then every location is a table of a band of columns within a location's size, the bands
    # follow each other from A to XFD, and each cell is in exactly one of them
    assert all(len(loc.markdown) <= MAX_LOCATION_CHARS for loc in document.pages)
    ranges = [loc.label.removeprefix("Sheet 'Wide' ") for loc in document.pages]
    assert ranges[0].startswith("A1:") and ranges[-1].endswith(":XFD3")
    assert document.pages[0].markdown.startswith("# Wide\n| Field 1 | Field 2 |")
    cells = [
        cell
        for loc in document.pages
        for line in loc.markdown.split("\n")[1 if loc.markdown.startswith("#") else 0 :]
        if not line.startswith("| ---")
        for cell in line[2:-2].split(" | ")
    ]
    assert sorted(cells) == sorted(
        [f"Field {c}" for c in range(1, 16_385)]
        + [str(r * c) for r in (2, 3) for c in range(1, 16_385)],
    )
