"""GET /documents/{id}/pages/{n}: a page's text as conversion extracted it, over a real uvicorn."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests import officegen
from tests.api.guarded import GuardedServer
from tests.pdfgen import make_pdf

PDF = make_pdf(
    [
        [("h1", "Ferries"), ("body", "The ferry to the island leaves every hour.")],
        [("h2", "Fares"), ("body", "A return ticket costs twelve euros.")],
    ]
)
ODD = "Q3 [draft] résumé #2 (final).pdf"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GuardedServer]:
    with GuardedServer(tmp_path / "data") as running:
        yield running


def _upload(
    server: GuardedServer, filename: str, data: bytes = PDF, kind: str = "application/pdf"
) -> str:
    posted = httpx.post(
        f"{server.url}/documents",
        params={"filename": filename},
        content=data,
        headers={"content-type": kind},
    )
    assert posted.status_code == 202, posted.text
    doc_id = str(posted.json()["doc_id"])
    server.wait(doc_id)
    return doc_id


def test_page_route_returns_page_text_and_ocr_flag(server: GuardedServer) -> None:
    doc_id = _upload(server, ODD)

    first = httpx.get(f"{server.url}/documents/{doc_id}/pages/1")
    second = httpx.get(f"{server.url}/documents/{doc_id}/pages/2")

    assert first.status_code == 200
    assert first.json() == {
        "page": 1,
        "text": "# Ferries\n\nThe ferry to the island leaves every hour.",
        "ocr": False,
        "kind": "page",
        "label": "",
    }
    assert second.json() == {
        "page": 2,
        "text": "## Fares\n\nA return ticket costs twelve euros.",
        "ocr": False,
        "kind": "page",
        "label": "",
    }


@pytest.mark.parametrize(
    ("name", "make", "number", "kind", "label", "line"),
    [
        ("deck.pptx", officegen.pptx_file, 2, "slide", "Slide 2: Quarterly results 2", "Notes:"),
        ("book.xlsx", officegen.xlsx_file, 1, "sheet", "Sheet 'Revenue' A1:E4", "| Region 3 |"),
        ("report.docx", officegen.docx_file, 2, "section", "Section: Chapter 1 > Scope 1", "|"),
    ],
)
def test_page_route_serves_a_slide_sheet_or_section_with_its_label(
    server: GuardedServer,
    name: str,
    make: Callable[[], bytes],
    number: int,
    kind: str,
    label: str,
    line: str,
) -> None:
    doc_id = _upload(server, name, make(), "application/octet-stream")

    page = httpx.get(f"{server.url}/documents/{doc_id}/pages/{number}").json()

    assert (page["page"], page["kind"], page["label"]) == (number, kind, label)
    assert line in page["text"]


@pytest.mark.parametrize("number", ["3", "0", "-1", "999999"])
def test_page_out_of_range_is_404_in_the_error_shape(server: GuardedServer, number: str) -> None:
    doc_id = _upload(server, ODD)

    answer = httpx.get(f"{server.url}/documents/{doc_id}/pages/{number}")

    assert answer.status_code == 404
    error = answer.json()["error"]
    assert (error["status"], error["code"]) == (404, "page_not_found")
    assert error["message"].startswith(f"{doc_id} has 2 pages:")
    assert "ask for 1-2" in error["message"]


@pytest.mark.parametrize("doc_id", ["no-such-doc-00000000", "Q3 [draft] résumé #2.pdf"])
def test_unknown_document_is_404_in_the_error_shape(server: GuardedServer, doc_id: str) -> None:
    _upload(server, ODD)  # a file name is not an id

    answer = httpx.get(f"{server.url}/documents/{quote(doc_id, safe='')}/pages/1")

    assert answer.status_code == 404
    assert answer.json() == {
        "error": {
            "status": 404,
            "code": "not_found",
            "request_id": answer.headers["x-request-id"],
            "message": f"no document with id {doc_id!r}: GET /documents or `docchat status` "
            "lists them",
        }
    }


def test_page_that_is_not_a_number_is_422(server: GuardedServer) -> None:
    doc_id = _upload(server, ODD)

    answer = httpx.get(f"{server.url}/documents/{doc_id}/pages/two")

    assert answer.status_code == 422
    assert answer.json()["error"]["status"] == 422


def test_documents_list_shows_file_name_beside_title(server: GuardedServer) -> None:
    doc_id = _upload(server, ODD)

    listed = httpx.get(f"{server.url}/documents").json()["documents"]
    one = httpx.get(f"{server.url}/documents/{doc_id}").json()

    assert [(d["title"], d["file_name"]) for d in listed] == [("Ferries", ODD)]
    assert (one["title"], one["file_name"], one["source"]) == ("Ferries", ODD, ODD)
