"""AcroForm field values are part of the page text (PDFium keeps them out of the text layer)."""

from __future__ import annotations

import io

from reportlab.pdfgen.canvas import Canvas

from docchat.ingest.convert.pdf import pages_from_pdf
from tests.conftest import SHARED_PDFS


def _form_pdf() -> bytes:
    # reportlab's AcroForm API (https://docs.reportlab.com/reportlab/userguide/ch4_platypus_
    # concepts/ is the guide; fields: canvas.acroForm.textfield / checkbox / choice): a labelled
    # text field with a tooltip (its /TU, the label PDF viewers show), an empty one, a ticked
    # and an unticked checkbox, and a choice.
    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=(400, 300), invariant=1)
    canvas.setFont("Helvetica", 12)
    canvas.drawString(20, 260, "Application for a library card")
    form = canvas.acroForm
    form.textfield(name="form1.city", tooltip="City of residence", value="Lisbon", x=20, y=200)
    form.textfield(name="form1.phone", value="", x=20, y=150)
    form.checkbox(name="agree", checked=True, x=20, y=100)
    form.checkbox(name="newsletter", checked=False, x=60, y=100)
    form.choice(name="branch", value="Alfama", options=["Alfama", "Belem"], x=20, y=40)
    canvas.showPage()
    canvas.save()
    return buffer.getvalue()


def test_forms_field_values_become_page_text() -> None:
    [page] = pages_from_pdf(_form_pdf()).pages

    paragraphs = page.markdown.split("\n\n")

    assert paragraphs[0] == "Application for a library card"
    assert paragraphs[1:] == ["City of residence: Lisbon", "agree: yes", "branch: Alfama"]


def test_forms_values_of_a_real_form_are_read() -> None:
    # py-pdf's LibreOffice form: "First Name" filled in as Alice, its copy as Bob, rest empty.
    pdf = SHARED_PDFS / "py-pdf-sample-files" / "012-libreoffice-form" / "libreoffice-form.pdf"

    [page] = pages_from_pdf(pdf.read_bytes()).pages

    assert page.markdown.endswith("First Name: Alice\n\nFirst Name_2: Bob")
    assert "Example for a Form" in page.markdown
