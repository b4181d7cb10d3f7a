"""Conversion of real PDFs that nobody on this project wrote (../shared/data/pdfs).

The expectations come from the files' own sources: the `.tex` files next to py-pdf's samples,
PDFium's expected text shipped with pypdfium2's tests, and the per-folder `_catalog_pdfium.json`
(page counts, open errors, text found on the first 50 pages).
"""

from __future__ import annotations

import json
import random
import re
from functools import cache
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pytest

from docchat.errors import (
    ConversionError,
    ConversionTimeoutError,
    EmptyPdfError,
    EncryptedPdfError,
    MalformedPdfError,
    NeedsOcrError,
    PdfTooLargeError,
)
from docchat.ingest.convert.pdf import ConvertLimits, pages_from_pdf
from docchat.models import ConvertedDocument
from tests.conftest import EXAMPLES

PDFS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "pdfs"

if not PDFS.is_dir():
    pytest.skip(
        f"real PDFs not available: {PDFS} is absent (it lives at ../shared/data/pdfs)",
        allow_module_level=True,
    )

PYPDF = "py-pdf-sample-files"
PDFMINER = "pdfminer.six-samples/samples"
PYPDFIUM = "pypdfium2-tests/tests"
OCRMYPDF = "ocrmypdf-test-resources/tests/resources"

FOUR_PAGES = f"{PYPDF}/004-pdflatex-4-pages/pdflatex-4-pages.pdf"
OUTLINE = f"{PYPDF}/006-pdflatex-outline/pdflatex-outline.pdf"
TWO_COLUMNS = f"{PYPDF}/026-latex-multicolumn/multicolumn.pdf"


@cache
def _convert(relative: str) -> ConvertedDocument:
    return pages_from_pdf((PDFS / relative).read_bytes())


def _norm(text: str) -> str:
    """Collapse every whitespace run to one space.

    Nothing else is normalised: the converter itself must join words that LaTeX hyphenated at
    a line end (PDFium marks those hyphens), so a word split as "adip- iscing" is a failure.
    """
    return " ".join(text.split())


@cache
def _catalog() -> dict[str, dict[str, Any]]:
    """`_catalog_pdfium.json` entries of every folder, keyed by path relative to PDFS."""
    entries: dict[str, dict[str, Any]] = {}
    for catalog in sorted(PDFS.glob("*/_catalog_pdfium.json")):
        for entry in json.loads(catalog.read_text(encoding="utf-8")):
            entries[f"{catalog.parent.name}/{entry['file']}"] = entry
    return entries


def _headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if re.match(r"#{1,3} ", line)]


# --- 1. known text from the .tex sources --------------------------------------------------

# (pdf, sentence, pages it is on). Sentences are literal text of the `.tex` source with the
# LaTeX commands removed; for \blindtext (004) and \lipsum (026) the sentence is the text those
# packages typeset. The page tuple is every page that carries the sentence, so a sentence on
# the wrong page, or on more pages than it is printed on, fails.
KNOWN_TEXT = [
    pytest.param(
        f"{PYPDF}/001-trivial/minimal-document.pdf",
        "At vero eos et accusam et justo duo dolores et ea rebum.",
        (1,),
        id="001-minimal-at-vero-eos",
    ),
    pytest.param(
        f"{PYPDF}/001-trivial/minimal-document.pdf",
        "Stet clita kasd gubergren, no sea takimata sanctus est Lorem ipsum dolor sit amet.",
        (1,),
        id="001-minimal-stet-clita-kasd",
    ),
    pytest.param(
        f"{PYPDF}/003-pdflatex-image/pdflatex-image.pdf",
        "Your Chapter",
        (1,),
        id="003-image-chapter-title",
    ),
    pytest.param(
        f"{PYPDF}/003-pdflatex-image/pdflatex-image.pdf",
        "Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam nonumy eirmod tempor "
        "invidunt ut labore et dolore magna aliquyam erat, sed diam voluptua.",
        (1,),
        id="003-image-lorem-ipsum",
    ),
    pytest.param(
        FOUR_PAGES,
        "Hello, here is some text without a meaning.",
        (1, 2, 3, 4),
        id="004-blindtext-hello-on-every-page",
    ),
    pytest.param(
        FOUR_PAGES,
        "If you read this text, you will get no information. Really? Is there no information?",
        (1, 2, 3, 4),
        id="004-blindtext-no-information",
    ),
    pytest.param(
        TWO_COLUMNS,
        "Two-Column Document with Lorem Ipsum",
        (1,),
        id="026-multicolumn-title",
    ),
    pytest.param(
        TWO_COLUMNS,
        "This is a sample document with two columns filled with Lorem Ipsum text.",
        (1,),
        id="026-multicolumn-abstract",
    ),
    pytest.param(
        TWO_COLUMNS,
        "Lorem ipsum dolor sit amet, consectetuer adipiscing elit. Ut purus elit, vestibulum ut, "
        "placerat ac, adipiscing vitae, felis. Curabitur dictum gravida mauris.",
        (1,),
        id="026-multicolumn-hyphenated-lipsum",
    ),
    pytest.param(
        TWO_COLUMNS,
        "EU Countries Information",
        (3,),
        id="026-multicolumn-table-caption",
    ),
    pytest.param(
        TWO_COLUMNS,
        "Czech Republic 10.7 78,866 Prague Czech",
        (3,),
        id="026-multicolumn-table-row",
    ),
    pytest.param(
        TWO_COLUMNS,
        "Finland 5.5 338,424 Helsinki Finnish, Swedish",
        (3,),
        id="026-multicolumn-table-last-row",
    ),
]


@pytest.mark.parametrize(("pdf", "sentence", "pages"), KNOWN_TEXT)
def test_convert_known_sentence_on_its_page(
    pdf: str, sentence: str, pages: tuple[int, ...]
) -> None:
    document = _convert(pdf)

    found_on = tuple(p.number for p in document.pages if _norm(sentence) in _norm(p.markdown))
    assert found_on == pages


def test_convert_hyphenated_line_break_keeps_paragraph_whole() -> None:
    # \lipsum[1] (left column, page 1) is one paragraph; its lines carry 6 words that LaTeX
    # hyphenated at line ends: con-sectetuer, tris-tique, rhon-cus, ultri-ces, Cur-abitur,
    # dig-nissim.
    paragraph = (
        "Lorem ipsum dolor sit amet, consectetuer adipiscing elit. Ut purus elit, vestibulum ut, "
        "placerat ac, adipiscing vitae, felis. Curabitur dictum gravida mauris. "
        "Nam arcu libero, nonummy eget, consectetuer id, vulputate a, magna. Donec vehicula "
        "augue eu neque. Pellentesque habitant morbi tristique senectus et netus et malesuada "
        "fames ac turpis egestas. Mauris ut leo. Cras viverra metus rhoncus sem. Nulla et "
        "lectus vestibulum urna fringilla ultrices. Phasellus eu tellus sit amet tortor gravida "
        "placerat. Integer sapien est, iaculis in, pretium quis, viverra ac, nunc. Praesent "
        "eget sem vel leo ultrices bibendum. Aenean faucibus. Morbi dolor nulla, malesuada eu, "
        "pulvinar at, mollis ac, nulla. Curabitur auctor semper nulla. Donec varius orci eget "
        "risus. Duis nibh mi, congue eu, accumsan eleifend, sagittis quis, diam. Duis eget "
        "orci sit amet orci dignissim rutrum."
    )

    blocks = _convert(TWO_COLUMNS).pages[0].markdown.split("\n\n")

    assert paragraph in blocks


def test_convert_two_columns_no_paragraph_starts_mid_sentence() -> None:
    # Within a page, a paragraph that starts with a lower-case word was cut in the middle of a
    # sentence (here: where the left column ends and the right one begins). The first block of
    # a page may continue the previous page's last sentence.
    document = _convert(TWO_COLUMNS)

    cut = [
        (page.number, block[:40])
        for page in document.pages
        for block in page.markdown.split("\n\n")[1:]
        if block[:1].islower()
    ]
    assert cut == []


@pytest.mark.parametrize(
    "joined",
    [
        # "mauris." ends a sentence and "Nam" follows on the same line after a stretched
        # (justified) interword space: the space is not a column gap.
        pytest.param("gravida mauris. Nam arcu libero, nonummy eget", id="justified-wide-space"),
        # "libero." ends a full line of the left column: the column is narrower than the page,
        # but its full lines are not short lines that end a paragraph.
        pytest.param("tristique, libero. Vivamus viverra fermentum felis.", id="full-column-line"),
    ],
)
def test_convert_two_columns_sentence_end_inside_paragraph_keeps_it_whole(joined: str) -> None:
    # Both are inside one paragraph of \lipsum (\lipsum[1] and \lipsum[4]).
    blocks = _convert(TWO_COLUMNS).pages[0].markdown.split("\n\n")

    assert any(joined in block for block in blocks)


# --- 2. PDFium's own expected text ---------------------------------------------------------


def _expected_text_by_page() -> dict[int, list[str]]:
    """pypdfium2's expectations/text_extract.txt: '# Page N' headers, then that page's lines."""
    pages: dict[int, list[str]] = {}
    current = 0
    path = PDFS / PYPDFIUM / "expectations" / "text_extract.txt"
    for line in path.read_text(encoding="utf-8").splitlines():
        header = re.fullmatch(r"# Page (\d+)", line.strip())
        if header:
            current = int(header.group(1))
            pages[current] = []
        elif line.strip():
            pages[current].append(_norm(line))
    return pages


def test_convert_pypdfium_text_pdf_matches_pdfium_expectation() -> None:
    expected = _expected_text_by_page()
    document = _convert(f"{PYPDFIUM}/resources/text.pdf")

    assert [p.number for p in document.pages] == sorted(expected) == [1, 2]
    for page in document.pages:
        text = _norm(page.markdown)
        position = 0
        for line in expected[page.number]:
            found = text.find(line, position)
            assert found >= 0, f"page {page.number}: {line!r} missing or out of order in {text!r}"
            position = found + len(line)


# --- 3. outline headings -------------------------------------------------------------------

# \tableofcontents fills page 1; the nine \section{}s (Foo, Bar, Baz three times) follow.
OUTLINE_SECTIONS = {
    1: [],
    2: ["Foo", "Bar", "Baz", "Foo"],
    3: ["Bar", "Baz", "Foo"],
    4: ["Bar", "Baz"],
}


def test_convert_outline_sections_become_headings_on_their_pages() -> None:
    document = _convert(OUTLINE)

    assert document.used_outline is True
    titles = {
        page.number: [re.sub(r"^#{1,3} (\d+ )?", "", h) for h in _headings(page.markdown)]
        for page in document.pages
    }
    assert titles == OUTLINE_SECTIONS


def test_convert_outline_headings_keep_section_numbers() -> None:
    # The PDF prints "5 Bar", "8 Bar": the heading must carry the text as printed, and the
    # section line must not be dropped as if it were a running page header.
    document = _convert(OUTLINE)

    headings = {page.number: _headings(page.markdown) for page in document.pages}
    assert headings == {
        1: [],
        2: ["# 1 Foo", "# 2 Bar", "# 3 Baz", "# 4 Foo"],
        3: ["# 5 Bar", "# 6 Baz", "# 7 Foo"],
        4: ["# 8 Bar", "# 9 Baz"],
    }


# --- 4. encrypted, malformed, empty, not a PDF ---------------------------------------------

ENCRYPTED = [
    f"{PYPDF}/005-libreoffice-writer-password/libreoffice-writer-password.pdf",
    f"{PDFMINER}/encryption/aes-128.pdf",
    f"{PDFMINER}/encryption/aes-128-m.pdf",
    f"{PDFMINER}/encryption/aes-256.pdf",
    f"{PDFMINER}/encryption/aes-256-m.pdf",
    f"{PDFMINER}/encryption/aes-256-r6.pdf",
    f"{PDFMINER}/encryption/rc4-40.pdf",
    f"{PDFMINER}/encryption/rc4-128.pdf",
    f"{PYPDFIUM}/resources/encrypted.pdf",
]


@pytest.mark.parametrize("pdf", ENCRYPTED, ids=lambda p: Path(p).name)
def test_convert_encrypted_pdf_asks_for_copy_without_password(pdf: str) -> None:
    with pytest.raises(EncryptedPdfError, match="password"):
        pages_from_pdf((PDFS / pdf).read_bytes())


@pytest.mark.parametrize(
    "pdf",
    [
        f"{OCRMYPDF}/invalid.pdf",
        f"{PYPDF}/017-unreadable-meta-data/unreadablemetadata.pdf",
    ],
    ids=lambda p: Path(p).name,
)
def test_convert_damaged_pdf_raises_malformed(pdf: str) -> None:
    with pytest.raises(MalformedPdfError, match="damaged"):
        pages_from_pdf((PDFS / pdf).read_bytes())


def test_convert_empty_bytes_raise_empty() -> None:
    with pytest.raises(EmptyPdfError, match="empty"):
        pages_from_pdf(b"")


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(random.Random(0).randbytes(4096), id="random-bytes"),
        pytest.param((PDFS / OCRMYPDF / "linn.txt").read_bytes(), id="plain-text-file"),
    ],
)
def test_convert_non_pdf_bytes_say_not_a_pdf(data: bytes) -> None:
    with pytest.raises(MalformedPdfError, match="not a PDF"):
        pages_from_pdf(data)


# --- 5. scanned and blank PDFs -------------------------------------------------------------

SCANNED = [
    f"{OCRMYPDF}/skew.pdf",
    f"{OCRMYPDF}/linn.pdf",
    f"{OCRMYPDF}/multipage.pdf",  # 5 of 6 pages scanned, one with an OCR layer
    f"{OCRMYPDF}/3small.pdf",
    f"{OCRMYPDF}/cardinal.pdf",
    f"{PYPDF}/007-imagemagick-images/imagemagick-ASCII85Decode.pdf",
    f"{PYPDF}/007-imagemagick-images/imagemagick-CCITTFaxDecode.pdf",
    f"{PYPDF}/007-imagemagick-images/imagemagick-lzw.pdf",
    f"{PYPDF}/007-imagemagick-images/imagemagick-images.pdf",  # 6 images, no visible text
]


@pytest.mark.parametrize("pdf", SCANNED, ids=lambda p: Path(p).name)
def test_convert_scanned_pdf_asks_for_ocr(pdf: str) -> None:
    with pytest.raises(NeedsOcrError, match="OCR"):
        pages_from_pdf((PDFS / pdf).read_bytes())


@pytest.mark.parametrize(
    "pdf",
    [f"{PYPDFIUM}/resources/empty.pdf", f"{OCRMYPDF}/blank.pdf"],  # pages with no objects at all
    ids=lambda p: Path(p).name,
)
def test_convert_blank_pages_raise_empty(pdf: str) -> None:
    with pytest.raises(EmptyPdfError, match="nothing to index"):
        pages_from_pdf((PDFS / pdf).read_bytes())


TEXTLESS = sorted(
    path
    for path, entry in _catalog().items()
    if entry.get("pages") and entry["pages"] <= 50 and entry.get("text_chars_first50p") == 0
)


@pytest.mark.parametrize("pdf", TEXTLESS)
def test_convert_pdf_without_text_is_never_indexed_as_if_it_had_some(pdf: str) -> None:
    # The catalog found no text on any page: a user must be told to OCR the file or that it
    # is empty, not get a "converted" document with nothing to search.
    with pytest.raises((NeedsOcrError, EmptyPdfError)):
        pages_from_pdf((PDFS / pdf).read_bytes())


# --- 6. limits -----------------------------------------------------------------------------


def test_convert_page_limit_names_count_and_setting() -> None:
    data = (PDFS / FOUR_PAGES).read_bytes()

    with pytest.raises(
        PdfTooLargeError, match=r"has 4 pages; the limit is 2 \(DOCCHAT_MAX_PAGES\)"
    ):
        pages_from_pdf(data, limits=ConvertLimits(max_pages=2))
    assert len(pages_from_pdf(data, limits=ConvertLimits(max_pages=4)).pages) == 4


def test_convert_timeout_stops_multipage_pdf() -> None:
    data = (PDFS / FOUR_PAGES).read_bytes()

    with pytest.raises(ConversionTimeoutError, match=r"of 4 \(DOCCHAT_CONVERT_TIMEOUT_S\)"):
        pages_from_pdf(data, limits=ConvertLimits(timeout_s=1e-9))


# --- 7. every PDF --------------------------------------------------------------------------

ALL_PDFS = sorted(p.relative_to(PDFS).as_posix() for p in PDFS.rglob("*.pdf"))


@pytest.mark.parametrize("pdf", ALL_PDFS)
def test_convert_every_pdf_converts_or_raises_conversion_error(pdf: str) -> None:
    data = (PDFS / pdf).read_bytes()
    entry = _catalog().get(pdf, {})

    try:
        document = pages_from_pdf(data)
    except ConversionError as exc:
        assert type(exc) is not ConversionError, "raise a specific ConversionError subclass"
        assert str(exc), "the error needs a message a user can act on"
        if "password" in entry.get("open_error", ""):
            assert isinstance(exc, EncryptedPdfError)
        elif entry.get("open_error"):
            assert isinstance(exc, MalformedPdfError)
        return
    except Exception as exc:
        pytest.fail(f"{type(exc).__name__} instead of a ConversionError: {exc}")

    assert not entry.get("open_error"), f"PDFium cannot open it: {entry['open_error']}"
    with pdfium.PdfDocument(data) as opened:
        count = len(opened)
    assert [p.number for p in document.pages] == list(range(1, count + 1))
    if "pages" in entry:
        assert count == entry["pages"]
    assert document.pages_without_text == sum(p.chars == 0 for p in document.pages)
    assert any(p.chars > 0 for p in document.pages), "converted, but no page has any text"


def test_convert_a_footnote_drawn_after_the_running_head_comes_last_too() -> None:
    # The DMCA summary's page 4 draws its running head, then its footnote ("Copying" is used
    # ...) and footer, then the text that goes on from page 3's last sentence ("measures that
    # prevent" / "unauthorized copying"): the page read the footnote first, so that sentence,
    # quoted by `make demo`'s answer, ended cut at page 3.
    page = pages_from_pdf((EXAMPLES / "dmca.pdf").read_bytes()).pages[3]
    blocks = page.markdown.split("\n\n")

    assert blocks[0].startswith("unauthorized copying of a copyrighted work.")
    assert blocks[-1].startswith("\u201cCopying\u201d is used in this context as a short-hand")


def test_convert_footnote_mark_and_footnote_keep_out_of_the_sentence_and_come_last() -> None:
    # The DMCA summary's page 1: "(DMCA)" carries a raised footnote mark "1" (8 pt in 13.6 pt
    # text), read as a line of its own, and the page draws its footnote ("Pub. L. No. 105-304")
    # before anything else although it stands at the foot of the page.
    page = pages_from_pdf((EXAMPLES / "dmca.pdf").read_bytes()).pages[0]
    blocks = page.markdown.split("\n\n")

    assert blocks[0].startswith("# THE DIGITAL MILLENNIUM COPYRIGHT ACT OF 1998")
    assert blocks[-1].startswith("Pub. L. No. 105-304, 112 Stat. 2860 (Oct. 28, 1998).")
    assert any(
        block.startswith(
            "The Digital Millennium Copyright Act (DMCA) was signed into law by President Clinton "
            "on October 28, 1998. The legislation implements"
        )
        for block in blocks
    )
