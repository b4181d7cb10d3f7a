"""Word, PowerPoint and Excel files through the real state machine (moto) and handlers: each
type's object event reaches its converter through the one Convert step, ends INDEXED with
its locations' labels kept for citations, and a file that cannot be read ends FAILED with
the same registry states and typed reasons as a PDF's."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from docchat.answer.citations import citations_for_answer
from docchat.ingest.decision import doc_id_for
from docchat.models import DocStatus
from tests import officegen
from tests.functions.conftest import DOCS_BUCKET, Pipeline


def _doc_id(key: str) -> str:
    return doc_id_for(f"{DOCS_BUCKET}/{key}")


@pytest.mark.parametrize(
    ("key", "make", "pages", "claim", "label", "quote"),
    [
        (
            "team/report.docx",
            officegen.docx_file,
            2,
            "Region 2 had revenue 2,000 and growth 2% [1].",
            "Section: Chapter 1 > Scope 1",
            "| Region 2 | 2,000 | 2% |",
        ),
        (
            "team/deck.pptx",
            officegen.pptx_file,
            2,
            "Revenue grew in quarter 2 [1].",
            "Slide 2: Quarterly results 2",
            "- Revenue grew in quarter 2",
        ),
        (
            "team/book.xlsx",
            officegen.xlsx_file,
            1,
            "Region 2 sold 20 units for $2,469.00 revenue [1].",
            "Sheet 'Revenue' A1:E4",
            "| Region 2 | 20 | $2,469.00 | 2.0% | 2024-01-01 |",
        ),
    ],
)
def test_office_upload_is_indexed_and_cited_by_its_location(
    pipeline: Pipeline,
    key: str,
    make: Callable[[], bytes],
    pages: int,
    claim: str,
    label: str,
    quote: str,
) -> None:
    execution = pipeline.upload(key, make())

    assert execution["status"] == "SUCCEEDED", execution
    record = pipeline.services.registry.get(_doc_id(key))
    assert record is not None
    assert (record.status, record.pages) == (DocStatus.INDEXED, pages)
    chunks = pipeline.services.index.document_chunks(record.doc_id)
    assert len(chunks) == record.chunks
    cited = [c for chunk in chunks for c in citations_for_answer(claim, [chunk])]
    assert any(c.label == label and c.quote == quote for c in cited), cited


@pytest.mark.parametrize(
    ("key", "data", "code", "words"),
    [
        ("locked.docx", officegen.encrypted(officegen.docx_file()), "encrypted_file", "password"),
        ("broken.xlsx", b"PK\x03\x04" + bytes(256), "corrupt_file", "not a readable .xlsx"),
        ("macros.pptm", officegen.pptx_file(slides=1), "has_macros", "contains macros"),
        ("photo.png", b"\x89PNG\r\n", "unsupported_format", "not a file type docchat reads"),
        ("bomb.docx", officegen.zip_bomb_docx(inflated_mib=300), "zip_bomb", "zip bombs"),
    ],
)
def test_an_unreadable_office_file_fails_with_its_reason(
    pipeline: Pipeline, key: str, data: bytes, code: str, words: str
) -> None:
    execution = pipeline.upload(key, data)

    assert execution["status"] == "FAILED"
    record = pipeline.services.registry.get(_doc_id(key))
    assert record is not None and record.status == DocStatus.FAILED
    assert (record.error_code, words in record.error) == (code, True), record.error
    assert pipeline.services.index.count(record.doc_id) == 0
