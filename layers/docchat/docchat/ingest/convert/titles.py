"""The document's title: its metadata title, or a first heading, when that names this
document."""

from __future__ import annotations

import re

import pypdfium2 as pdfium

from docchat.ingest.convert.page import CONTROL, RawPage


def document_title(document: pdfium.PdfDocument, raw_pages: list[RawPage], fallback: str) -> str:
    """The metadata title when it names this document, else the first heading that does (on
    the first pages), else `fallback` (the file name)."""
    try:
        title = CONTROL.sub("", document.get_metadata_dict().get("Title", "")).strip()
    except (pdfium.PdfiumError, UnicodeDecodeError):
        title = ""
    if names_document(title):
        return title
    for page in raw_pages[:_TITLE_PAGES]:
        for paragraph in page.paragraphs:
            if paragraph.heading_level and names_document(heading := paragraph.text.strip()):
                return heading
    return fallback


_TITLE_PAGES = 3  # a heading further on names a part of the document, not the document

# Titles that many documents share: a word processor's or scanner's default, a section name,
# the bare name of a form. Compared in lower case, without punctuation.
_GENERIC_TITLES = frozenset(
    [
        "abstract",
        "agreement",
        "appendix",
        "book1",
        "chapter 1",
        "contents",
        "contract",
        "cover",
        "cover page",
        "default",
        "document",
        "draft",
        "exhibit",
        "form",
        "general",
        "heading",
        "home",
        "image",
        "index",
        "introduction",
        "invoice",
        "letter",
        "memo",
        "memorandum",
        "new document",
        "no title",
        "none",
        "notice",
        "overview",
        "page",
        "preface",
        "presentation",
        "print",
        "printed by",
        "proxy statement",
        "prospectus",
        "report",
        "scan",
        "scanned document",
        "schedule",
        "sheet1",
        "summary",
        "table of contents",
        "title",
        "unknown",
        "untitled",
    ]
)

# "Form 10-K", "FORM 8-K", "Schedule 13D", "Exhibit 99.1", "Page 1", "Slide 3".
_FORM_NAME = re.compile(
    r"(form|schedule|exhibit|annex|appendix|attachment|page|slide|part|item)\s*[\w.-]{0,8}", re.I
)

# Set by the document's producer rather than its author.
_PRODUCER_TITLE = re.compile(
    r"untitled.*|microsoft (word|excel|powerpoint) - .*|.* - notepad|adobe photoshop pdf"
    r"|.*\w\.(docx?|xlsx?|pptx?|odt|ods|odp|rtf|txt|pdf|tex|dvi|indd|html?|jpe?g|png|tiff?)\b.*",
    re.I,
)

# Headings of SEC filings and other forms that every filing of its kind carries.
_BOILERPLATE = re.compile(
    r"((annual|quarterly|current|transition) report pursuant to|for the (fiscal )?"
    r"(year|quarter|period) ended|commission file number|washington,? d\.?c\.?"
    r"|securities and exchange commission)",
    re.I,
)

# An agency's name in capitals: the issuer of many documents, not the name of one.
_AGENCY_WORDS = re.compile(
    r"\b(COMMISSION|DEPARTMENT|AGENCY|SERVICE|OFFICE|BUREAU|MINISTRY|ADMINISTRATION|BOARD"
    r"|COURT|UNITED STATES|GOVERNMENT|STATE OF)\b"
)


# A sign no title puts between two letters or digits: what a broken text layer reads in place of
# a letter or a space (a font with no Unicode map: "Cl>opMa no KHA"; spaces as "#":
# "1101#Strayer#Drive"). The file name names the document better.
_GARBLED = re.compile(r"[^\W_][<>#|\\^~{}\[\]@][^\W_]")


def names_document(title: str) -> bool:
    """Whether `title` could name one document: not empty, generic, a producer's default,
    a form's bare name, a filing's boilerplate, an agency's name in capitals, or text a broken
    text layer garbled."""
    text = " ".join(title.split())
    if _GARBLED.search(text):
        return False
    letters = sum(c.isalpha() for c in text)
    if not re.search(r"(?<!\w)[^\W\d_]{2,}", text):  # not one word: "H 0,05 A"
        return False
    if len(text) > 10 and letters <= 0.4 * len(text.replace(" ", "")):  # a code, a table row
        return False
    if " " not in text and len(text) <= 3:  # "abc", "PDF"
        return False
    plain = " ".join(re.sub(r"[\W_]+", " ", text.casefold()).split())
    if plain in _GENERIC_TITLES or _FORM_NAME.fullmatch(text) or _PRODUCER_TITLE.fullmatch(text):
        return False
    if _BOILERPLATE.search(text):
        return False
    return not (text.isupper() and _AGENCY_WORDS.search(text))
