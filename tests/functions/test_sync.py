"""The sync function (functions/sync) over moto's S3 and Secrets Manager: a web source defined in
the artifacts bucket is crawled from a real site on 127.0.0.1 (tests/cli/website.py) into the
documents bucket under its collection's prefix, where S3's events hand it to the pipeline; a
Confluence source's token comes from Secrets Manager (tests/cli/confluencesite.py answers as the
REST API does). What each source's last run did, and why it failed, is what /health shows."""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from docchat.models import collection_of_key
from docchat.sources import confluence as confluence_module
from docchat.sources import gdrive as gdrive_module
from docchat.sources.stack import stack_sources_health
from docchat.sources.stack_sync import SOURCE_URL
from tests.cli import test_sources_gdrive as gdrive
from tests.cli.confluencesite import SITE, Confluence, recorded
from tests.cli.gdrivesite import ACCESS_TOKEN, Drive, key_pair
from tests.cli.gdrivesite import recorded as recorded_drive
from tests.cli.graphsite import file_bytes
from tests.cli.graphsite import serving as serving_api
from tests.cli.website import Page, Site, page, serving
from tests.conftest import REPO
from tests.functions.conftest import ARTIFACTS_BUCKET, DOCS_BUCKET, REGION, FakeContext
from tests.functions.conftest import _load_handler as load_handler
from tests.officegen import docx_file, xlsx_file

EVENT = json.loads((REPO / "events" / "sync.json").read_text())
TOKEN = "FAKE-confluence-token-for-tests-only-0000"
EMAIL = "dana@example.com"
SPACES = "GET /wiki/api/v2/spaces?keys=ENG"
PREFIX = "collections/harbour/sources/handbook/"


@dataclass
class Stack:
    s3: Any
    secrets: Any
    handler: Any

    def define(self, name: str, definition: dict[str, Any]) -> None:
        body = json.dumps(definition).encode()
        self.s3.put_object(Bucket=ARTIFACTS_BUCKET, Key=f"sources/{name}.json", Body=body)

    def sync(self, event: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
        result = self.handler.handler(EVENT if event is None else event, FakeContext("sync"))
        return {s["name"]: s for s in result["sources"]}

    def stored(self) -> list[str]:
        listed = self.s3.list_objects_v2(Bucket=DOCS_BUCKET).get("Contents", [])
        return sorted(item["Key"] for item in listed)

    def versions(self) -> int:
        """Every version and delete marker the documents bucket holds: one per write or delete."""
        listed = self.s3.list_object_versions(Bucket=DOCS_BUCKET)
        return len(listed.get("Versions", [])) + len(listed.get("DeleteMarkers", []))

    def health(self) -> dict[str, Any]:
        from docchat.adapters.s3_objects import S3Objects

        return stack_sources_health(S3Objects(self.s3), ARTIFACTS_BUCKET)


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "docchat-test",
        "POWERTOOLS_LOG_LEVEL": "DEBUG",
        "DOCCHAT_DOCUMENTS_BUCKET": DOCS_BUCKET,
        "DOCCHAT_ARTIFACTS_BUCKET": ARTIFACTS_BUCKET,
    }.items():
        monkeypatch.setenv(name, value)
    from docchat.wiring.cloud import services

    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=DOCS_BUCKET)
        s3.put_bucket_versioning(Bucket=DOCS_BUCKET, VersioningConfiguration={"Status": "Enabled"})
        s3.create_bucket(Bucket=ARTIFACTS_BUCKET)
        services.cache_clear()
        yield Stack(s3, boto3.client("secretsmanager", region_name=REGION), load_handler("sync"))
        services.cache_clear()


@pytest.fixture
def site() -> Iterator[Site]:
    """A home page linking to a guide and to notes served without validators."""
    served = Site(
        pages={
            "/robots.txt": Page(b"User-agent: *\nDisallow: /private\n", "text/plain"),
            "/": Page(page("Harbour handbook", "Welcome aboard.", "/guide.html", "/notes")),
            "/guide.html": Page(page("Mooring guide", "Moor at pontoon seven.")),
            "/notes": Page(page("Tide notes", "Spring tides flood the slipway."), validator="none"),
        }
    )
    with serving(served):
        yield served


def _web(site: Site) -> dict[str, Any]:
    return {"kind": "web", "url": site.url("/"), "rate": 0, "collection": "harbour"}


def test_sync_writes_a_sites_pages_under_its_collection_and_a_second_run_writes_nothing(
    stack: Stack, site: Site
) -> None:
    # Given a web source defined in the artifacts bucket, going to the collection "harbour"
    stack.define("handbook", _web(site))

    # When the schedule's event starts the sync function
    first = stack.sync()

    # Then each page is an object under the collection's prefix, read as HTML, with its address
    keys = stack.stored()
    assert sorted(k.rsplit("/", 1)[-1] for k in keys) == ["guide.html", "index.html", "notes.html"]
    assert all(k.startswith(PREFIX) and collection_of_key(k) == "harbour" for k in keys), keys
    addresses = {
        stack.s3.head_object(Bucket=DOCS_BUCKET, Key=k)["Metadata"][SOURCE_URL] for k in keys
    }
    assert addresses == {site.url("/"), site.url("/guide.html"), site.url("/notes")}
    assert (first["handbook"]["fetched"], first["handbook"]["failed"]) == (3, 0)

    # When it runs again with nothing changed on the site
    writes = stack.versions()
    again = stack.sync()

    # Then nothing is written: pages with validators answer 304, the one without is the same bytes
    assert stack.versions() == writes
    counts = again["handbook"]
    assert (counts["fetched"], counts["unchanged"], counts["removed"]) == (0, 3, 0)


def test_sync_rewrites_a_changed_page_and_deletes_the_object_of_a_page_gone_from_the_site(
    stack: Stack, site: Site
) -> None:
    stack.define("handbook", _web(site))
    stack.sync()
    keys = stack.stored()
    guide = next(k for k in keys if k.endswith("/guide.html"))
    notes = next(k for k in keys if k.endswith("/notes.html"))

    # When the guide is taken off the site (still linked: 404) and the notes change
    del site.pages["/guide.html"]
    site.pages["/notes"] = Page(page("Tide notes", "Neap tides spare it."), validator="none")
    counts = stack.sync()["handbook"]

    # Then the guide's object is deleted (a delete marker: Remove takes it out of the index) and
    # the notes' object holds the new page
    assert guide not in stack.stored()
    markers = stack.s3.list_object_versions(Bucket=DOCS_BUCKET, Prefix=guide)["DeleteMarkers"]
    assert [m["IsLatest"] for m in markers] == [True]
    body = stack.s3.get_object(Bucket=DOCS_BUCKET, Key=notes)["Body"].read()
    assert b"Neap tides spare it." in body
    assert (counts["fetched"], counts["removed"], counts["failed"]) == (1, 1, 0)


def test_an_object_deleted_through_the_api_is_written_again_at_the_next_sync(
    stack: Stack, site: Site
) -> None:
    stack.define("handbook", _web(site))
    stack.sync()
    guide = next(k for k in stack.stored() if k.endswith("/guide.html"))

    # When the guide's document is deleted (DELETE /documents/{id} deletes its object) and the
    # site, unchanged, is synced again
    stack.s3.delete_object(Bucket=DOCS_BUCKET, Key=guide)
    counts = stack.sync()["handbook"]

    # Then the guide is fetched and written again (before: 304, "unchanged", and gone for good)
    assert guide in stack.stored()
    assert (counts["fetched"], counts["unchanged"], counts["failed"]) == (1, 2, 0)


def test_a_broken_link_is_skipped_as_a_local_sync_skips_it_and_the_rest_is_written(
    stack: Stack, site: Site
) -> None:
    # Given a home page that also links to a page the site never had
    home = page("Harbour handbook", "Welcome aboard.", "/guide.html", "/notes", "/lost.html")
    site.pages["/"] = Page(home)
    stack.define("handbook", _web(site))

    # When the sync runs
    counts = stack.sync()["handbook"]

    # Then the broken link is skipped, not a failure of the source (before: failed, as a local
    # sync never did), and every page there is is written
    assert (counts["fetched"], counts["failed"], counts["skipped"]) == (3, 0, 1), counts
    assert counts["skip_note"] == f"{site.url('/lost.html')}: 404, a broken link on the site"
    assert len(stack.stored()) == 3
    (health,) = stack.health()["sources"]
    assert health["last_sync"]["last_failure"] == ""


def _confluence(secret: str = "docchat/wiki") -> dict[str, Any]:
    return {"kind": "confluence", "site": SITE, "space": "ENG", "email": EMAIL, "secret": secret}


def test_a_missing_secret_fails_the_source_in_one_line_naming_it_and_health_shows_why(
    stack: Stack, site: Site
) -> None:
    # Given a Confluence source whose secret was never created, beside a web source
    stack.define("wiki", _confluence())
    stack.define("handbook", _web(site))

    ran = stack.sync()

    # Then that source fails with a reason naming the secret and how to create it; the other
    # source is synced all the same
    missing = (
        "the secret docchat/wiki does not exist in Secrets Manager: create it (aws "
        "secretsmanager create-secret --name docchat/wiki --secret-string ...) in the stack's "
        "Region and account"
    )
    assert (ran["wiki"]["failed"], ran["wiki"]["last_failure"]) == (1, missing)
    assert ran["handbook"]["fetched"] == 3
    shown = {s["name"]: s for s in stack.health()["sources"]}
    assert shown["wiki"]["last_sync"]["last_failure"] == missing
    assert shown["wiki"]["url"] == f"{SITE}/wiki/spaces/ENG"
    assert (shown["handbook"]["collection"], shown["handbook"]["documents"]) == ("harbour", 3)


def test_a_definition_naming_a_secret_outside_docchat_is_refused_with_what_to_write(
    stack: Stack,
) -> None:
    stack.define("wiki", _confluence(secret="prod/wiki"))

    ran = stack.sync()

    assert ran["wiki"]["last_failure"] == (
        "sources/wiki.json: a confluence source names the Secrets Manager secret its credential "
        'is in, under docchat/ (the only secrets the sync function may read): add "secret": '
        '"docchat/wiki"'
    )
    assert stack.health()["sources"][0]["problem"] == ran["wiki"]["last_failure"]


def _refused_wiki(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, level: int
) -> tuple[dict[str, dict[str, Any]], Confluence]:
    """The sync function's run, its logger at `level`, over the Confluence source "wiki" (its
    token already in Secrets Manager), whose site refuses the token: the run and the site."""
    from docchat.wiring.lambda_handler import logger

    stack.define("wiki", _confluence())
    api = Confluence()
    api.route(SPACES, recorded("unauthorized"))
    before = logger.log_level
    logger.setLevel(level)
    try:
        with serving_api(api):
            monkeypatch.setattr(confluence_module, "api_root", lambda _site: api.base)
            return stack.sync(), api
    finally:
        logger.setLevel(before)


def test_a_refused_token_fails_in_one_line_and_the_token_is_never_logged_or_returned(
    stack: Stack,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Every record at INFO, the level Lambda gives the function (template.yaml sets no
    # ApplicationLogLevel); at DEBUG botocore itself logs the bodies of AWS's answers.
    # The function's logger is set too (_refused_wiki): it keeps the level of the first test
    # that made it (the pipeline's tests run at WARNING).
    caplog.set_level(logging.INFO)
    # Given a Confluence source whose token, in Secrets Manager, the site refuses
    stack.secrets.create_secret(Name="docchat/wiki", SecretString=TOKEN)
    ran, api = _refused_wiki(stack, monkeypatch, logging.INFO)

    # Then the reason says which secret holds the refused token and what to check
    refused = (
        "the Confluence API token in the Secrets Manager secret docchat/wiki was refused (401 "
        f"Unauthorized): check that it is an API token of {EMAIL} for {SITE}, not expired or "
        "revoked, and sync again"
    )
    assert ran["wiki"]["last_failure"] == refused
    assert api.asked() == [SPACES]
    # And the token was sent (basic auth) but is nowhere else: not in the logs, the result,
    # the kept state or /health
    basic = base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()
    assert [r.headers.get("Authorization") for r in api.requests] == [f"Basic {basic}"]
    state = stack.s3.get_object(Bucket=ARTIFACTS_BUCKET, Key="sources/state/wiki.json")
    out = capsys.readouterr()
    records = "\n".join(str(vars(r)) for r in caplog.records)
    assert "source synced" in records and "docchat/wiki" in records  # the run's lines were kept
    for text in (out.out, out.err, records, json.dumps(ran), state["Body"].read().decode()):
        assert TOKEN not in text
    assert TOKEN not in json.dumps(stack.health())


@pytest.mark.parametrize("token", [TOKEN, 'FAKE-"quoted"\\token/with-escapes-0001'])
def test_at_debug_no_log_record_result_state_or_health_holds_the_secret(
    stack: Stack,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    token: str,
) -> None:
    # Every record of every logger at DEBUG, as an operator turning on debug logs gets them:
    # botocore's (it logs each answer's body), urllib3's, moto's, the function's own
    # Given a Confluence source whose token, in Secrets Manager, the site refuses (stored
    # before the capture starts: the test's own CreateSecret is not the function's)
    stack.secrets.create_secret(Name="docchat/wiki", SecretString=token)
    caplog.set_level(logging.DEBUG)
    ran, api = _refused_wiki(stack, monkeypatch, logging.DEBUG)

    # Then the token was read and sent, and botocore did log at DEBUG
    assert ran["wiki"]["last_failure"].startswith("the Confluence API token in the Secrets")
    basic = base64.b64encode(f"{EMAIL}:{token}".encode()).decode()
    assert [r.headers.get("Authorization") for r in api.requests] == [f"Basic {basic}"]
    assert any(r.name.startswith("botocore") and r.levelno == logging.DEBUG for r in caplog.records)
    # But the token, as itself or JSON-escaped, is in no record, output, result, state or /health
    shown = logging.Formatter("%(name)s %(message)s")
    records = "\n".join(f"{shown.format(r)} {vars(r)}" for r in caplog.records)
    out = capsys.readouterr()
    state = stack.s3.get_object(Bucket=ARTIFACTS_BUCKET, Key="sources/state/wiki.json")
    texts = (out.out, out.err, records, json.dumps(ran), state["Body"].read().decode())
    for text in (*texts, json.dumps(stack.health())):
        for spelled in {token, json.dumps(token)[1:-1], repr(json.dumps(token)[1:-1].encode())}:
            assert spelled.strip("b'") not in text


def test_a_removed_definition_has_the_objects_its_syncs_wrote_deleted_and_its_state_forgotten(
    stack: Stack, site: Site
) -> None:
    # Given two sources of one site synced, and an upload beside them in the collection
    stack.define("handbook", _web(site))
    stack.define("tides", {**_web(site), "collection": "tides"})
    upload = "collections/harbour/uploads/k1/notes.pdf"
    stack.s3.put_object(Bucket=DOCS_BUCKET, Key=upload, Body=b"%PDF-1.7 kept")
    stack.sync()
    kept = [k for k in stack.stored() if not k.startswith(PREFIX)]
    assert len(stack.stored()) - len(kept) == 3

    # When the operator deletes the definition of one, and the schedule runs
    stack.s3.delete_object(Bucket=ARTIFACTS_BUCKET, Key="sources/handbook.json")
    ran = stack.handler.handler(EVENT, FakeContext("sync"))

    # Then its three objects are deleted (delete markers: Remove takes them out of the index),
    # nothing else is, and its state is gone; the other source is synced as ever
    assert stack.stored() == kept and upload in kept
    markers = stack.s3.list_object_versions(Bucket=DOCS_BUCKET, Prefix=PREFIX)["DeleteMarkers"]
    assert len([m for m in markers if m["IsLatest"]]) == 3
    assert ran["removed_sources"] == [{"name": "handbook", "removed": 3, "last_failure": ""}]
    assert [s["name"] for s in ran["sources"]] == ["tides"]
    states = stack.s3.list_objects_v2(Bucket=ARTIFACTS_BUCKET, Prefix="sources/state/")
    assert [o["Key"] for o in states["Contents"]] == ["sources/state/tides.json"]
    assert [s["name"] for s in stack.health()["sources"]] == ["tides"]
    # And the next run has nothing left to remove
    assert stack.handler.handler(EVENT, FakeContext("sync"))["removed_sources"] == []


def test_a_run_starting_while_another_syncs_leaves_the_sources_to_it(
    stack: Stack, site: Site
) -> None:
    # Given a run held up by a slow page (a long crawl)
    stack.define("handbook", _web(site))
    slow = site.pages["/guide.html"]
    slow.hold = threading.Event()
    first: dict[str, Any] = {}
    running = threading.Thread(target=lambda: first.update(stack.sync()))
    running.start()
    deadline = time.monotonic() + 30
    while "/guide.html" not in site.paths() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "/guide.html" in site.paths(), site.paths()
    writes = stack.versions()

    # When the next scheduled run starts
    second = stack.handler.handler(EVENT, FakeContext("sync"))

    # Then it ends at once, saying it left the sources to the running one, having written
    # and deleted nothing
    assert second["sources"] == [] and second["removed_sources"] == []
    assert re.fullmatch(
        r"another sync, started \S+Z, holds the sources \(its lease runs until \S+Z\): this run "
        r"left them to it",
        second["left_to_another"],
    ), second
    assert stack.versions() == writes
    # And the running one finishes its work, then lets the next run sync
    slow.hold.set()
    running.join(timeout=60)
    assert first["handbook"]["fetched"] == 3
    third = stack.handler.handler(EVENT, FakeContext("sync"))
    assert third["left_to_another"] == "" and third["sources"][0]["unchanged"] == 3


def test_a_lease_left_by_a_stopped_run_is_taken_over_once_it_expires(
    stack: Stack, site: Site
) -> None:
    # Given the lease of a run Lambda stopped (a timeout) 17 minutes ago, past its expiry
    stack.define("handbook", _web(site))
    started = time.time() - 17 * 60
    lease = {"run": "stopped", "started": started, "until": started + 16 * 60}
    stack.s3.put_object(
        Bucket=ARTIFACTS_BUCKET, Key="sources/state/sync.lease", Body=json.dumps(lease)
    )

    # When the schedule runs, Then it takes the sources over, and releases them when done
    ran = stack.handler.handler(EVENT, FakeContext("sync"))

    assert ran["left_to_another"] == "" and ran["sources"][0]["fetched"] == 3
    states = stack.s3.list_objects_v2(Bucket=ARTIFACTS_BUCKET, Prefix="sources/state/")
    assert [o["Key"] for o in states["Contents"]] == ["sources/state/handbook.json"]


def test_a_manual_invoke_syncs_one_named_source(stack: Stack, site: Site) -> None:
    stack.define("handbook", _web(site))
    stack.define("wiki", _confluence())

    ran = stack.sync({"source": "handbook"})

    assert list(ran) == ["handbook"]


@pytest.fixture
def google(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Drive, str]]:
    """Google's Drive API and token endpoint on 127.0.0.1, and a service account's JSON key."""
    private, key_json = key_pair()
    drive = Drive(private.public_key())
    with serving_api(drive):
        monkeypatch.setattr(gdrive_module, "DRIVE_URL", drive.base + "/drive/v3")
        monkeypatch.setattr(gdrive_module, "TOKEN_URL", drive.base + "/token")
        yield drive, key_json


def test_a_google_drive_is_synced_as_its_service_account_whose_key_is_a_secret(
    stack: Stack, google: tuple[Drive, str], caplog: pytest.LogCaptureFixture
) -> None:
    if not gdrive.REPORT.is_file():
        pytest.skip(f"a real PDF is not available: {gdrive.REPORT} is absent")
    # Given a shared drive of a PDF, a Doc and a Sheet, and its service account's JSON key in
    # Secrets Manager
    drive, key_json = google
    drive.route(gdrive.START, recorded_drive("start-page-token"))
    drive.route(gdrive.FIRST, recorded_drive("files-first"))
    drive.route(gdrive.NEXT, recorded_drive("files-last"))
    drive.route(gdrive.REPORT_MEDIA, file_bytes(gdrive.REPORT.read_bytes(), "application/pdf"))
    drive.route(gdrive.PLAN_DOCX, file_bytes(docx_file()))
    drive.route(gdrive.FIGURES_XLSX, file_bytes(xlsx_file()))
    stack.secrets.create_secret(Name="docchat/drive", SecretString=key_json)
    definition = {"kind": "gdrive", "secret": "docchat/drive", "shared_drive": gdrive.DRIVE_ID}
    stack.define("team", {**definition, "collection": "harbour"})
    caplog.set_level(logging.INFO)

    # When the sync function runs (before: refused, "synced by a local docchat only so far")
    ran = stack.sync()

    # Then each file is an object of the collection, named as in the drive, with its link
    assert (ran["team"]["fetched"], ran["team"]["failed"]) == (3, 0), ran
    keys = stack.stored()
    assert all(k.startswith("collections/harbour/sources/team/") for k in keys), keys
    names = {k.rsplit("/", 1)[-1]: k for k in keys}
    assert set(names) == {"report.pdf", "Team plan.docx", "Q3 figures.xlsx"}
    head = stack.s3.head_object(Bucket=DOCS_BUCKET, Key=names["report.pdf"])
    assert head["Metadata"][SOURCE_URL] == gdrive.REPORT_URL

    # When it runs again with nothing changed in the drive, then only the changes are asked for
    # and nothing is written or deleted
    writes = stack.versions()
    drive.requests.clear()
    drive.route(gdrive.changes("1432"), recorded_drive("changes-none"))
    again = stack.sync()["team"]
    assert drive.routes_asked() == [gdrive.TOKEN, gdrive.changes("1432")]
    assert (again["fetched"], again["removed"], again["failed"]) == (0, 0, 0), again
    assert stack.versions() == writes and stack.stored() == keys

    # And the key is nowhere but the secret: not in the result, the state, the logs or /health
    state = stack.s3.get_object(Bucket=ARTIFACTS_BUCKET, Key="sources/state/team.json")
    kept = (json.dumps(ran), state["Body"].read().decode(), caplog.text, json.dumps(stack.health()))
    line = json.loads(key_json)["private_key"].splitlines()[1]
    assert not [text for text in kept if line in text or ACCESS_TOKEN in text]
