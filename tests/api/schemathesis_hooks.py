"""Schemathesis hooks for tests/api/test_schema.py (SCHEMATHESIS_HOOKS): what a PDF is.

The upload's body is `format: binary` in the schema, which says nothing of what makes bytes a
PDF; left to itself the fuzzer sends random bytes, which the API refuses (415) as it should.
This gives it small real PDFs for its valid uploads.
"""

from __future__ import annotations

import schemathesis
from hypothesis import strategies as st

from tests.pdfgen import make_pdf

PDFS = [
    make_pdf([[("h1", "Ferries"), ("body", "The ferry to the island leaves every hour.")]]),
    make_pdf([[("h1", "Bridges"), ("body", "A new bridge opened in 2004.")], [("body", "Tolls")]]),
]

schemathesis.openapi.media_type(
    "application/pdf",
    st.sampled_from(PDFS),
    aliases=["application/x-pdf", "application/octet-stream"],
)
