"""GET /documents/{id}/file, the viewer's PDF: a registered document's own file locally (guarded
like every route of `docchat serve`), a short-lived presigned S3 GET in the cloud."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import boto3
import httpx
import pytest
from botocore.config import Config
from fastapi.testclient import TestClient

from docchat.adapters.s3_uploads import VIEW_EXPIRES_S, S3Files
from docchat.answer.backend import ChatBackend
from docchat.errors import DocumentFileError
from docchat.models import DocStatus, DocumentRecord
from docchat.serve.app import create_app
from tests.api.guarded import PDF, GuardedServer
from tests.chatkit import library, tuned_config

__all__ = ["library"]  # the fixture
BUCKET = "docchat-documents-123"


def _register(server: GuardedServer, source: str, *, version: str) -> str:
    record = DocumentRecord(
        doc_id="ferries-1",
        source=source,
        title="Ferries",
        version=version,
        status=DocStatus.INDEXED,
        pages=1,
    )
    server.index.set_record(record)
    return record.doc_id


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GuardedServer]:
    with GuardedServer(tmp_path / "data") as running:
        yield running


def test_document_file_is_the_registered_pdf(server: GuardedServer, tmp_path: Path) -> None:
    # Given a PDF indexed from a folder outside the data directory
    pdf = tmp_path / "pdfs" / "ferries.pdf"
    pdf.parent.mkdir()
    pdf.write_bytes(PDF)
    doc_id = _register(server, str(pdf), version=hashlib.sha256(PDF).hexdigest())

    # When the viewer asks for it, then it gets the bytes, as a PDF shown inline
    response = httpx.get(f"{server.url}/documents/{doc_id}/file", timeout=10)
    assert response.status_code == 200
    assert response.content == PDF
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["content-disposition"].startswith("inline")
    assert "ferries.pdf" in response.headers["content-disposition"]


def test_document_file_refuses_a_changed_or_missing_file(
    server: GuardedServer, tmp_path: Path
) -> None:
    pdf = tmp_path / "ferries.pdf"
    pdf.write_bytes(PDF + b"\n% edited after indexing")
    doc_id = _register(server, str(pdf), version=hashlib.sha256(PDF).hexdigest())

    changed = httpx.get(f"{server.url}/documents/{doc_id}/file", timeout=10)
    assert changed.status_code == 409
    assert changed.json()["error"]["code"] == "document_file_changed"
    assert "ingest it again" in changed.json()["error"]["message"]

    pdf.unlink()
    missing = httpx.get(f"{server.url}/documents/{doc_id}/file", timeout=10)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "document_file_unavailable"
    assert str(tmp_path) not in missing.text


def test_document_file_reads_no_path_but_a_record_source(
    server: GuardedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A relative source (a cloud record's bucket/key) is never read relative to the server's
    # working directory, even where such a file exists.
    (tmp_path / "bucket").mkdir()
    (tmp_path / "bucket" / "ferries.pdf").write_bytes(PDF)
    monkeypatch.chdir(tmp_path)
    doc_id = _register(server, "bucket/ferries.pdf", version=hashlib.sha256(PDF).hexdigest())
    assert httpx.get(f"{server.url}/documents/{doc_id}/file", timeout=10).status_code == 404

    unknown = httpx.get(f"{server.url}/documents/ferries-2/file", timeout=10)
    assert unknown.status_code == 404
    assert "GET /documents lists them" in unknown.json()["error"]["message"]
    # An id is never a path: one that tries to be matches no document (or no route).
    climbing = httpx.get(f"{server.url}/documents/..%2F..%2Fetc%2Fpasswd/file", timeout=10)
    assert climbing.status_code == 404


def test_document_file_is_guarded_like_every_route(server: GuardedServer, tmp_path: Path) -> None:
    pdf = tmp_path / "ferries.pdf"
    pdf.write_bytes(PDF)
    doc_id = _register(server, str(pdf), version=hashlib.sha256(PDF).hexdigest())
    foreign = httpx.get(
        f"{server.url}/documents/{doc_id}/file", headers={"Host": "evil.example"}, timeout=10
    )
    assert foreign.status_code in (400, 403, 421)
    assert foreign.content != PDF


def _s3_client() -> object:
    return boto3.client(
        "s3",
        region_name="eu-west-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "virtual"}),
    )


def test_cloud_document_file_is_a_short_lived_presigned_get(
    dummy_aws: None, library: object
) -> None:
    # Given a document of the documents bucket, served the way the cloud app serves it
    record = DocumentRecord(
        doc_id="report-1",
        source=f"{BUCKET}/uploads/ab12/report.pdf",
        title="Report",
        version="v",
        status=DocStatus.INDEXED,
    )
    backend = ChatBackend(library=library, model=None, config=tuned_config())  # type: ignore[arg-type]
    backend.library.registry.set_record(record)  # type: ignore[attr-defined]
    files = S3Files(client=_s3_client(), bucket=BUCKET)
    client = TestClient(create_app(lambda: backend, files=lambda _: files))

    # When the viewer asks for the file, then it gets a presigned GET of that object
    response = client.get("/documents/report-1/file")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["expires_in"] == VIEW_EXPIRES_S == 300
    url = urlsplit(body["url"])
    query = parse_qs(url.query)
    # https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
    assert url.hostname == f"{BUCKET}.s3.eu-west-1.amazonaws.com"
    assert url.path == "/uploads/ab12/report.pdf"
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert query["X-Amz-Expires"] == ["300"]
    assert query["response-content-type"] == ["application/pdf"]


def test_cloud_document_file_stays_inside_the_documents_bucket(dummy_aws: None) -> None:
    files = S3Files(client=_s3_client(), bucket=BUCKET)
    record = DocumentRecord(doc_id="x-1", source="another-bucket/x.pdf", title="X")
    with pytest.raises(DocumentFileError, match="outside the documents bucket"):
        files.pdf(record)
