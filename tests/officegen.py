"""Office and web files made on the fly for tests: small documents with known text (made with
python-docx, python-pptx and openpyxl themselves), and hostile ones (XML entity expansion in a
part, zip bombs, parts lying about their size)."""

from __future__ import annotations

import io
import zipfile
import zlib
from pathlib import Path


def docx_file(*, sections: int = 1, paragraphs: int = 2, table_rows: int = 2) -> bytes:
    """A Word document: per section a Heading 1, a Heading 2, paragraphs, a bulleted and a
    numbered list, and a table with a header row."""
    import docx

    document = docx.Document()
    document.core_properties.title = "Generated report"
    for s in range(1, sections + 1):
        document.add_heading(f"Chapter {s}", level=1)
        document.add_paragraph(f"Opening paragraph of chapter {s}.")
        document.add_heading(f"Scope {s}", level=2)
        for p in range(paragraphs):
            document.add_paragraph(f"Paragraph {p} of section {s}: " + "words to read " * 12)
        document.add_paragraph("First bullet", style="List Bullet")
        document.add_paragraph("Second bullet", style="List Bullet")
        document.add_paragraph("Step one", style="List Number")
        document.add_paragraph("Step two", style="List Number")
        table = document.add_table(rows=table_rows + 1, cols=3)
        for c, name in enumerate(["Region", "Revenue", "Growth"]):
            table.cell(0, c).text = name
        for r in range(1, table_rows + 1):
            for c, value in enumerate([f"Region {r}", f"{r * 1000:,}", f"{r}%"]):
                table.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_file(*, slides: int = 2, with_table: bool = True) -> bytes:
    """A presentation: each slide a title, two bullets (one indented), speaker notes, and on
    every other slide a 3x3 table."""
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    for n in range(1, slides + 1):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Quarterly results {n}"
        body = slide.placeholders[1].text_frame
        body.text = f"Revenue grew in quarter {n}"
        sub = body.add_paragraph()
        sub.text = "Mostly in the north"
        sub.level = 1
        slide.notes_slide.notes_text_frame.text = f"Say the numbers slowly {n}"
        if with_table and n % 2:
            shape = slide.shapes.add_table(3, 3, Inches(1), Inches(4), Inches(6), Inches(1.5))
            for r, row in enumerate(
                [["Quarter", "Revenue", "Cost"], ["Q1", "$ 100", "80"], ["Q2", "$ 120", "90"]]
            ):
                for c, value in enumerate(row):
                    shape.table.cell(r, c).text = value
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx_file(*, rows: int = 3, sheets: tuple[str, ...] = ("Revenue",)) -> bytes:
    """A workbook: per sheet a header row and `rows` rows of text, integers, money, percent."""
    import datetime as dt

    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name in sheets:
        sheet = book.create_sheet(name)
        sheet.append(["Region", "Units", "Revenue", "Growth", "Date"])
        for r in range(1, rows + 1):
            sheet.append([f"Region {r}", r * 10, r * 1234.5, r / 100, dt.date(2024, 1, 1)])
            sheet.cell(row=r + 1, column=3).number_format = '"$"#,##0.00'
            sheet.cell(row=r + 1, column=4).number_format = "0.0%"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


_SHEET_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_PKG_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_DOC_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_SHEET_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml."


def hand_written_xlsx(rows_xml: str, *, sheet: str = "Data") -> bytes:
    """A workbook of the five parts a spreadsheet needs and no more, as writers other than
    Excel make them (Open XML SDK samples, streaming writers): no shared strings, no styles,
    no document properties; `rows_xml` is the sheet's <row> elements."""
    parts = {
        "[Content_Types].xml": (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            f'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            f'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{_SHEET_TYPE}sheet.main+xml"/>'
            f'<Override PartName="/xl/worksheets/sheet1.xml" '
            f'ContentType="{_SHEET_TYPE}worksheet+xml"/></Types>'
        ),
        "_rels/.rels": (
            f'<Relationships xmlns="{_PKG_RELS}"><Relationship Id="rId1" '
            f'Type="{_DOC_RELS}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ),
        "xl/workbook.xml": (
            f'<workbook xmlns="{_SHEET_NS}" xmlns:r="{_DOC_RELS}"><sheets>'
            f'<sheet name="{sheet}" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            f'<Relationships xmlns="{_PKG_RELS}"><Relationship Id="rId1" '
            f'Type="{_DOC_RELS}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>'
        ),
        "xl/worksheets/sheet1.xml": (
            f'<worksheet xmlns="{_SHEET_NS}"><sheetData>{rows_xml}</sheetData></worksheet>'
        ),
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for part, xml in parts.items():
            package.writestr(part, _XML_DECL + xml)
    return out.getvalue()


def wide_xlsx(*, columns: int = 16_384, rows: int = 21) -> bytes:
    """A hand-written sheet as wide as Excel allows (XFD): a header row of inline strings
    ("Field 1"...) and `rows - 1` rows of numbers (row r, column c holds r * c)."""
    from openpyxl.utils import get_column_letter

    letters = [get_column_letter(c) for c in range(1, columns + 1)]
    xml = ['<row r="1">']
    xml += [
        f'<c r="{x}1" t="inlineStr"><is><t>Field {c}</t></is></c>' for c, x in enumerate(letters, 1)
    ]
    xml.append("</row>")
    for r in range(2, rows + 1):
        xml.append(f'<row r="{r}">')
        xml += [f'<c r="{x}{r}"><v>{r * c}</v></c>' for c, x in enumerate(letters, 1)]
        xml.append("</row>")
    return hand_written_xlsx("".join(xml), sheet="Wide")


def html_page(*, sections: int = 2) -> bytes:
    """A web page with site chrome around an article of headings, lists and a table."""
    parts = [
        "<!doctype html><html><head><title>Team handbook</title>",
        "<style>body{color:red}</style><script>var tracking = 'SCRIPT TEXT';</script></head>",
        "<body><header class='site-header'><a href='/'>Home</a> SITE HEADER</header>",
        "<nav><ul><li>NAV LINK ONE</li><li>NAV LINK TWO</li></ul></nav>",
        "<div class='cookie-banner'>COOKIE CONSENT</div><main><h1>Team handbook</h1>",
    ]
    for s in range(1, sections + 1):
        parts.append(f"<h2>Part {s}</h2><p>Text of part {s} with <b>bold</b> words.</p>")
        parts.append("<ul><li>Alpha<ul><li>Alpha one</li></ul></li><li>Beta</li></ul>")
        parts.append("<ol><li>First</li><li>Second</li></ol>")
        parts.append(
            "<table><thead><tr><th>Name</th><th>Role</th></tr></thead><tbody>"
            "<tr><td>Ann</td><td>Lead</td></tr><tr><td colspan='2'>Both</td></tr>"
            "</tbody></table>"
        )
    parts.append("<aside>SIDEBAR TEXT</aside></main><footer>FOOTER TEXT</footer></body></html>")
    return "".join(parts).encode()


# --- hostile files ---------------------------------------------------------------------

LAUGHS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
        for i in range(1, 10)
    )
    + "]>\n"
)
# A quadratic blow-up: one big entity used many times (no nesting for expat's limits to see).
QUADRATIC = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    f'<!DOCTYPE q [<!ENTITY a "{"a" * 50_000}">]>\n'
)
EXTERNAL = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<!DOCTYPE x [<!ENTITY ext SYSTEM "file:///etc/hostname">]>\n'
)


def minimal_docx(
    body_xml: str = "<w:p><w:r><w:t>Hello</w:t></w:r></w:p>", prolog: str = ""
) -> bytes:
    """A .docx made with python-docx, its document part replaced by `prolog` + a body."""
    import docx

    base = io.BytesIO()
    docx.Document().save(base)
    return _replace_part(base.getvalue(), "word/document.xml", prolog or _XML_DECL, _doc(body_xml))


def laughs_docx(kind: str = "laughs") -> bytes:
    """A .docx whose text run holds an entity: billion laughs, quadratic or external."""
    prolog, ref = {
        "laughs": (LAUGHS, "&lol9;"),
        "quadratic": (QUADRATIC, "&a;" * 20_000),
        "external": (EXTERNAL, "&ext;"),
    }[kind]
    return minimal_docx(f"<w:p><w:r><w:t>{ref}</w:t></w:r></w:p>", prolog)


def laughs_xlsx() -> bytes:
    """An .xlsx whose shared strings part expands a billion laughs."""
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"] = "hello"
    base = io.BytesIO()
    book.save(base)
    body = (
        '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" '
        'uniqueCount="1"><si><t>&lol9;</t></si></sst>'
    )
    data = _replace_part(base.getvalue(), "xl/sharedStrings.xml", LAUGHS, body, add=True)
    return data


def laughs_pptx() -> bytes:
    """A .pptx whose first slide's title expands a billion laughs."""
    import pptx

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[0])
    slide.shapes.title.text = "LAUGHS"
    base = io.BytesIO()
    deck.save(base)
    with zipfile.ZipFile(io.BytesIO(base.getvalue())) as package:
        xml = package.read("ppt/slides/slide1.xml").decode()
    xml = xml.split("?>", 1)[1].replace("LAUGHS", "&lol9;")
    return _replace_part(base.getvalue(), "ppt/slides/slide1.xml", LAUGHS, xml)


def zip_bomb_docx(inflated_mib: int = 600) -> bytes:
    """A .docx whose document part inflates to `inflated_mib` MiB of spaces (about 1000:1)."""
    base = minimal_docx()
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(base)) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            if info.filename != "word/document.xml":
                dst.writestr(info, src.read(info))
        with dst.open("word/document.xml", "w", force_zip64=True) as part:
            part.write(_XML_DECL.encode() + _doc("").encode()[: -len("</w:body></w:document>")])
            chunk = b" " * (1024 * 1024)
            for _ in range(inflated_mib):
                part.write(chunk)
            part.write(b"</w:body></w:document>")
    return out.getvalue()


def lying_size_docx(*, crc_of_prefix: bool = False) -> bytes:
    """A .docx whose document part says it is 300 bytes but inflates to 50 MB. zipfile stops
    returning bytes at the declared size, but `ZipFile.read` inflates the whole part first;
    with `crc_of_prefix` the CRC is that of the first 300 bytes, so no CRC error either."""
    base = minimal_docx()
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(base)) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            if info.filename != "word/document.xml":
                dst.writestr(info, src.read(info))
        text = "a" * (50 * 1024 * 1024)
        dst.writestr(
            "word/document.xml", _XML_DECL + _doc(f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>")
        )
    data = bytearray(out.getvalue())
    name = b"word/document.xml"
    prefix = (_XML_DECL + _doc("<w:p><w:r><w:t>" + text)).encode()[:300]
    crc = zlib.crc32(prefix).to_bytes(4, "little")
    for signature, name_at, size_at in ((b"PK\x03\x04", 30, 22), (b"PK\x01\x02", 46, 24)):
        offset = data.find(signature)
        while offset >= 0:
            if data[offset + name_at : offset + name_at + len(name)] == name:
                data[offset + size_at : offset + size_at + 4] = (300).to_bytes(4, "little")
                if crc_of_prefix:
                    data[offset + size_at - 8 : offset + size_at - 4] = crc
            offset = data.find(signature, offset + 4)
    return bytes(data)


_XML_DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _doc(body_xml: str) -> str:
    return f'<w:document xmlns:w="{_W}"><w:body>{body_xml}</w:body></w:document>'


def _replace_part(data: bytes, part: str, prolog: str, body: str, *, add: bool = False) -> bytes:
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            if info.filename == part:
                continue
            content = src.read(info)
            if add and info.filename == "[Content_Types].xml" and part.encode() not in content:
                content = content.replace(
                    b"</Types>",
                    b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.'
                    b'openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>',
                )
            if (
                add
                and info.filename == "xl/_rels/workbook.xml.rels"
                and b"sharedStrings" not in content
            ):
                content = content.replace(
                    b"</Relationships>",
                    b'<Relationship Id="rIdSS" Type="http://schemas.openxmlformats.org/'
                    b'officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>'
                    b"</Relationships>",
                )
            if add and info.filename.startswith("xl/worksheets/sheet1"):
                content = content.replace(
                    b'<c r="A1" t="inlineStr"><is><t>hello</t></is></c>',
                    b'<c r="A1" t="s"><v>0</v></c>',
                )
            dst.writestr(info, content)
        dst.writestr(part, prolog + body)
    return out.getvalue()


# --- what each library does when nothing checks first -------------------------------------------


def encrypted(data: bytes, password: str = "Password1234_") -> bytes:
    """An Office file encrypted with a password (ECMA-376 Agile, as Office does), by
    msoffcrypto-tool."""
    from msoffcrypto.format.ooxml import OOXMLFile

    out = io.BytesIO()
    OOXMLFile(io.BytesIO(data)).encrypt(password, out)
    return out.getvalue()


def office_folder(folder: Path) -> dict[str, str]:
    """A folder of three readable Office files and three that fail, and each file's expected
    outcome: "indexed" or the failure's code."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "report.docx": (docx_file(), "indexed"),
        "deck.pptx": (pptx_file(), "indexed"),
        "book.xlsx": (xlsx_file(sheets=("Revenue", "Costs")), "indexed"),
        "locked.docx": (encrypted(docx_file()), "encrypted_file"),
        "broken.xlsx": (b"PK\x03\x04" + bytes(range(256)) * 8, "corrupt_file"),
        "macros.pptm": (pptx_file(slides=1), "has_macros"),
    }
    for name, (data, _) in files.items():
        (folder / name).write_bytes(data)
    return {name: outcome for name, (_, outcome) in files.items()}
