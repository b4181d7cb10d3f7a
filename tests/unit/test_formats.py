"""Tests of the converters, the table format and the refusals: tiny files generated with the
libraries (officegen.py, officegen.py) and the real files of /work/shared/data/office."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser

from docchat.errors import (
    CorruptFileError,
    EmptyDocumentError,
    EncryptedFileError,
    FileTooLargeError,
    MacroFileError,
    UnsafeXmlError,
    UnsupportedFormatError,
    ZipBombError,
)
from docchat.ingest.formats import convert, html
from docchat.ingest.formats.blocks import Heading, Para, Table, sections_from_blocks, table_lines
from docchat.ingest.formats.safety import Limits
from docchat.ingest.formats.sheets import cell_text
from docchat.ingest.formats.text import blocks_from_markdown
from tests import officegen

DATA = Path("/work/shared/data/office")
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="/work/shared/data/office is absent")


def real(name: str) -> bytes:
    return (DATA / name).read_bytes()


def text_of(name: str, data: bytes) -> str:
    return "\n".join(loc.markdown for loc in convert(name, data).pages)


# --- the formats ---------------------------------------------------------------------------------


def test_docx_headings_list_and_table_become_path_list_and_pipe_table() -> None:
    document = convert("report.docx", officegen.docx_file())

    assert document.title == "Generated report"
    assert [(loc.kind, loc.number, loc.label) for loc in document.pages] == [
        ("section", 1, "Section: Chapter 1"),
        ("section", 2, "Section: Chapter 1 > Scope 1"),
    ]
    assert document.pages[0].markdown == "# Chapter 1\nOpening paragraph of chapter 1."
    assert document.pages[1].markdown.split("\n")[0] == "## Scope 1"
    assert document.pages[1].markdown.endswith(
        "- First bullet\n- Second bullet\n1. Step one\n2. Step two\n"
        "| Region | Revenue | Growth |\n| --- | --- | --- |\n"
        "| Region 1 | 1,000 | 1% |\n| Region 2 | 2,000 | 2% |"
    )


def test_docx_repeated_header_rows_all_go_above_the_delimiter() -> None:
    import docx
    from docx.oxml import OxmlElement

    document = docx.Document()
    table = document.add_table(rows=3, cols=2)
    for r, row in enumerate([["Year", "Sales"], ["", "USD"], ["2024", "10"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    for row in table.rows[:2]:
        row._tr.get_or_add_trPr().append(OxmlElement("w:tblHeader"))
    out = io.BytesIO()
    document.save(out)

    assert text_of("t.docx", out.getvalue()) == (
        "| Year | Sales |\n|  | USD |\n| --- | --- |\n| 2024 | 10 |"
    )


@needs_data
def test_docx_merged_cells_keep_their_text_in_the_first_cell_only() -> None:
    text = text_of("m.docx", real("python-docx/tbl-cell-access.docx"))

    assert "| 1 | 2 | 3 |\n| --- | --- | --- |\n| 4 |  | 6 |\n| 7 | 8 | 9 |" in text  # across
    assert "| 4 | 5 | 6 |\n| 7 |  | 9 |" in text  # down
    assert "| 4 |  | 6 |\n|  |  | 9 |" in text  # both


@needs_data
def test_docx_keeps_footnotes_text_boxes_and_strict_documents() -> None:
    assert text_of("f.docx", real("mammoth/footnotes.docx")) == (
        "Ouch[1].[2]\n1. A tachyon walks into a bar.\n2. Fin."
    )
    assert text_of("t.docx", real("mammoth/text-box.docx")) == "Datum plane"
    assert text_of("s.docx", real("mammoth/strict-format.docx")) == "Test"


@needs_data
def test_docx_sections_follow_the_heading_path_of_a_real_paper() -> None:
    document = convert("test.docx", real("markitdown/test.docx"))

    assert (
        document.title == "AutoGen: Enabling Next-Gen LLM Applications via Multi-Agent Conversation"
    )
    assert [loc.label for loc in document.pages] == [
        "Section: AutoGen: Enabling Next-Gen LLM Applications via Multi-Agent Conversation",
        "Section: Abstract",
        "Section: Introduction",
        "Section: Introduction > d666f1f7-46cb-42bd-9a39-9a39cf2a509f",
    ]


@needs_data
def test_docx_never_reads_an_external_link_target(tmp_path: Path) -> None:
    secret = Path("/tmp/test_rlink.txt")
    secret.write_text("de658225-569e-4e3d-9ed2-cfb6abf927fc")

    text = text_of("rlink.docx", real("markitdown/rlink.docx"))

    assert "de658225" not in text and "ZGU2NTgy" not in text
    assert "Testing Linked Images" in text


def test_pptx_keeps_slide_titles_bullets_tables_and_notes() -> None:
    document = convert("deck.pptx", officegen.pptx_file())

    assert document.title == "Quarterly results 1"
    assert [(loc.kind, loc.number, loc.label) for loc in document.pages] == [
        ("slide", 1, "Slide 1: Quarterly results 1"),
        ("slide", 2, "Slide 2: Quarterly results 2"),
    ]
    assert document.pages[0].markdown == (
        "# Quarterly results 1\n- Revenue grew in quarter 1\n  - Mostly in the north\n"
        "| Quarter | Revenue | Cost |\n| --- | --- | --- |\n| Q1 | $ 100 | 80 |\n"
        "| Q2 | $ 120 | 90 |\nNotes:\nSay the numbers slowly 1"
    )


@needs_data
def test_pptx_real_notes_charts_and_alt_text() -> None:
    notes = convert("n.pptx", real("python-pptx/sld-notes.pptx"))
    deck = text_of("t.pptx", real("markitdown/test.pptx"))

    assert [loc.markdown for loc in notes.pages] == ["Notes:\nNotes", ""]
    assert "a3f6004b-6f4f-4ea8-bee3-3741f4dc385f\n|  | Series 1 |\n| --- | --- |" in deck
    assert "Image: This phrase of the caption is Human-written." in deck


def test_xlsx_sheet_becomes_a_table_under_its_name_with_values_as_printed() -> None:
    document = convert("book.xlsx", officegen.xlsx_file(rows=2, sheets=("Revenue", "Costs")))

    assert [(loc.kind, loc.label) for loc in document.pages] == [
        ("sheet", "Sheet 'Revenue' A1:E3"),
        ("sheet", "Sheet 'Costs' A1:E3"),
    ]
    assert document.pages[0].markdown == (
        "# Revenue\n| Region | Units | Revenue | Growth | Date |\n| --- | --- | --- | --- | --- |\n"
        "| Region 1 | 10 | $1,234.50 | 1.0% | 2024-01-01 |\n"
        "| Region 2 | 20 | $2,469.00 | 2.0% | 2024-01-01 |"
    )


def test_xlsx_long_sheet_is_cut_into_row_ranges_with_the_header_repeated() -> None:
    document = convert("long.xlsx", officegen.xlsx_file(rows=300))

    labels = [loc.label for loc in document.pages]
    assert labels[0].startswith("Sheet 'Revenue' A1:E") and len(labels) > 1
    first_end = int(labels[0].split(":E")[1])
    assert labels[1].startswith(f"Sheet 'Revenue' A{first_end + 1}:E")
    assert labels[-1].endswith(":E301")
    second = document.pages[1].markdown.split("\n")
    assert second[:2] == [
        "| Region | Units | Revenue | Growth | Date |",
        "| --- | --- | --- | --- | --- |",
    ]
    assert second[2].startswith(f"| Region {first_end} |")  # sheet row n holds Region n-1
    rows = [
        line
        for loc in document.pages
        for line in loc.markdown.split("\n")
        if line.startswith("| Region ") and "Units" not in line
    ]
    assert len(rows) == 300


def test_xlsx_a_stray_far_cell_that_spans_a_huge_grid_is_refused() -> None:
    import openpyxl

    book = openpyxl.Workbook()
    for r in range(1, 2001):
        book.active.cell(row=r, column=1, value=f"row {r}")
    book.active["ZZ1"] = "far"  # the used range is A1:ZZ2000: 2000 x 702 cells
    out = io.BytesIO()
    book.save(out)

    with pytest.raises(FileTooLargeError, match="stray value far away"):
        convert("stray.xlsx", out.getvalue(), Limits(max_sheet_cells=100_000))


@pytest.mark.parametrize(
    ("value", "number_format", "printed"),
    [
        (0.125, "0.0%", "12.5%"),
        (1234.5, '"$"#,##0.00', "$1,234.50"),
        (-1234.0, "#,##0;(#,##0)", "(1,234)"),
        (3.0, "General", "3"),
        (5, '0 "kr"', "5 kr"),
        (12.0, "[$€-407] #,##0.00", "€ 12.00"),
        (0.5, "# ?/?", "0.5"),
        (True, "General", "TRUE"),
    ],
)
def test_cell_text_prints_numbers_in_their_format(
    value: object, number_format: str, printed: str
) -> None:
    assert cell_text(value, number_format) == printed


def test_html_keeps_headings_lists_tables_and_drops_scripts_styles_and_chrome() -> None:
    document = convert("page.html", officegen.html_page(sections=1))

    assert document.title == "Team handbook"
    assert [loc.label for loc in document.pages] == ["Section: Part 1"]
    assert document.pages[0].markdown == (
        "# Team handbook\n## Part 1\nText of part 1 with bold words.\n- Alpha\n  - Alpha one\n"
        "- Beta\n1. First\n2. Second\n| Name | Role |\n| --- | --- |\n| Ann | Lead |\n| Both |  |"
    )


def test_html_comments_neither_show_nor_split_a_paragraph() -> None:
    page = (
        b"<html><body><main><h1>Notes</h1><p>Hello <!-- draft --> world, <b>bold</b><!--x-->ly."
        b"</p><ul><li>one<!-- y --> item</li></ul><table><tr><th>A<!-- z -->B</th></tr>"
        b"<tr><td>1</td></tr></table></main></body></html>"
    )

    text = text_of("c.html", page)

    assert text == "# Notes\nHello world, boldly.\n- one item\n| AB |\n| --- |\n| 1 |"


def test_html_chrome_is_a_whole_class_or_id_word_or_a_part_of_one() -> None:
    page = (
        b"<html><body><main><h1>Page</h1>"
        b'<div class="vector-dropdown">Menu text</div><div id="site_sidebar">Side text</div>'
        b'<span class="sr-only">Skip text</span><p class="canvas tocnumber">Kept one.</p>'
        b'<p class="foo-sr-only">Kept two.</p><p class="Navbox">Nav text</p></main></body></html>'
    )

    text = text_of("c.html", page)

    assert text == "# Page\nKept one.\nKept two."


def test_html_a_table_holding_a_table_is_layout_and_its_cells_are_read_as_blocks() -> None:
    page = (
        b"<html><body><main><h1>Layout</h1><table><tr><td><p>Left column text.</p></td><td>"
        b"<table><tr><th>Key</th><th>Value</th></tr><tr><td>a</td><td>1</td></tr></table>"
        b"</td></tr></table><table><tr><th>Plain</th></tr><tr><td>row</td></tr></table>"
        b"</main></body></html>"
    )

    text = text_of("l.html", page)

    assert text == (
        "# Layout\nLeft column text.\n| Key | Value |\n| --- | --- |\n| a | 1 |\n"
        "| Plain |\n| --- |\n| row |"
    )


@needs_data
def test_html_wikipedia_page_loses_its_chrome() -> None:
    text = text_of("w.html", real("markitdown/test_wikipedia.html"))

    for chrome in (
        "You are encouraged to create an account and log in",
        "154 languages",
        "move to sidebar",
        "Jump to content",
    ):
        assert chrome not in text
    assert "Microsoft was founded by Bill Gates" in text
    assert "\n## History\n### 1972–1985: Founding\n" in text  # noqa: RUF001 - the page's dash


def test_markdown_code_fences_hide_headings_and_tables_are_rewritten() -> None:
    source = (
        b"# Guide\nIntro line one\nintro line two.\n\n## Setup\n```\n# not a heading\n```\n"
        b"| a | b |\n|:-|-:|\n| 1 | x\\|y |\n- item\n  continued\n"
    )

    document = convert("guide.md", source)

    assert [loc.label for loc in document.pages] == ["Section: Guide", "Section: Setup"]
    assert document.pages[0].markdown == "# Guide\nIntro line one intro line two."
    assert document.pages[1].markdown == (
        "## Setup\n```\n# not a heading\n```\n| a | b |\n| --- | --- |\n| 1 | x\\|y |\n"
        "- item continued"
    )


def test_text_is_cut_at_form_feeds_or_by_size() -> None:
    paged = convert("notes.txt", b"first page\n\x0csecond page\n")
    long = convert("log.txt", ("a line of text\n" * 1000).encode())

    assert [(loc.kind, loc.label, loc.markdown) for loc in paged.pages] == [
        ("page", "Page 1", "first page"),
        ("page", "Page 2", "second page"),
    ]
    assert [loc.label for loc in long.pages][:2] == ["Lines 1-500", "Lines 501-1000"]


# --- the table format ----------------------------------------------------------------------------


def test_table_lines_pad_escape_and_join_a_currency_column() -> None:
    table = Table(rows=[["Item", "", "2024"], ["Sales", "$", "1,200"], ["a|b", "", "(3)"]])

    assert table_lines(table) == [
        "| Item | 2024 |",
        "| --- | --- |",
        "| Sales | $ 1,200 |",
        "| a\\|b | (3) |",
    ]


def test_a_long_table_splits_between_rows_with_its_header_repeated() -> None:
    rows = [["Year", "Value"]] + [[str(2000 + i), "x" * 40] for i in range(20)]
    blocks = [Heading(1, "Data"), Para("Above."), Table(rows=rows)]

    sections = sections_from_blocks(blocks, max_chars=400)

    assert len(sections) > 2
    for section in sections[1:]:
        assert section.lines[:2] == ["| Year | Value |", "| --- | --- |"]
        assert section.path == ["Data"] and section.part > 1
    body = [line for s in sections for line in s.lines if line.startswith("| 20")]
    assert body == [f"| {2000 + i} | {'x' * 40} |" for i in range(20)]


def test_a_heading_with_nothing_under_it_stays_with_the_next_section() -> None:
    blocks = blocks_from_markdown("# Title\n## One\ntext\n## Two\nmore\n")

    sections = sections_from_blocks(blocks)

    assert [(s.path, s.lines) for s in sections] == [
        (["Title", "One"], ["# Title", "## One", "text"]),
        (["Title", "Two"], ["## Two", "more"]),
    ]


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        officegen.laughs_docx,
        lambda: officegen.laughs_docx("quadratic"),
        lambda: officegen.laughs_docx("external"),
    ],
)
def test_docx_with_entity_declarations_is_refused_unexpanded(make) -> None:
    with pytest.raises(UnsafeXmlError, match="declares a DTD"):
        convert("lol.docx", make())


def test_pptx_and_xlsx_with_billion_laughs_are_refused() -> None:
    with pytest.raises(UnsafeXmlError):
        convert("lol.pptx", officegen.laughs_pptx())
    with pytest.raises(UnsafeXmlError):
        convert("lol.xlsx", officegen.laughs_xlsx())


def test_zip_bomb_is_refused_before_it_is_inflated() -> None:
    with pytest.raises(ZipBombError, match="would expand"):
        convert("bomb.docx", officegen.zip_bomb_docx(inflated_mib=300))


@pytest.mark.parametrize("crc_of_prefix", [False, True])
def test_a_part_inflating_past_its_declared_size_is_refused(crc_of_prefix: bool) -> None:
    with pytest.raises(ZipBombError, match="more than the 300 bytes it declares"):
        convert("liar.docx", officegen.lying_size_docx(crc_of_prefix=crc_of_prefix))


@needs_data
@pytest.mark.parametrize(
    "name",
    [
        "msoffcrypto-tool/example_password.docx",
        "msoffcrypto-tool/example_password.xlsx",
        "msoffcrypto-tool/ecma376standard_password.docx",
    ],
)
def test_encrypted_files_are_refused_as_encrypted(name: str) -> None:
    with pytest.raises(EncryptedFileError, match="save a copy without one"):
        convert(name, real(name))


@needs_data
@pytest.mark.parametrize("name", ["python-pptx/act-props.pptm", "openpyxl/vba-test.xlsm"])
def test_macro_files_are_refused(name: str) -> None:
    with pytest.raises(MacroFileError, match="contains macros"):
        convert(name, real(name))


def test_a_vba_project_under_a_docx_name_is_refused() -> None:
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(officegen.docx_file()), "r") as src,
        zipfile.ZipFile(out, "w") as dst,
    ):
        for info in src.infolist():
            dst.writestr(info, src.read(info))
        dst.writestr("word/vbaProject.bin", b"\x00" * 64)

    with pytest.raises(MacroFileError):
        convert("renamed.docx", out.getvalue())


@pytest.mark.parametrize(
    ("name", "data", "error", "words"),
    [
        ("empty.xlsx", b"", CorruptFileError, "it is empty"),
        ("noise.pptx", bytes(range(256)) * 4, CorruptFileError, "not a zip package"),
        ("doc.xlsx", officegen.docx_file(), CorruptFileError, "rename it to .docx"),
        ("old.xls", b"\xd0\xcf\x11\xe0", UnsupportedFormatError, "save it as .xlsx"),
        ("pic.png", b"\x89PNG", UnsupportedFormatError, "not a file type docchat reads"),
        ("bin.txt", b"a\x00b", UnsupportedFormatError, "NUL bytes"),
    ],
)
def test_files_that_are_not_what_they_claim_are_refused_with_a_reason(
    name: str, data: bytes, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        convert(name, data)


@needs_data
def test_real_corrupt_and_legacy_files_are_refused() -> None:
    with pytest.raises(CorruptFileError):
        convert("null_archive.xlsx", real("openpyxl/null_archive.xlsx"))
    with pytest.raises(CorruptFileError):
        convert("random.pptx", real("markitdown/random.bin"))
    with pytest.raises(UnsupportedFormatError, match="legacy"):
        convert("test.docx", real("markitdown/test.xls"))  # an unencrypted OLE2 file


def test_oversized_files_and_decks_are_refused() -> None:
    with pytest.raises(FileTooLargeError, match="split it"):
        convert("big.docx", officegen.docx_file(), Limits(max_file_bytes=1000))
    with pytest.raises(FileTooLargeError, match="3 slides"):
        convert("deck.pptx", officegen.pptx_file(slides=3), Limits(max_slides=2))


@needs_data
def test_documents_without_text_are_refused_as_empty() -> None:
    with pytest.raises(EmptyDocumentError):
        convert("empty.docx", real("mammoth/empty.docx"))
    with pytest.raises(EmptyDocumentError):
        convert("minimal.pptx", real("python-pptx/minimal.pptx"))


def test_every_reason_says_what_to_do() -> None:
    with pytest.raises(UnsupportedFormatError) as caught:
        convert("x.doc", b"")
    assert caught.value.worded_for("ingest").endswith("and ingest that")


# The Word case is slow (`make test` runs it): python-docx's template has a 350 KB styles part, so
# each of its 20 damaged copies takes 0.3 s to convert.
@pytest.mark.parametrize("kind", [pytest.param("docx", marks=pytest.mark.slow), "pptx", "xlsx"])
def test_damaged_parts_give_a_typed_reason_never_a_library_error(kind: str) -> None:
    import random

    base = {"docx": officegen.docx_file, "pptx": officegen.pptx_file, "xlsx": officegen.xlsx_file}[
        kind
    ]()
    rng = random.Random(7)
    with zipfile.ZipFile(io.BytesIO(base)) as src:
        parts = [(info, src.read(info)) for info in src.infolist()]
    xml_parts = [i for i, (info, _) in enumerate(parts) if info.filename.endswith(".xml")]
    outcomes = set()
    for _ in range(20):
        target = rng.choice(xml_parts)
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            for i, (info, content) in enumerate(parts):
                if i == target:
                    content = content[: rng.randrange(len(content))]  # cut short: not well-formed
                dst.writestr(info, content)
        try:
            convert(f"damaged.{kind}", out.getvalue())
            outcomes.add("ok")
        except (CorruptFileError, EmptyDocumentError) as exc:
            outcomes.add(exc.code)
    assert "corrupt_file" in outcomes


def test_html_walk_knows_lexbors_ids_of_text_and_comment_nodes() -> None:
    paragraph = LexborHTMLParser("<p>a<!--c--></p>").css_first("p")
    assert paragraph is not None

    kinds = {node.tag: node.tag_id for node in paragraph.iter(include_text=True)}

    assert kinds == {"-text": html._TEXT_ID, "-comment": html._COMMENT_ID}


def test_html_content_in_an_element_named_like_chrome_is_kept_when_it_is_the_article() -> None:
    # Given a page laid out as R Markdown's vignettes are: the table of contents in div#TOC,
    # the article itself in div.toc-content
    article = "".join(
        f"<h2>Step {n}</h2><p>Fit the model of step {n} and check its residuals.</p>"
        for n in range(1, 6)
    )
    page = (
        "<html><head><title>Vignette</title></head><body>"
        '<div class="container-fluid main-container"><div class="row">'
        '<div class="col-sm-4"><div id="TOC"><ul>'
        + "".join(f'<li><a href="#step-{n}">Step {n}</a></li>' for n in range(1, 6))
        + '</ul></div></div><div class="toc-content col-sm-8">'
        f"<h1>Fitting models</h1>{article}<div class='sidebar'>Related: other vignettes</div>"
        "</div></div></div></body></html>"
    )

    text = "\n".join(p.markdown for p in convert("vignette.html", page.encode()).pages)

    # Then the article is read, and the chrome inside and beside it is not
    assert "Fit the model of step 5 and check its residuals." in text
    assert "Related: other vignettes" not in text
    assert "- Step 1" not in text


def test_docx_with_tracked_changes_and_untyped_styles_reads_as_accepted() -> None:
    # Given a Word file with an insertion and a deletion tracked, whose styles part leaves out
    # w:type (a paragraph style by the standard; mammoth raised KeyError: 'w:type')
    body = (
        '<w:p><w:r><w:t xml:space="preserve">The fee is </w:t></w:r>'
        '<w:del w:id="1" w:author="Ana" w:date="2024-01-01T00:00:00Z">'
        "<w:r><w:delText>ten</w:delText></w:r></w:del>"
        '<w:ins w:id="2" w:author="Ana" w:date="2024-01-01T00:00:00Z">'
        "<w:r><w:t>twelve</w:t></w:r></w:ins>"
        '<w:r><w:t xml:space="preserve"> euros.</w:t></w:r></w:p>'
    )
    styles = (
        f'<w:styles xmlns:w="{officegen._W}">'
        '<w:style w:styleId="Normal" w:default="1"><w:name w:val="Normal"/></w:style>'
        '<w:style w:type="character" w:styleId="Strong"><w:name w:val="Strong"/></w:style>'
        "</w:styles>"
    )
    data = officegen._replace_part(
        officegen.minimal_docx(body), "word/styles.xml", officegen._XML_DECL, styles
    )

    # Then it reads as the changes accepted
    assert text_of("tracked.docx", data) == "The fee is twelve euros."


def test_xlsx_a_sheet_past_the_size_limit_is_refused_before_it_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a sheet of 200,000 rows (a 1,000,000-row one ran into the 300 s conversion limit)
    import openpyxl

    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Log")
    for r in range(200_000):
        sheet.append([r, f"entry {r}"])
    out = io.BytesIO()
    book.save(out)
    read = []
    monkeypatch.setattr(openpyxl, "load_workbook", lambda *a, **k: read.append(1))

    # When its XML is larger than a sheet may be
    with pytest.raises(FileTooLargeError) as refused:
        convert("log.xlsx", out.getvalue(), Limits(max_sheet_xml_bytes=4 * 1024 * 1024))

    # Then it is refused with that limit, and openpyxl never reads it
    assert "more than the 4 MB a sheet may have" in str(refused.value)
    assert "(sheet1.xml)" in str(refused.value)
    assert read == []
