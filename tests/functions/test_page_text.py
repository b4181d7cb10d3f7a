"""The cloud keeps what Convert extracted from each page, for GET /documents/{id}/pages/{n}:
written beyond the run's expiring artifacts, read by the chat app without a PDF engine, and
deleted with the document."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest
from botocore.exceptions import ClientError

from docchat.answer.backend import ChatBackend
from docchat.ingest.artifacts import pages_key
from docchat.ingest.decision import doc_id_for, version_of
from docchat.ingest.pagetext import S3PageStore
from docchat.search.library import Library
from docchat.wiring.cloud import CloudServices, services
from tests.chatkit import SEARCH, tuned_config
from tests.functions.conftest import ARTIFACTS_BUCKET, DOCS_BUCKET, Pipeline
from tests.pdfgen import make_pdf

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

KEY = "reports/Q3 [draft] résumé #2.pdf"
PDF = make_pdf(
    [
        [("h1", "Locks"), ("body", "The lock opens at dawn for the first barge.")],
        [("h2", "Tolls"), ("body", "Barges pay by the tonne.")],
    ]
)


def _chat_services(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> CloudServices:
    """The chat function's services, from its settings beside the pipeline's (the stack sets
    its conversations table), over the index and embedder the handlers use."""
    monkeypatch.setenv("DOCCHAT_CONVERSATIONS_TABLE", "docchat-conversations")
    live = services("chat")
    live.__dict__.update(index=pipeline.services.index, embedder=pipeline.services.embedder)
    return live


def _client(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    """The chat app over the chat function's services (extractive: no model)."""
    # Imported here, once the fixture has set the environment: the app's modules make their
    # Powertools objects on import, and those keep the settings they saw then.
    from fastapi.testclient import TestClient

    from docchat.serve.app import create_app

    live = _chat_services(pipeline, monkeypatch)
    library = Library(
        index=live.index,
        embedder=live.embedder,
        registry=live.registry,
        page_store=live.page_store,
        **SEARCH,
    )
    backend = ChatBackend(library=library, model=None, config=tuned_config())
    return TestClient(create_app(lambda: backend))


def test_convert_keeps_pages_outside_the_expiring_artifacts(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    execution = pipeline.upload(KEY, PDF)

    assert execution["status"] == "SUCCEEDED", execution
    doc_id, version = doc_id_for(f"{DOCS_BUCKET}/{KEY}"), version_of(PDF)
    key = pages_key(doc_id, version)
    assert key == f"pages/{doc_id}/{version}.json"  # the template expires artifacts/ only
    page_store = _chat_services(pipeline, monkeypatch).page_store
    assert isinstance(page_store, S3PageStore)
    pages = page_store.stored_pages(doc_id, version)
    assert [(p.number, p.markdown, p.ocr) for p in pages or []] == [
        (1, "# Locks\n\nThe lock opens at dawn for the first barge.", False),
        (2, "## Tolls\n\nBarges pay by the tonne.", False),
    ]


def test_chat_app_reads_a_page_and_forgets_it_with_the_document(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline.upload(KEY, PDF)
    doc_id = doc_id_for(f"{DOCS_BUCKET}/{KEY}")
    client = _client(pipeline, monkeypatch)

    page = client.get(f"/documents/{quote(doc_id)}/pages/2")
    beyond = client.get(f"/documents/{quote(doc_id)}/pages/3")
    listed = client.get("/documents").json()["documents"]

    assert page.json() == {
        "page": 2,
        "text": "## Tolls\n\nBarges pay by the tonne.",
        "ocr": False,
        "kind": "page",
        "label": "",
    }
    assert (beyond.status_code, beyond.json()["error"]["code"]) == (404, "page_not_found")
    assert [(d["title"], d["file_name"]) for d in listed] == [("Locks", "Q3 [draft] résumé #2.pdf")]

    assert pipeline.delete(KEY)["status"] == "SUCCEEDED"

    gone = client.get(f"/documents/{quote(doc_id)}/pages/1")
    assert (gone.status_code, gone.json()["error"]["code"]) == (404, "not_found")
    left = pipeline.s3.list_objects_v2(Bucket=ARTIFACTS_BUCKET, Prefix="pages/")
    assert left.get("KeyCount", 0) == 0


def _kept_pages(pipeline: Pipeline) -> list[str]:
    listed = pipeline.s3.list_objects_v2(Bucket=ARTIFACTS_BUCKET, Prefix="pages/")
    return sorted(item["Key"] for item in listed.get("Contents", []))


def test_a_versions_page_text_goes_with_the_version(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a document indexed, then replaced by new bytes
    doc_id = doc_id_for(f"{DOCS_BUCKET}/{KEY}")
    pipeline.upload(KEY, PDF)
    second = make_pdf([[("h1", "Weirs"), ("body", "The weir holds the river back.")]])
    assert pipeline.upload(KEY, second)["status"] == "SUCCEEDED"

    # Then only the indexed version's page text is kept
    assert _kept_pages(pipeline) == [pages_key(doc_id, version_of(second))]

    # When a third version fails after Convert kept its pages
    third = make_pdf([[("h1", "Sluices"), ("body", "The sluice lets water through.")]])
    denied = {"Error": {"Code": "AccessDeniedException", "Message": "not subscribed"}}

    def refuse(**_: object) -> None:
        raise ClientError(denied, "InvokeModel")

    monkeypatch.setattr(pipeline.services.bedrock, "invoke_model", refuse)
    failed = pipeline.upload(KEY, third)

    # Then the failed run keeps only its own version's pages (the document now says FAILED)
    assert failed["status"] == "FAILED", failed
    assert _kept_pages(pipeline) == [pages_key(doc_id, version_of(third))]
