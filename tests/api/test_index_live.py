"""The index under `docchat serve` (issue 30, issue 27): a document uploaded while it runs is
found by the next question without reading the index again, and the same bytes under a second
name are a document of their own, over a real uvicorn."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.guarded import GuardedServer
from tests.pdfgen import make_pdf

FERRY = make_pdf([[("h1", "Ferries"), ("body", "The ferry to the island leaves every hour.")]])
LIGHTHOUSE = make_pdf(
    [[("h1", "Lighthouse"), ("body", "The lighthouse keeper winds the lamp at dusk.")]]
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GuardedServer]:
    with GuardedServer(tmp_path / "data") as running:
        yield running


def _upload(server: GuardedServer, filename: str, data: bytes) -> str:
    posted = httpx.post(
        f"{server.url}/documents",
        params={"filename": filename},
        content=data,
        headers={"content-type": "application/pdf"},
        timeout=30,
    )
    assert posted.status_code == 202, posted.text
    doc_id = str(posted.json()["doc_id"])
    server.wait(doc_id)
    return doc_id


def _cited(server: GuardedServer, question: str) -> set[str]:
    """The documents the answer to `question` cites (every doc_id its events name)."""
    body = {"messages": [{"role": "user", "content": question}]}
    with (
        httpx.Client(timeout=60) as client,
        client.stream("POST", f"{server.url}/chat", json=body) as response,
    ):
        assert response.status_code == 200, response.read()
        data = [json.loads(x[6:]) for x in response.iter_lines() if x.startswith("data: ")]
    found: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("doc_id"), str):
                found.add(value["doc_id"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(data)
    return found


def test_a_document_uploaded_while_serving_is_found_by_the_next_question_without_a_reload(
    server: GuardedServer,
) -> None:
    ferry = _upload(server, "ferry.pdf", FERRY)
    assert ferry in _cited(server, "When does the ferry to the island leave?")
    live = server.index._live
    loads = live.loads

    lighthouse = _upload(server, "lighthouse.pdf", LIGHTHOUSE)
    cited = _cited(server, "When does the lighthouse keeper wind the lamp?")

    assert lighthouse in cited
    # Counted: the search applied the write; it read no index whole again
    assert live.loads == loads


@pytest.mark.parametrize("deleted", ["original", "copy"])
def test_a_duplicate_upload_is_a_document_of_its_own(server: GuardedServer, deleted: str) -> None:
    original = _upload(server, "ferry.pdf", FERRY)

    # The same bytes under another name: accepted, and indexed at once without embedding
    copy = _upload(server, "ferry-copy.pdf", FERRY)

    assert copy != original
    listed = {d["doc_id"]: d for d in httpx.get(f"{server.url}/documents").json()["documents"]}
    assert {original, copy} <= set(listed)
    assert listed[copy]["status"] == "INDEXED"
    for doc_id in (original, copy):
        page = httpx.get(f"{server.url}/documents/{doc_id}/pages/1")
        assert page.status_code == 200
        assert "leaves every hour" in page.json()["text"]
        assert httpx.get(f"{server.url}/documents/{doc_id}/file").content == FERRY

    # Deleting either leaves the other whole: listed, readable, found
    gone, kept = (original, copy) if deleted == "original" else (copy, original)
    assert httpx.delete(f"{server.url}/documents/{gone}").status_code in (200, 202)
    listed_ids = [d["doc_id"] for d in httpx.get(f"{server.url}/documents").json()["documents"]]
    assert listed_ids == [kept]
    assert httpx.get(f"{server.url}/documents/{kept}/pages/1").status_code == 200
    assert httpx.get(f"{server.url}/documents/{kept}/file").content == FERRY
    assert httpx.get(f"{server.url}/documents/{gone}/pages/1").status_code == 404
    cited = _cited(server, "When does the ferry to the island leave?")
    assert kept in cited and gone not in cited
