"""A page the stack's sync wrote into the documents bucket is ingested by the real state machine
(moto) as the page's document: its source is the address the sync kept in the object's user
metadata, so the API's documents list and its citations link to the page, as a local sync's do.
A plain upload, and metadata that is no http(s) URL, leave the source the bucket/key."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from docchat.adapters.s3_uploads import S3Uploads
from docchat.ingest.decision import doc_id_for
from docchat.models import DocStatus, FileLink
from docchat.sources.stack_sync import SOURCE_URL
from docchat.wiring.cloud import s3_files
from tests.api.collectionkit import chat_events
from tests.cli.website import Page, Site, page, serving
from tests.conftest import REPO
from tests.functions.conftest import ARTIFACTS_BUCKET, DOCS_BUCKET, REGION, FakeContext, Pipeline
from tests.functions.conftest import _load_handler as load_handler
from tests.functions.test_page_text import _client

HTML = page("Mooring guide", "Moor at pontoon seven when the harbour master waves.")
SYNCED = "collections/harbour/sources/handbook/0123456789abcdef/index.html"
REPORT = (
    REPO.parent
    / "shared/data/pdfs/py-pdf-sample-files/011-google-doc-document/google-doc-document.pdf"
)


def _synced_site(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch, site: Site, *, fetched: int = 1
) -> list[str]:
    """The sync function's run over `site` from its guide (a web source of the collection
    "harbour"), which fetches `fetched` pages and files: the keys it wrote."""
    monkeypatch.setenv("DOCCHAT_DOCUMENTS_BUCKET", DOCS_BUCKET)
    start = site.url("/guide.html")
    definition = {"kind": "web", "url": start, "rate": 0, "collection": "harbour"}
    pipeline.s3.put_object(
        Bucket=ARTIFACTS_BUCKET, Key="sources/handbook.json", Body=json.dumps(definition)
    )
    ran = load_handler("sync").handler({}, FakeContext("sync"))
    assert ran["sources"][0]["fetched"] == fetched, ran
    listed = pipeline.s3.list_objects_v2(Bucket=DOCS_BUCKET)["Contents"]
    return [item["Key"] for item in listed]


def test_a_synced_page_is_cited_and_listed_by_its_address(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a web source synced into the documents bucket by the sync function
    site = Site(pages={"/guide.html": Page(HTML)})
    with serving(site):
        [key] = _synced_site(pipeline, monkeypatch, site)
        url = site.url("/guide.html")

    # When S3's event for its object runs the pipeline
    execution = pipeline.run(pipeline.event("Object Created", key))

    # Then the document and every chunk name the page's address, not the object
    assert execution["status"] == "SUCCEEDED", execution
    doc_id = doc_id_for(f"{DOCS_BUCKET}/{key}")  # still the object's: Remove finds it
    record = pipeline.services.registry.get(doc_id)
    assert record is not None and record.status == DocStatus.INDEXED
    assert record.source == url
    assert record.stored_at == f"{DOCS_BUCKET}/{key}"  # where DELETE finds its object
    assert {c.source for c in pipeline.services.index.document_chunks(doc_id)} == {url}
    # And the API lists it by its address and file name, and cites the page
    client = _client(pipeline, monkeypatch)
    [shown] = client.get("/documents").json()["documents"]
    assert (shown["doc_id"], shown["source"], shown["file_name"]) == (doc_id, url, "guide.html")
    assert "stored_at" not in shown and "stored_at" not in client.get("/openapi.json").text
    body = {"messages": [{"role": "user", "content": "Where do I moor?"}]}
    events = chat_events(client.post("/chat", json=body).text)
    cited = [c for kind, e in events if kind == "citations" for c in e["citations"]]
    assert cited and {c["source"] for c in cited} == {url}, events
    # And the stack's DELETE /documents/{id} still finds its object (S3Uploads.remove)
    uploads = S3Uploads(client=pipeline.s3, bucket=DOCS_BUCKET, registry=pipeline.services.registry)
    assert uploads.remove(doc_id).status == "deleting"
    assert "Contents" not in pipeline.s3.list_objects_v2(Bucket=DOCS_BUCKET)


@pytest.mark.parametrize(
    ("key", "address"),
    [
        # The sync's default collection: believed
        ("sources/handbook/0123456789abcdef/index.html", "https://docs.example.org/guide.html"),
        # A plain upload: whatever metadata its uploader gave it, its source is its object
        ("collections/harbour/uploads/guide.html", "https://docs.example.org/guide.html"),
        # Under a source's prefix, but no http(s) URL of at most 1800 characters
        (SYNCED, "javascript:alert(1)//https://docs.example.org/"),
        (SYNCED, "file:///etc/passwd"),
        (SYNCED, "https://"),
        (SYNCED, "https://docs.example.org/a guide.html"),
        (SYNCED, "https://docs.example.org/\tguide.html"),
        (SYNCED, "https://docs.example.org/" + "a" * 1800),
    ],
)
def test_a_source_is_an_address_only_for_a_synced_object_with_an_http_url(
    pipeline: Pipeline, key: str, address: str
) -> None:
    # S3 accepts only ASCII in metadata sent by its SDKs; these are what a writer could send.
    pipeline.s3.put_object(Bucket=DOCS_BUCKET, Key=key, Body=HTML, Metadata={SOURCE_URL: address})

    execution = pipeline.run(pipeline.event("Object Created", key))

    assert execution["status"] == "SUCCEEDED", execution
    record = pipeline.services.registry.document(doc_id_for(f"{DOCS_BUCKET}/{key}"))
    trusted = key.startswith("sources/")
    source = address if trusted else f"{DOCS_BUCKET}/{key}"
    assert record is not None and (record.source, record.status) == (source, DocStatus.INDEXED)


def test_the_viewer_opens_a_synced_pdf_from_the_object_the_sync_wrote(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not REPORT.is_file():
        pytest.skip(f"a real PDF is not available: {REPORT} is absent")
    # Given a site's PDF, synced into the documents bucket and ingested by the pipeline
    site = Site(
        pages={
            "/guide.html": Page(page("Guide", "The yearly report.", "/docs/report.pdf")),
            "/docs/report.pdf": Page(REPORT.read_bytes(), "application/pdf"),
        }
    )
    with serving(site):
        keys = _synced_site(pipeline, monkeypatch, site, fetched=2)
    [pdf_key] = [k for k in keys if k.endswith("/report.pdf")]
    assert pipeline.run(pipeline.event("Object Created", pdf_key))["status"] == "SUCCEEDED"
    record = pipeline.services.registry.document(doc_id_for(f"{DOCS_BUCKET}/{pdf_key}"))
    assert record is not None and record.source == site.url("/docs/report.pdf")

    # When the viewer asks for its file, as the chat function's wiring makes it
    files = s3_files(bucket=DOCS_BUCKET, region=REGION, registry=pipeline.services.registry)
    link = files.pdf(record)

    # Then it is a presigned GET of that object, read as a PDF (before: "outside the documents
    # bucket: open it where it is stored", the source being the page's address)
    assert isinstance(link, FileLink)
    url = urlsplit(link.url)
    assert str(url.hostname).startswith(f"{DOCS_BUCKET}.s3.")
    assert unquote(url.path) == f"/{pdf_key}"
    assert parse_qs(url.query)["response-content-type"] == ["application/pdf"]


def test_a_synced_drive_files_chunks_are_found_by_its_name_not_the_end_of_its_link(
    pipeline: Pipeline,
) -> None:
    if not REPORT.is_file():
        pytest.skip(f"a real PDF is not available: {REPORT} is absent")
    # Given a Drive file the sync wrote under its name; its link ends in "view"
    key = "collections/team/sources/drive/0123456789abcdef/annual report.pdf"
    link = "https://drive.google.com/file/d/1Kq6TIxVtbp2vT4uX5hoB3Ttp1E_yWrMS/view?usp=drivesdk"
    pipeline.s3.put_object(
        Bucket=DOCS_BUCKET, Key=key, Body=REPORT.read_bytes(), Metadata={SOURCE_URL: link}
    )

    # When S3's event for its object runs the pipeline
    assert pipeline.run(pipeline.event("Object Created", key))["status"] == "SUCCEEDED"

    # Then its chunks' context names the file (before: "view"), which BM25 reads
    doc_id = doc_id_for(f"{DOCS_BUCKET}/{key}")
    chunks = pipeline.services.index.document_chunks(doc_id)
    assert chunks and {(c.source, c.file_name) for c in chunks} == {(link, "annual report.pdf")}
    assert all(c.context.startswith("annual report\n") for c in chunks)
    hits = pipeline.services.index.keyword_search("annual", k=5)
    assert hits and {c.split(":")[0] for c, _ in hits} == {doc_id}
    assert pipeline.services.index.keyword_search("view", k=5) == []
