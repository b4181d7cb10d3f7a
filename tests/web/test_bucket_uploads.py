"""Uploads from the page the cloud's way, in headless Chromium (issue 29, point 1): the page asks
a real uvicorn, set up as the chat function sets itself up (`S3Uploads` and `S3Files` from
docchat.wiring.cloud), for a presigned PUT, and sends a real .docx, .pptx and .xlsx
(../shared/data/office) straight to the documents bucket. moto serves that bucket on
127.0.0.1 with the CORS rules of template.yaml's DocumentsBucket and no CORS of its own, so a
rule the page needs and the template lacks, or a header the page sends and the rules refuse,
fails here as it would in a user's browser. Each object's Object Created event then runs the
real state machine and handlers (tests/functions/conftest.py) to INDEXED, which the page's
list shows."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from cfnlint.decode import cfn_yaml
from moto.moto_server import werkzeug_app
from moto.moto_server.threaded_moto_server import ThreadedMotoServer

from docchat.adapters.s3_uploads import S3Files, S3Uploads
from docchat.adapters.sqlite_conversations import SqliteConversations
from docchat.answer.backend import ChatBackend
from docchat.ingest.decision import doc_id_for
from docchat.ingest.uploads import upload_path
from docchat.models import DEFAULT_COLLECTION, DocStatus
from docchat.search.library import Library
from docchat.serve.app import create_app
from docchat.wiring.cloud import s3_files, s3_uploads
from tests.chatkit import SEARCH, ServedApp, tuned_config
from tests.conftest import REPO
from tests.functions.conftest import DOCS_BUCKET, REGION, Pipeline, running_pipeline
from tests.web.browser import expect

OFFICE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "office"
# Real files from markitdown's test suite (see OFFICE / "manifest.json"), each with the media
# type its object must be stored with (the Content-Type its presigned PUT is signed for).
FILES = {
    "markitdown/test.docx": (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    ),
    "markitdown/test.pptx": (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    ),
    "markitdown/test.xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}
DESKTOP = {"width": 1280, "height": 800}
UPLOAD_TIMEOUT_MS = 20_000
LIST_TIMEOUT_MS = 10_000
# CloudFormation's names of a CORS rule's fields, and the S3 API's (PutBucketCors)
CORS_FIELDS = {
    "Id": "ID",
    "AllowedHeaders": "AllowedHeaders",
    "AllowedMethods": "AllowedMethods",
    "AllowedOrigins": "AllowedOrigins",
    "ExposedHeaders": "ExposeHeaders",
    "MaxAge": "MaxAgeSeconds",
}


def template_cors_rules() -> list[dict[str, Any]]:
    """The documents bucket's CORS rules as template.yaml gives them, in the S3 API's names."""
    template = cfn_yaml.load(str(REPO / "template.yaml"))
    bucket = template["Resources"]["DocumentsBucket"]["Properties"]
    rules = bucket["CorsConfiguration"]["CorsRules"]
    return [{CORS_FIELDS[name]: value for name, value in rule.items()} for rule in rules]


@pytest.fixture(scope="module")
def files() -> dict[str, Path]:
    paths = {name: OFFICE / name for name in FILES}
    missing = [name for name, path in paths.items() if not path.is_file()]
    if missing:
        pytest.skip(f"real Office files not available: {missing} absent from {OFFICE}")
    return paths


@pytest.fixture
def bucket_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """moto in server mode on a free port of 127.0.0.1, answering CORS as S3 does: by the
    bucket's rules only (its own allow-everything CORS is off). Its URL."""
    monkeypatch.setattr(werkzeug_app, "DISABLE_GLOBAL_CORS", True)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@dataclass
class Traffic:
    """What the page asked the API for and sent to the bucket, and what went wrong in it."""

    tickets: list[dict[str, Any]] = field(default_factory=list)
    asked: list[dict[str, Any]] = field(default_factory=list)
    puts: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def watch(self, page: Any, bucket_url: str) -> None:
        page.on("request", lambda r: self._request(r, bucket_url))
        page.on("response", self._response)
        # A script's uncaught error, or one it logs (a refused request among them)
        page.on("pageerror", lambda error: self.errors.append(f"{error}: {error.stack}"))
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))

    def _request(self, request: Any, bucket_url: str) -> None:
        if request.url.endswith("/documents/upload-url"):
            self.asked.append(json.loads(request.post_data))
        if request.url.startswith(bucket_url) and request.method == "PUT":
            self.puts.append((request.url, request.headers))

    def _response(self, response: Any) -> None:
        if response.url.endswith("/documents/upload-url") and response.ok:
            self.tickets.append(response.json())


def _cloud_uploads(pipeline: Pipeline, bucket_url: str) -> tuple[S3Uploads, S3Files]:
    """The chat function's uploads and viewer files (docchat.wiring.cloud), their S3 client
    pointed at the moto server as AWS's SDKs let any client be (AWS_ENDPOINT_URL_S3)."""
    with mock.patch.dict(os.environ, {"AWS_ENDPOINT_URL_S3": bucket_url}):
        uploads = s3_uploads(bucket=DOCS_BUCKET, region=REGION, registry=pipeline.services.registry)
        viewer = s3_files(bucket=DOCS_BUCKET, region=REGION)
    return uploads, viewer


@pytest.fixture
def cloud(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, bucket_server: str
) -> Iterator[tuple[Pipeline, ServedApp]]:
    """The cloud's ingestion over moto, the bucket with the template's CORS rules, and the API
    as the chat function wires it (presigned uploads, the bucket in the page's policy)."""
    with running_pipeline(monkeypatch, tmp_path) as pipeline:
        pipeline.s3.put_bucket_cors(
            Bucket=DOCS_BUCKET, CORSConfiguration={"CORSRules": template_cors_rules()}
        )
        uploads, viewer = _cloud_uploads(pipeline, bucket_server)
        live = pipeline.services
        library = Library(
            index=live.index, embedder=live.embedder, registry=live.registry, **SEARCH
        )
        backend = ChatBackend(library=library, model=None, config=tuned_config())
        conversations = SqliteConversations(tmp_path / "conversations.sqlite3")
        app = create_app(
            lambda: backend,
            uploads=lambda _: uploads,
            files=lambda _: viewer,
            conversations=lambda: conversations,
            page_origins=lambda: [viewer.origin],
        )
        served = ServedApp(app)
        served.start()
        yield pipeline, served
        served.stop()
        conversations.close()


def test_page_puts_office_files_into_the_bucket_and_they_reach_indexed(
    browser: Any, files: dict[str, Path], bucket_server: str, cloud: tuple[Pipeline, ServedApp]
) -> None:
    pipeline, served = cloud
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    traffic = Traffic()
    traffic.watch(page, bucket_server)
    page.goto(f"http://127.0.0.1:{served.port}/")
    expect(page.locator("#upload")).to_be_visible()

    # When the three files are chosen in the page's file input
    page.set_input_files("#file", [str(path) for path in files.values()])

    # Then each went to the bucket with its ticket's URL and headers, and waits for the pipeline
    _uploads_over(page)
    expect(page.locator("#upload-error")).to_have_text("")  # a refused PUT would show here
    expect(page.locator("#upload-error")).to_be_hidden()
    names = sorted(path.name for path in files.values())
    for name in names:
        row = page.locator("#doc-list li.doc", has_text=name)
        expect(row).to_have_attribute("data-status", "AWAITING")
        badge = row.locator(".badge")
        expect(badge).to_have_attribute("title", "Uploaded, waiting for the pipeline…")
    assert sorted(asked["filename"] for asked in traffic.asked) == names
    assert {asked["collection"] for asked in traffic.asked} == {DEFAULT_COLLECTION}
    tickets = {ticket["key"].rsplit("/", 1)[-1]: ticket for ticket in traffic.tickets}
    assert sorted(tickets) == names
    assert sorted(url for url, _ in traffic.puts) == sorted(t["url"] for t in tickets.values())
    _check_objects(pipeline, files, tickets, traffic)

    # When the bucket's Object Created events run the state machine
    for ticket in tickets.values():
        execution = pipeline.run(pipeline.event("Object Created", ticket["key"]))
        assert execution["status"] == "SUCCEEDED", execution

    # Then each is INDEXED under the promised id, in the registry and in the page's list
    for name, ticket in tickets.items():
        _check_indexed(page, pipeline, name, ticket, traffic)
    expect(page.locator("#upload-error")).to_be_hidden()
    assert traffic.errors == []
    context.close()


def _check_indexed(
    page: Any, pipeline: Pipeline, name: str, ticket: dict[str, Any], traffic: Traffic
) -> None:
    record = pipeline.services.registry.get(ticket["doc_id"])
    assert record is not None, name
    assert (record.status, record.error) == (DocStatus.INDEXED, ""), name
    assert record.source == f"{DOCS_BUCKET}/{ticket['key']}"
    assert record.collections == [DEFAULT_COLLECTION]
    assert record.pages > 0 and record.chunks > 0, record
    row = page.locator(f'#doc-list li.doc[data-doc-id="{ticket["doc_id"]}"]')
    try:
        expect(row).to_have_attribute("data-status", "INDEXED", timeout=LIST_TIMEOUT_MS)
    except AssertionError as exc:  # the page's own error, where it has one, says why
        raise AssertionError(f"{name} not listed INDEXED; page errors: {traffic.errors}") from exc
    expect(row.locator(".badge")).to_have_text("INDEXED")
    expect(row).to_contain_text(name)


def _uploads_over(page: Any) -> None:
    """Waits until no file is still on its way: each is in the bucket, or an error is shown."""
    page.wait_for_function(
        """() => !document.querySelector('#doc-list li.doc[data-status="UPLOADING"]')
          && (document.querySelector('#doc-list li.doc[data-status="AWAITING"]')
              || !document.getElementById("upload-error").hidden)""",
        timeout=UPLOAD_TIMEOUT_MS,
    )


def _check_objects(
    pipeline: Pipeline,
    files: dict[str, Path],
    tickets: dict[str, dict[str, Any]],
    traffic: Traffic,
) -> None:
    """Each object is the file's bytes under the ticket's key and doc id, with its media type."""
    sent = {url: headers for url, headers in traffic.puts}
    for name, path in files.items():
        ticket = tickets[path.name]
        media_type = FILES[name]
        key = f"uploads/{upload_path(path.name).as_posix()}"
        assert ticket["key"] == key
        assert ticket["doc_id"] == doc_id_for(f"{DOCS_BUCKET}/{key}")
        assert ticket["headers"] == {"Content-Type": media_type}
        assert sent[ticket["url"]]["content-type"] == media_type
        stored = pipeline.s3.get_object(Bucket=DOCS_BUCKET, Key=key)
        assert stored["ContentType"] == media_type
        assert stored["Body"].read() == path.read_bytes()
