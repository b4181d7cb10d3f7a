"""Generate PDFs with known headings, paragraphs and page breaks (reportlab)."""

from __future__ import annotations

import io
from collections.abc import Sequence

from reportlab.lib.pagesizes import A4
from reportlab.pdfgen.canvas import Canvas

SIZES = {"h1": 20, "h2": 15, "h3": 12.5, "h4": 11, "body": 10}
FONTS = {
    "h1": "Helvetica-Bold",
    "h2": "Helvetica-Bold",
    "h3": "Helvetica-Bold",
    "h4": "Helvetica-Bold",
    "body": "Helvetica",
}

Block = tuple[str, str]  # (kind, text): kind is h1 to h4 or body; body text is one line


def make_pdf(pages: Sequence[Sequence[Block]], *, title: str = "", outline: bool = False) -> bytes:
    """One PDF page per entry of `pages`; with `outline`, headings also become bookmarks."""
    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=A4, invariant=1)
    if title:
        canvas.setTitle(title)
    _, height = A4
    for number, blocks in enumerate(pages, start=1):
        y = height - 72
        for i, (kind, text) in enumerate(blocks):
            size = SIZES[kind]
            if kind != "body" or (i and blocks[i - 1][0] != "body"):
                y -= size  # space before a heading and after it
            canvas.setFont(FONTS[kind], size)
            canvas.drawString(72, y, text)
            if outline and kind != "body":
                key = f"p{number}b{i}"
                canvas.bookmarkPage(key, fit="XYZ", top=y + size)
                canvas.addOutlineEntry(text, key, level=int(kind[1]) - 1)
            y -= size * 1.3
        canvas.showPage()
    canvas.save()
    return buffer.getvalue()


def scanned_copy(pdf: bytes, *, dpi: int = 200, pages: Sequence[int] | None = None) -> bytes:
    """An image-only PDF of `pdf`'s pages (0-based `pages`, default all): each page rendered at
    `dpi` in grey and placed as one image on a page of the same size, as a scanner makes them."""
    import pypdfium2 as pdfium
    from reportlab.lib.utils import ImageReader

    source = pdfium.PdfDocument(pdf)
    buffer = io.BytesIO()
    canvas = Canvas(buffer, invariant=1)
    try:
        for index in pages if pages is not None else range(len(source)):
            page = source[index]
            width, height = page.get_size()
            image = page.render(scale=dpi / 72, grayscale=True).to_pil()
            page.close()
            canvas.setPageSize((width, height))
            canvas.drawImage(ImageReader(image), 0, 0, width, height)
            canvas.showPage()
    finally:
        source.close()
    canvas.save()
    return buffer.getvalue()
