"""Filled-in AcroForm fields: the values a reader typed live in the form, not in the text
layer."""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docchat.ingest.convert.page import CONTROL, Line, Paragraph

_MAX_FIELDS = 2000  # per page

_CHOICE_FIELDS = (pdfium_c.FPDF_FORMFIELD_COMBOBOX, pdfium_c.FPDF_FORMFIELD_LISTBOX)

_TICKED_FIELDS = (pdfium_c.FPDF_FORMFIELD_CHECKBOX, pdfium_c.FPDF_FORMFIELD_RADIOBUTTON)


def form_fields(document: pdfium.PdfDocument, page: pdfium.PdfPage) -> list[Paragraph]:
    """The page's filled-in AcroForm fields, one "label: value" paragraph each, in the order
    of the page's widgets. The text layer never holds them: they live in the form."""
    form = document.formenv
    if form is None:
        return []
    found: list[Paragraph] = []
    seen: set[tuple[str, str]] = set()
    for index in range(min(pdfium_c.FPDFPage_GetAnnotCount(page.raw), _MAX_FIELDS)):
        annot = pdfium_c.FPDFPage_GetAnnot(page.raw, index)
        if not annot:
            continue
        try:
            field = _field_text(form.raw, annot)
        finally:
            pdfium_c.FPDFPage_CloseAnnot(annot)
        if field and field not in seen:  # radio buttons: one widget per choice, one value
            seen.add(field)
            line = Line(f"{field[0]}: {field[1]}", 0.0, False, 0.0, 0.0, 0.0)
            found.append(Paragraph([line]))
    return found


def _field_text(form: Any, annot: Any) -> tuple[str, str] | None:
    if pdfium_c.FPDFAnnot_GetSubtype(annot) != pdfium_c.FPDF_ANNOT_WIDGET:
        return None
    kind = pdfium_c.FPDFAnnot_GetFormFieldType(form, annot)
    if kind in _TICKED_FIELDS:
        if not pdfium_c.FPDFAnnot_IsChecked(form, annot):
            return None
        export = _utf16(pdfium_c.FPDFAnnot_GetFormFieldExportValue, form, annot)
        value = export if export and export.casefold() not in ("on", "yes") else "yes"
    elif kind == pdfium_c.FPDF_FORMFIELD_TEXTFIELD or kind in _CHOICE_FIELDS:
        value = _utf16(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annot)
    else:
        return None  # push buttons, signatures: no value a reader fills in
    value = CONTROL.sub(" ", value).strip()
    if not value:
        return None
    label = _utf16(pdfium_c.FPDFAnnot_GetFormFieldAlternateName, form, annot) or _short_name(
        _utf16(pdfium_c.FPDFAnnot_GetFormFieldName, form, annot)
    )
    return CONTROL.sub(" ", label).strip() or "field", value


def _short_name(name: str) -> str:
    """A field's own name without its parents' ("form1[0].page1[0].city[0]" -> "city")."""
    return re.sub(r"\[\d+\]$", "", name.rsplit(".", 1)[-1])


def _utf16(getter: Callable[..., int], form: Any, annot: Any) -> str:
    """A UTF-16 string from one of PDFium's two-call getters (size first, then the text)."""
    size = getter(form, annot, None, 0)
    if size <= 2:
        return ""
    buffer = ctypes.create_string_buffer(size)
    getter(form, annot, ctypes.cast(buffer, ctypes.POINTER(pdfium_c.FPDF_WCHAR)), size)
    return buffer.raw[: size - 2].decode("utf-16-le", errors="replace")
