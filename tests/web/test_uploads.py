"""Uploads and deletions through the API: direct into the data directory, or presigned S3."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import boto3
import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from docchat.adapters.s3_uploads import S3Uploads
from docchat.answer.backend import ChatBackend
from docchat.config import Settings
from docchat.errors import (
    DocumentNotFoundError,
    NotPdfError,
    UnsupportedUploadError,
    UploadTooLargeError,
)
from docchat.ingest.decision import doc_id_for
from docchat.ingest.shelf import Shelf
from docchat.ingest.uploads import (
    LocalUploads,
    check_upload,
    display_name,
    upload_path,
)
from docchat.models import DocStatus, DocumentRecord
from docchat.search.library import Library
from docchat.serve import app as api
from docchat.serve.access import ADMIN
from docchat.serve.app import create_app
from tests.chatkit import SEARCH, local_parts, tuned_config
from tests.conftest import EXAMPLES, WordEmbedder
from tests.pdfgen import make_pdf

BUCKET = "docchat-documents-test"
PDF = make_pdf([[("h1", "Ferries"), ("body", "The ferry to the island leaves every hour.")]])


class Local:
    """A local app over a temporary data directory, with its index and uploads at hand."""

    def __init__(self, data_dir: Path) -> None:
        self.settings = Settings(data_dir=data_dir)
        parts = local_parts(self.settings)
        self.index, self.uploads, backend = parts.index, parts.uploads, parts.backend
        self.client = TestClient(create_app(lambda: backend, uploads=lambda _: self.uploads))

    def wait(self, doc_id: str) -> DocumentRecord:
        deadline = time.monotonic() + 30
        while True:
            record = self.index.document(doc_id)
            if record and record.status in (DocStatus.INDEXED, DocStatus.FAILED):
                return record
            assert time.monotonic() < deadline, f"{doc_id} is still {record}"
            time.sleep(0.05)


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    app = Local(tmp_path / "data")
    yield app
    app.uploads.close()
    app.index.close()


def _post(
    local: Local, name: str, body: bytes, kind: str = "application/pdf"
) -> tuple[int, dict[str, Any]]:
    response = local.client.post(
        "/documents", params={"filename": name}, content=body, headers={"content-type": kind}
    )
    return response.status_code, response.json()


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("My Report (final).PDF", "My Report (final).PDF"),
        ("../../etc/passwd.pdf", "passwd.pdf"),
        ("C:\\Users\\me\\Übersicht.pdf", "Übersicht.pdf"),
        (".hidden.pdf", ".hidden.pdf"),
        ("日本語.pdf", "日本語.pdf"),
        ("a\x00b\nc.pdf", "a_b_c.pdf"),
        ("CON.pdf", "CON_.pdf"),
        ("x" * 300 + ".pdf", "x" * 196 + ".pdf"),
        ("契" * 100 + ".pdf", "契" * 65 + ".pdf"),
    ],
)
def test_display_name_is_the_users_own_file_name(filename: str, expected: str) -> None:
    assert display_name(filename) == expected


def test_check_upload_names_what_is_wrong() -> None:
    with pytest.raises(UnsupportedUploadError, match=r"'photo.png' is not a file type docchat"):
        check_upload("photo.png", PDF)
    with pytest.raises(UnsupportedUploadError, match=r"upload a PDF, \.docx, \.pptx, \.xlsx"):
        check_upload("old.xls", b"\xd0\xcf\x11\xe0")
    with pytest.raises(NotPdfError, match="no %PDF- header"):
        check_upload("notes.pdf", b"hello")
    with pytest.raises(UnsupportedUploadError, match="empty"):
        check_upload("notes.pdf", b"")
    check_upload("notes.txt", b"hello")  # every type docchat reads is accepted
    check_upload("Report.DOCX", b"PK\x03\x04")


def test_upload_queues_the_pdf_then_indexes_it(local: Local) -> None:
    # When a PDF is posted
    status, answer = _post(local, "Ferry times.pdf", PDF)

    # Then it is saved under uploads/ and registered QUEUED at once, INDEXED later
    saved = (local.settings.data_dir / "uploads" / upload_path("Ferry times.pdf")).resolve()
    assert status == 202
    assert answer["status"] == "QUEUED"
    assert answer["doc_id"] == doc_id_for(str(saved))
    assert answer["source"] == "Ferry times.pdf"  # the name: the path stays on the server
    stored = local.index.document(answer["doc_id"])
    assert stored is not None and stored.source == str(saved)
    assert saved.read_bytes() == PDF
    record = local.wait(answer["doc_id"])
    assert record.status == DocStatus.INDEXED
    assert record.pages == 1 and record.chunks == 1
    listed = local.client.get("/documents").json()["documents"]
    assert [d["status"] for d in listed] == ["INDEXED"]


def test_upload_of_a_damaged_pdf_ends_failed_with_the_reason(local: Local) -> None:
    _, answer = _post(local, "broken.pdf", b"%PDF-1.7 this is not really a PDF")

    record = local.wait(answer["doc_id"])

    assert record.status == DocStatus.FAILED
    assert record.error_code == "malformed_pdf"
    assert "upload it again" in record.error


def test_upload_of_the_same_bytes_again_is_unchanged(local: Local) -> None:
    _, first = _post(local, "ferries.pdf", PDF)
    indexed = local.wait(first["doc_id"])

    status, again = _post(local, "ferries.pdf", PDF)

    assert status == 202
    assert again["status"] == "INDEXED"
    assert again["updated_at"] == indexed.updated_at


def test_upload_refuses_what_docchat_does_not_read(local: Local) -> None:
    answers = [
        _post(local, "notes.exe", PDF),
        _post(local, "notes.pdf", PDF, kind="text/plain"),
        _post(local, "notes.pdf", b"hello"),
        # text/plain is what another site's page may send without asking: never accepted.
        _post(local, "notes.txt", b"hello", kind="text/plain"),
    ]

    assert [status for status, _ in answers] == [415] * 4
    messages = [body["error"]["message"] for _, body in answers]
    assert "'notes.exe' is not a file type docchat reads: upload a PDF, .docx" in messages[0]
    assert (
        "the body is text/plain: send the file with Content-Type: application/pdf" in (messages[1])
    )
    assert "no %PDF- header" in messages[2]
    assert "send the file with Content-Type: application/octet-stream" in messages[3]
    assert local.index.documents() == []


def test_upload_refuses_a_body_over_the_limit(
    local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api, "MAX_UPLOAD_BYTES", 1024)
    small = Local(local.settings.data_dir.with_name("small"))  # the limit is set at start

    # A streamed body has no Content-Length: the limit holds while reading
    def body() -> Iterator[bytes]:
        yield b"%PDF-1.7 " + b"x" * 2000

    try:
        response = small.client.post(
            "/documents",
            params={"filename": "big.pdf"},
            content=body(),
            headers={"content-type": "application/pdf"},
        )
    finally:
        small.uploads.close()
        small.index.close()

    assert response.status_code == 413
    assert "larger than" in response.json()["error"]["message"]


def test_upload_accepts_a_body_over_the_chat_limit(local: Local) -> None:
    # The body limit of /chat is 512 KiB; an upload may be far larger
    big = (EXAMPLES / "dmca.pdf").read_bytes() + b"\n%" + b"0" * api.MAX_BODY_BYTES

    status, _ = _post(local, "dmca.pdf", big)

    assert status == 202


def test_upload_url_is_refused_when_uploads_are_direct(local: Local) -> None:
    response = local.client.post("/documents/upload-url", json={"filename": "a.pdf", "size": 10})

    assert response.status_code == 409
    assert "POST the PDF to /documents" in response.json()["error"]["message"]


def test_delete_forgets_the_document_and_its_uploaded_file(local: Local) -> None:
    _, answer = _post(local, "ferries.pdf", PDF)
    doc_id = answer["doc_id"]
    local.wait(doc_id)

    response = local.client.delete(f"/documents/{doc_id}")

    assert response.status_code == 200
    assert response.json() == {"doc_id": doc_id, "status": "deleted"}
    assert local.client.get(f"/documents/{doc_id}").status_code == 404
    assert not (local.settings.data_dir / "uploads" / upload_path("ferries.pdf")).exists()
    assert local.index.count() == 0


def test_delete_keeps_a_file_that_was_not_uploaded(local: Local, tmp_path: Path) -> None:
    # Given a document ingested from the user's own folder (docchat ingest)
    own = tmp_path / "mine.pdf"
    own.write_bytes(PDF)
    local.index.set_record(DocumentRecord(doc_id="mine", source=str(own), title="mine"))

    assert local.client.delete("/documents/mine").status_code == 200

    assert own.read_bytes() == PDF


def test_delete_of_an_unknown_document_is_404(local: Local) -> None:
    response = local.client.delete("/documents/nope")

    assert response.status_code == 404
    assert "GET /documents lists them" in response.json()["error"]["message"]


def test_delete_during_indexing_leaves_nothing_behind(local: Local) -> None:
    _, answer = _post(local, "ferries.pdf", PDF)
    local.client.delete(f"/documents/{answer['doc_id']}")

    local.uploads.close()

    assert local.index.documents() == []
    assert local.index.count() == 0


def test_unfinished_uploads_are_queued_again_after_a_restart(local: Local) -> None:
    # Given an upload the previous server left QUEUED, and that server gone
    local.uploads.close()
    path = (local.settings.data_dir / "uploads" / upload_path("ferries.pdf")).resolve()
    path.parent.mkdir(parents=True)
    path.write_bytes(PDF)
    doc_id = doc_id_for(str(path))
    local.index.set_record(DocumentRecord(doc_id=doc_id, source=str(path), title="ferries"))

    # When the uploads start again
    restarted = LocalUploads(
        shelf=Shelf(local.index, local.index, local.index),
        embedder=local.uploads.embedder,
        settings=local.settings,
    )
    restarted.close()

    record = local.index.document(doc_id)
    assert record is not None and record.status == DocStatus.INDEXED


def test_config_tells_the_page_how_uploads_work(local: Local) -> None:
    config = local.client.get("/config").json()

    assert config == {
        "upload": "direct",
        "max_upload_bytes": 100 * 1024 * 1024,
        "answers": "extractive",
        # The chat limits (docchat.limits), which the page checks before it sends
        "limits": {
            "max_messages": 50,
            "max_message_chars": 20_000,
            "max_total_chars": 100_000,
            "max_doc_ids": 100,
            "max_title_chars": 120,
            "max_feedback_chars": 2000,
        },
    }


def test_page_and_its_files_are_served(local: Local) -> None:
    page = local.client.get("/")
    script = local.client.get("/static/app.js")
    stream = local.client.get("/static/stream.js")
    style = local.client.get("/static/style.css")

    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="static/app.js">' in page.text
    assert 'aria-live="polite"' in page.text
    # A module script must be served as JavaScript, or the browser refuses to run it
    for served in (script, stream):
        assert served.status_code == 200
        assert served.headers["content-type"].startswith("text/javascript")
    assert 'from "./chat.js"' in script.text and "sseEvents" in stream.text
    assert style.status_code == 200


def test_without_uploads_the_documents_are_read_only(local: Local) -> None:
    backend = ChatBackend(
        library=Library(index=local.index, embedder=WordEmbedder(), registry=local.index, **SEARCH),
        model=None,
        config=tuned_config(),
    )
    client = TestClient(create_app(lambda: backend))

    posted = client.post("/documents", params={"filename": "a.pdf"}, content=PDF)

    assert posted.status_code == 501
    assert "docchat ingest" in posted.json()["error"]["message"]
    assert client.delete("/documents/x").status_code == 501
    assert client.get("/config").json()["upload"] == "none"


# --- the cloud: presigned uploads into the documents bucket -------------------------------------


class Registry:
    def __init__(self, *records: DocumentRecord) -> None:
        self.records = {r.doc_id: r for r in records}

    def documents(self) -> list[DocumentRecord]:
        return list(self.records.values())

    def document(self, doc_id: str) -> DocumentRecord | None:
        return self.records.get(doc_id)

    def revision(self) -> None:
        return None


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("s3", region_name="eu-west-1")
        client.create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
        )
        yield client


def _cloud_client(uploads: S3Uploads) -> TestClient:
    library = Library(index=None, embedder=WordEmbedder(), registry=uploads.registry, **SEARCH)  # type: ignore[arg-type]
    backend = ChatBackend(library=library, model=None, config=tuned_config())
    return TestClient(create_app(lambda: backend, uploads=lambda _: uploads))


def test_upload_url_signs_a_put_of_exactly_that_pdf(s3: object) -> None:
    from docchat.wiring.cloud import s3_uploads

    uploads = s3_uploads(bucket=BUCKET, region="eu-west-1", registry=Registry())
    client = _cloud_client(uploads)

    response = client.post(
        "/documents/upload-url", json={"filename": "Q3 report.pdf", "size": 1234}
    )

    assert response.status_code == 200
    ticket = response.json()
    url = urlparse(ticket["url"])
    query = parse_qs(url.query)
    assert url.hostname == f"{BUCKET}.s3.eu-west-1.amazonaws.com"
    key = f"uploads/{upload_path('Q3 report.pdf').as_posix()}"
    assert url.path == "/" + key.replace(" ", "%20")
    assert query["X-Amz-Expires"] == ["900"]
    assert query["X-Amz-SignedHeaders"] == ["content-length;content-type;host"]
    assert ticket["method"] == "PUT"
    assert ticket["headers"] == {"Content-Type": "application/pdf"}
    assert ticket["key"] == key and key.endswith("/Q3 report.pdf")
    assert ticket["doc_id"] == doc_id_for(f"{BUCKET}/{key}")
    assert client.get("/config").json()["upload"] == "presigned"


def test_upload_url_refuses_what_cannot_be_indexed(s3: object) -> None:
    uploads = S3Uploads(client=s3, bucket=BUCKET, registry=Registry())
    client = _cloud_client(uploads)

    too_big = client.post(
        "/documents/upload-url", json={"filename": "a.pdf", "size": 100 * 1024 * 1024 + 1}
    )
    not_read = client.post("/documents/upload-url", json={"filename": "a.exe", "size": 10})
    docx = client.post("/documents/upload-url", json={"filename": "a.docx", "size": 10})
    direct = client.post("/documents", params={"filename": "a.pdf"}, content=PDF)

    assert too_big.status_code == 413 and "split the document" in too_big.json()["error"]["message"]
    assert not_read.status_code == 415
    assert "'a.exe' is not a file type docchat reads" in not_read.json()["error"]["message"]
    assert docx.status_code == 200
    assert docx.json()["headers"] == {
        "Content-Type": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    }
    assert direct.status_code == 409
    assert "/documents/upload-url" in direct.json()["error"]["message"]


def test_delete_in_the_cloud_removes_the_object(s3: object) -> None:
    s3.put_object(Bucket=BUCKET, Key="uploads/a.pdf", Body=PDF)  # type: ignore[attr-defined]
    record = DocumentRecord(doc_id="a-1", source=f"{BUCKET}/uploads/a.pdf", title="a")
    client = _cloud_client(S3Uploads(client=s3, bucket=BUCKET, registry=Registry(record)))

    response = client.delete("/documents/a-1")

    assert response.status_code == 202
    assert response.json() == {"doc_id": "a-1", "status": "deleting"}
    listed = s3.list_objects_v2(Bucket=BUCKET)  # type: ignore[attr-defined]
    assert listed.get("KeyCount") == 0


def test_delete_in_the_cloud_refuses_other_buckets_and_unknown_ids(s3: object) -> None:
    record = DocumentRecord(doc_id="b-1", source="another-bucket/b.pdf", title="b")
    uploads = S3Uploads(client=s3, bucket=BUCKET, registry=Registry(record))

    with pytest.raises(DocumentNotFoundError):
        uploads.remove("nope")
    response = _cloud_client(uploads).delete("/documents/b-1")

    assert response.status_code == 400
    assert "outside the documents bucket" in response.json()["error"]["message"]


def test_too_large_is_reported_before_signing() -> None:
    uploads = S3Uploads(client=None, bucket=BUCKET, registry=Registry())

    with pytest.raises(UploadTooLargeError, match="more than the 100 MB"):
        uploads.upload_url("a.pdf", size=200 * 1024 * 1024, collection="default", writer=ADMIN)
