"""Tests of wordml, the lxml reader of .docx files that replaced mammoth on the common path:
the same text as mammoth on the real files and the generated ones, the rules it follows
(tracked changes, merged cells, text boxes, notes, lists), and the files it hands to mammoth."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree  # type: ignore[import-untyped]

from docchat.errors import ConversionError, CorruptFileError
from docchat.ingest.formats import convert, documents, wordml
from docchat.ingest.formats.safety import DEFAULT_LIMITS, open_package
from tests import officegen

DATA = Path("/work/shared/data/office")
_REAL = sorted(str(p.relative_to(DATA)) for p in DATA.rglob("*.docx")) if DATA.is_dir() else []


def text_of(data: bytes) -> str:
    return "\n".join(page.markdown for page in convert("w.docx", data).pages)


def outcome(data: bytes) -> object:
    try:
        document = convert("w.docx", data)
    except ConversionError as exc:
        return (type(exc).__name__, str(exc))
    return (document.title, [(page.label, page.markdown) for page in document.pages])


def through_mammoth(monkeypatch: pytest.MonkeyPatch, data: bytes) -> object:
    with monkeypatch.context() as patch:

        def refuse(package: object) -> str:
            raise wordml.NeedsMammoth("forced by the test")

        patch.setattr(wordml, "docx_html", refuse)
        return outcome(data)


def never_mammoth(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object) -> str:
        raise AssertionError("mammoth was called")

    monkeypatch.setattr(documents, "_mammoth_html", fail)


def body(xml: str) -> bytes:
    return officegen.minimal_docx(xml)


@pytest.mark.parametrize("name", _REAL)
def test_wordml_reads_every_suite_docx_as_mammoth_does(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (DATA / name).read_bytes()

    assert outcome(data) == through_mammoth(monkeypatch, data)


def test_wordml_reads_generated_reports_as_mammoth_does(monkeypatch: pytest.MonkeyPatch) -> None:
    data = officegen.docx_file(sections=3, paragraphs=2, table_rows=3)
    expected = through_mammoth(monkeypatch, data)
    never_mammoth(monkeypatch)

    assert outcome(data) == expected


def test_wordml_tracked_changes_read_as_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an insertion, a deletion, a move and a deleted paragraph mark (its text joins the
    # next paragraph), as mammoth reads them
    data = body(
        '<w:p><w:pPr><w:rPr><w:del w:id="1" w:author="a"/></w:rPr></w:pPr>'
        '<w:r><w:t xml:space="preserve">Joined </w:t></w:r></w:p>'
        '<w:p><w:ins w:id="2"><w:r><w:t>kept</w:t></w:r></w:ins>'
        '<w:del w:id="3"><w:r><w:delText>gone</w:delText></w:r></w:del>'
        '<w:moveFrom w:id="4"><w:r><w:t>from</w:t></w:r></w:moveFrom>'
        '<w:moveTo w:id="5"><w:r><w:t>to</w:t></w:r></w:moveTo></w:p>'
    )
    never_mammoth(monkeypatch)

    assert text_of(data) == "Joined keptto"


def test_wordml_merged_cells_are_spans_and_deleted_rows_go(monkeypatch: pytest.MonkeyPatch) -> None:
    cell = "<w:tc>{}<w:p><w:r><w:t>{}</w:t></w:r></w:p></w:tc>"
    data = body(
        "<w:tbl><w:tr><w:trPr><w:tblHeader/></w:trPr>"
        + cell.format('<w:tcPr><w:gridSpan w:val="2"/></w:tcPr>', "Head")
        + "</w:tr><w:tr>"
        + cell.format('<w:tcPr><w:vMerge w:val="restart"/></w:tcPr>', "A")
        + cell.format("", "B")
        + "</w:tr><w:tr>"
        + cell.format("<w:tcPr><w:vMerge/></w:tcPr>", "")
        + cell.format("", "C")
        + '</w:tr><w:tr><w:trPr><w:del w:id="1"/></w:trPr>'
        + cell.format("", "deleted row")
        + "</w:tr></w:tbl>"
    )
    never_mammoth(monkeypatch)

    assert text_of(data) == "| Head |  |\n| --- | --- |\n| A | B |\n|  | C |"


def test_wordml_text_box_follows_its_paragraph_and_links_keep_their_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = body(
        "<w:p><w:r><w:t>before</w:t></w:r><w:r><w:pict>"
        '<v:shape xmlns:v="urn:schemas-microsoft-com:vml"><v:textbox><w:txbxContent>'
        "<w:p><w:r><w:t>in box</w:t></w:r></w:p></w:txbxContent></v:textbox></v:shape>"
        '</w:pict></w:r><w:hyperlink w:anchor="x"><w:r><w:t>after</w:t></w:r></w:hyperlink></w:p>'
        '<w:p><w:fldSimple w:instr="PAGE"><w:r><w:t>dropped, as mammoth drops it</w:t></w:r>'
        "</w:fldSimple><w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t></w:r></w:p>"
    )
    never_mammoth(monkeypatch)

    assert text_of(data) == "beforeafter\nin box\na b\nc"


@pytest.mark.skipif(not DATA.is_dir(), reason="/work/shared/data/office is absent")
def test_wordml_notes_are_numbered_after_the_body(monkeypatch: pytest.MonkeyPatch) -> None:
    never_mammoth(monkeypatch)

    assert text_of((DATA / "mammoth/endnotes.docx").read_bytes()) == (
        "Ouch[1].[2]\n1. A tachyon walks into a bar.\n2. Fin."
    )


def test_wordml_lists_number_as_mammoth_writes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    import docx

    document = docx.Document()
    for text, style in [
        ("one", "List Number"),
        ("two", "List Number"),
        ("", "List Number"),  # empty: mammoth drops it, and it takes no number
        ("three", "List Number"),
        ("apple", "List Bullet"),
        ("pip", "List Bullet 2"),
    ]:
        document.add_paragraph(text, style=style)
    out = io.BytesIO()
    document.save(out)
    expected = through_mammoth(monkeypatch, out.getvalue())
    never_mammoth(monkeypatch)

    assert outcome(out.getvalue()) == expected
    # (List Bullet 2 is a list of its own in python-docx's template, not a level of List Bullet)
    assert text_of(out.getvalue()) == "1. one\n2. two\n3. three\n- apple\n- pip"


@pytest.mark.parametrize(
    "xml",
    [
        '<w:p><w:r><w:sym w:font="Wingdings" w:char="F0E0"/></w:r></w:p>',  # mammoth's dingbats
        "<w:sdt><w:sdtPr><w14:checkbox "
        'xmlns:w14="http://schemas.microsoft.com/office/word/2010/wordml"/></w:sdtPr>'
        "<w:sdtContent><w:p><w:r><w:t>X box</w:t></w:r></w:p></w:sdtContent></w:sdt>",
    ],
)
def test_wordml_hands_what_only_mammoth_reads_to_mammoth(
    xml: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = body(xml)
    with pytest.raises(wordml.NeedsMammoth):
        wordml.docx_html(open_package("w.docx", data, "docx", DEFAULT_LIMITS))

    assert outcome(data) == through_mammoth(monkeypatch, data)


def test_wordml_a_file_mammoth_refuses_is_refused_with_mammoths_reason() -> None:
    data = body(
        '<w:p><w:hyperlink r:id="rIdNone" xmlns:r="http://schemas.openxmlformats.org/'
        'officeDocument/2006/relationships"><w:r><w:t>x</w:t></w:r></w:hyperlink></w:p>'
    )

    with pytest.raises(CorruptFileError, match=r"could not be read \(KeyError: 'rIdNone'\)"):
        convert("w.docx", data)


def test_wordml_parser_expands_no_entity() -> None:
    # safety.open_package refuses a DTD first; the parser would not expand one anyway
    xml = b'<!DOCTYPE x [<!ENTITY a SYSTEM "file:///etc/hostname">]><x>&a;</x>'

    assert etree.fromstring(xml, wordml._PARSER).text is None
