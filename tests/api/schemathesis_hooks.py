"""Schemathesis hooks for tests/api/test_schema.py (SCHEMATHESIS_HOOKS): what a PDF is.

The upload's body is `format: binary` in the schema, which says nothing of what makes bytes a
PDF; left to itself the fuzzer sends random bytes, which the API refuses (415) as it should.
This gives it small real PDFs for its valid uploads.
"""

from __future__ import annotations

import schemathesis
from hypothesis import strategies as st

from docchat.serve.routes.documents import UPLOAD_TYPES
from tests.pdfgen import make_pdf

PDFS = [
    make_pdf([[("h1", "Ferries"), ("body", "The ferry to the island leaves every hour.")]]),
    make_pdf([[("h1", "Bridges"), ("body", "A new bridge opened in 2004.")], [("body", "Tolls")]]),
]

# Every type an upload may declare (the schema's list, docchat.serve.routes.documents) carries
# a PDF: the type goes with any name, and a name says how the bytes are read, so a PDF under a
# .pdf name is the one body valid whatever name the fuzzer picks (under another, the document
# fails later, with its reason).
schemathesis.openapi.media_type(
    "application/pdf",
    st.sampled_from(PDFS),
    aliases=[kind for kind in UPLOAD_TYPES if kind != "application/pdf"],
)
