"""`docchat sources add sharepoint` / `docchat sync` against Microsoft Graph on 127.0.0.1
(tests/cli/graphsite.py) answering with the documentation's example responses
(tests/fixtures/graph, see its README), serving real PDFs from ../shared/data: the drive is
listed page by page, then only its changes are asked for; what is synced is cited by its webUrl;
the client secret is never shown, kept or logged."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from docchat.cli import sources as cli_sources
from docchat.sources import graph as graph_module
from docchat.sources.store import load_sources
from tests.cli.graphsite import Graph, file_bytes, recorded, serving
from tests.cli.run import counts, last_sync, run, served_app, status_documents
from tests.conftest import REPO

SHARED = REPO.parent / "shared" / "data" / "pdfs" / "py-pdf-sample-files"
REPORT = SHARED / "011-google-doc-document/google-doc-document.pdf"  # "Beautiful is better…"
REVISED = SHARED / "002-trivial-libre-office-writer/002-trivial-libre-office-writer.pdf"

SECRET = "FAKE-secret-for-tests-only~0000"
VAR = "DOCCHAT_TEST_GRAPH_SECRET"
TENANT = "contoso.onmicrosoft.com"
CLIENT = "535fb089-9ff3-47b6-9bfb-4f1264799865"  # the client id auth-v2-service shows
DRIVE = "b!t18F8ybsHUq1z3LTz8xvZqP8zaSWjkFNhsME-Fepo75dTf9vQKfeRblBZjoSQrd7"  # drive.http's
WEB_URL = "https://contoso.sharepoint.com/teams/1drvteam/Shared%20Documents/report.pdf"

TOKEN = f"POST /{TENANT}/oauth2/v2.0/token"
FIRST = f"GET /v1.0/drives/{DRIVE}/root/delta"
NEXT = "GET /v1.0/me/drive/delta(token=1230919asd190410jlka)"
AFTER_FIRST = (
    "GET /v1.0/me/drive/root/delta?(token='MzslMjM0OyUyMzE7MzsyM2YwNDVhMS1lNmRmLTQ1N2MtOGQ5NS1h"
    "NmViZDVmZWRhNWQ7NjM3OTQzNzQwODQ3NTcwMDAwOzU4NTk2OTY0NDslMjM7JTIzOyUyMzA')"
)
AFTER_CHANGE = "GET /v1.0/me/drive/root/delta?(token='1230919asd190410jlka')"
AFTER_DELETE = "GET /v1.0/me/drive/root/delta?token=1230919asd190410jlka"
FRESH = "GET /v1.0/me/drive/root/delta"  # resync.http's Location
CONTENT = f"GET /v1.0/drives/{DRIVE}/items/123010204abac/content"
DOWNLOAD = "GET /y23vmagahszhxzlcvhasdhasghasodfi"
ADD = ["sources", "add", "sharepoint", "--tenant", TENANT, "--client-id", CLIENT]


@pytest.fixture
def pdfs() -> tuple[bytes, bytes]:
    if not REPORT.is_file() or not REVISED.is_file():
        pytest.skip(f"real PDFs not available: {SHARED} is absent")
    return REPORT.read_bytes(), REVISED.read_bytes()


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds `docchat sync` waited (it does not sleep in tests)."""
    waited: list[float] = []
    patched = functools.partial(cli_sources.Syncer, sleep=waited.append)
    monkeypatch.setattr(cli_sources, "Syncer", patched)
    return waited


@pytest.fixture
def drive(
    monkeypatch: pytest.MonkeyPatch, pdfs: tuple[bytes, bytes], caplog: pytest.LogCaptureFixture
) -> Iterator[Graph]:
    """Graph serving a drive whose one PDF is listed over two pages; every log record kept."""
    caplog.set_level(logging.DEBUG)
    graph = Graph()
    graph.route(TOKEN, recorded("token"))
    graph.route(FIRST, recorded("delta-first"))
    graph.route(NEXT, recorded("delta-last"))
    graph.route(CONTENT, recorded("content"))
    graph.route(DOWNLOAD, file_bytes(pdfs[0]))
    with serving(graph):
        monkeypatch.setattr(graph_module, "GRAPH_URL", graph.base + "/v1.0")
        monkeypatch.setattr(graph_module, "LOGIN_URL", graph.base)
        monkeypatch.setenv(VAR, SECRET)
        yield graph


def _added(capsys: pytest.CaptureFixture[str], data: str, *where: str) -> None:
    argv = [*ADD, "--secret-env", VAR, *where, "--name", "team", "--collection", "team-docs"]
    code, _, err = run(capsys, *argv, "--data-dir", data)
    assert code == 0, err


def _cursor(data: str) -> str:
    return load_sources(Path(data)).sources["team"].cursor


def test_sync_lists_the_drive_by_pages_then_asks_for_changes_and_deletions(
    drive: Graph,
    pdfs: tuple[bytes, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE)

    code, out, err = run(capsys, "sync", "--data-dir", data)

    # Then: the token, the feed's two pages (nextLink), one download, through the 302 to the
    # pre-authenticated URL on another host, which is not sent the token
    assert code == 0, out + err
    assert drive.asked() == [TOKEN, FIRST, CONTENT, DOWNLOAD, NEXT]
    token = drive.requests[0].form
    assert token == {
        "client_id": [CLIENT],
        "scope": ["https://graph.microsoft.com/.default"],
        "client_secret": [SECRET],
        "grant_type": ["client_credentials"],
    }
    signed = "Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiIsIng1dCI6Ik1uQ19WWmNBVGZNNXBP..."
    assert {r.headers.get("Authorization") for r in drive.requests[1:3]} == {signed}
    download = drive.requests[3]
    assert download.host.startswith("localhost:")
    assert "Authorization" not in download.headers
    assert counts(last_sync(capsys, data)) == (1, 1, 0, 0)  # the feed lists the file twice
    documents = status_documents(capsys, data)
    assert list(documents) == [WEB_URL]
    assert documents[WEB_URL]["collections"] == ["team-docs"]
    code, out, err = run(
        capsys, "search", "Beautiful is better than ugly", "--json", "--data-dir", data
    )
    assert code == 0, err
    assert json.loads(out)[0]["source"] == WEB_URL
    code, answered, err = run(
        capsys, "ask", "What is better than ugly?", "--json", "--data-dir", data
    )
    assert code == 0, err
    assert {c["source"] for c in json.loads(answered)["citations"]} == {WEB_URL}
    assert _cursor(data) == drive.base + AFTER_FIRST.removeprefix("GET ")

    # When: the file changes (a new eTag, no cTag, new bytes)
    drive.requests.clear()
    drive.route(AFTER_FIRST, recorded("delta-changed"))
    drive.route(DOWNLOAD, file_bytes(pdfs[1]))
    code, out, err = run(capsys, "sync", "team", "--data-dir", data)

    # Then: only the changes are asked for, and the document is re-read
    assert code == 0, out + err
    assert drive.asked() == [TOKEN, AFTER_FIRST, CONTENT, DOWNLOAD]
    assert counts(last_sync(capsys, data)) == (1, 0, 0, 0)
    assert status_documents(capsys, data)[WEB_URL]["revision"] == 2
    code, out, err = run(capsys, "search", "Lorem ipsum dolor", "--json", "--data-dir", data)
    assert json.loads(out)[0]["source"] == WEB_URL

    # When: the file is deleted from the drive
    drive.route(AFTER_CHANGE, recorded("delta-deleted"))
    code, out, err = run(capsys, "sync", "--data-dir", data)

    # Then: its document is removed, and the next sync starts from the newest delta link
    assert code == 0, out + err
    assert f"{WEB_URL}: removed: deleted from the drive" in out
    assert counts(last_sync(capsys, data)) == (0, 0, 1, 0)
    assert status_documents(capsys, data) == {}
    assert _cursor(data) == drive.base + AFTER_DELETE.removeprefix("GET ")
    sources_file = (Path(data) / "sources.json").read_text(encoding="utf-8")
    assert SECRET not in sources_file
    assert SECRET not in caplog.text


def test_sync_waits_as_retry_after_says_and_gives_up_after_three_retries(
    drive: Graph, waits: list[float], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE)
    drive.route(FIRST, recorded("throttled"), recorded("delta-first"))

    code, out, err = run(capsys, "sync", "--data-dir", data)

    assert code == 0, out + err
    assert waits == [2.128]
    assert drive.asked().count(FIRST) == 2
    assert list(status_documents(capsys, data)) == [WEB_URL]

    # When: Graph goes on throttling the changes asked for
    drive.requests.clear()
    drive.route(AFTER_FIRST, recorded("throttled"))
    code, out, err = run(capsys, "sync", "--data-dir", data)

    # Then: asked four times in all, the sync fails, and nothing indexed is lost
    assert code == 1, out + err
    assert drive.asked().count(AFTER_FIRST) == 4
    assert waits == [2.128] * 4
    assert last_sync(capsys, data)["last_failure"] == (
        f"https://graph.microsoft.com/v1.0/drives/{DRIVE}: Microsoft Graph still answers 429 "
        "after 3 retries: sync again later"
    )
    assert list(status_documents(capsys, data)) == [WEB_URL]
    assert _cursor(data) == drive.base + AFTER_FIRST.removeprefix("GET ")


def test_refused_credentials_fail_the_sync_with_what_to_do_and_lose_nothing(
    drive: Graph,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE)
    assert run(capsys, "sync", "--data-dir", data)[0] == 0
    before = status_documents(capsys, data)

    # When: Graph refuses the token (expired), even one asked for again
    drive.requests.clear()
    drive.route(AFTER_FIRST, recorded("expired-token"))
    code, out, err = run(capsys, "sync", "--data-dir", data)

    # Then
    assert code == 1, out + err
    assert drive.asked() == [TOKEN, AFTER_FIRST, TOKEN, AFTER_FIRST]
    refused = (
        f"check the client secret in ${VAR} and that app {CLIENT} is registered in tenant {TENANT}"
    )
    last = last_sync(capsys, data)
    assert last["last_failure"] == (
        f"the Graph credentials were refused (InvalidAuthenticationToken): {refused}"
    )
    assert status_documents(capsys, data) == before
    assert _cursor(data) == drive.base + AFTER_FIRST.removeprefix("GET ")

    # When: the token endpoint refuses the app
    drive.route(TOKEN, recorded("token-refused"))
    code, out, err = run(capsys, "sync", "--data-dir", data)

    assert code == 1, out + err
    assert last_sync(capsys, data)["last_failure"] == (
        "the Graph credentials were refused (invalid_scope: AADSTS70011: The provided value for "
        "the input parameter 'scope' is not valid. The scope https://foo.microsoft.com/.default "
        f"is not valid.): {refused}"
    )

    # When: the secret is not in the environment
    monkeypatch.delenv(VAR)
    drive.requests.clear()
    code, out, err = run(capsys, "sync", "--data-dir", data)

    assert code == 1, out + err
    assert drive.requests == []
    assert last_sync(capsys, data)["last_failure"] == (
        f"${VAR} is not set: export the client secret of app {CLIENT} as {VAR} and sync again"
    )
    code, out, err = run(capsys, "sources", "--data-dir", data)
    assert f"last failure: ${VAR} is not set" in out
    assert status_documents(capsys, data) == before
    assert SECRET not in caplog.text


def test_a_stale_delta_link_starts_a_full_listing_again(
    drive: Graph, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE)
    assert run(capsys, "sync", "--data-dir", data)[0] == 0

    # When: Graph says the delta link is too old (410), with a fresh listing's URL
    drive.requests.clear()
    drive.route(AFTER_FIRST, recorded("resync"))
    drive.route(FRESH, recorded("delta-first"))
    code, out, err = run(capsys, "sync", "--data-dir", data)

    # Then: the drive is listed again from there; the unchanged file is not downloaded
    assert code == 0, out + err
    assert drive.asked() == [TOKEN, AFTER_FIRST, FRESH, NEXT]
    assert counts(last_sync(capsys, data)) == (0, 2, 0, 0)
    assert list(status_documents(capsys, data)) == [WEB_URL]
    assert _cursor(data) == drive.base + AFTER_FIRST.removeprefix("GET ")


def test_a_file_removed_from_the_index_by_hand_is_downloaded_again(
    drive: Graph, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a synced drive whose one document is then removed with `docchat rm`
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE)
    assert run(capsys, "sync", "--data-dir", data)[0] == 0
    doc_id = status_documents(capsys, data)[WEB_URL]["doc_id"]
    assert run(capsys, "rm", str(doc_id), "--data-dir", data)[0] == 0

    # When the drive is synced again (its changes since the last sync would not list the file)
    drive.requests.clear()
    code, out, err = run(capsys, "sync", "--data-dir", data)

    # Then it is listed whole again and the file downloaded (before: asked for changes only,
    # and the document stayed gone)
    assert code == 0, out + err
    assert drive.asked() == [TOKEN, FIRST, CONTENT, DOWNLOAD, NEXT]
    assert list(status_documents(capsys, data)) == [WEB_URL]
    assert _cursor(data) == drive.base + AFTER_FIRST.removeprefix("GET ")


def test_a_full_listing_after_a_resync_removes_what_the_drive_no_longer_holds(
    drive: Graph, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE)
    assert run(capsys, "sync", "--data-dir", data)[0] == 0

    # When: after a 410 the fresh listing holds nothing (its file was deleted meanwhile)
    drive.route(AFTER_FIRST, recorded("resync"))
    drive.route(FRESH, recorded("delta-latest"))
    code, out, err = run(capsys, "sync", "--data-dir", data)

    # Then
    assert code == 0, out + err
    assert f"{WEB_URL}: removed: not in the drive" in out
    assert counts(last_sync(capsys, data)) == (0, 0, 1, 0)
    assert status_documents(capsys, data) == {}
    assert _cursor(data) == drive.base + AFTER_DELETE.removeprefix("GET ")


def test_a_file_over_the_size_limit_is_reported_and_not_downloaded(
    drive: Graph,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = str(tmp_path / "data")
    monkeypatch.setattr(graph_module, "MAX_UPLOAD_BYTES", 80_099)  # delta-first's size: 80100
    _added(capsys, data, "--drive", DRIVE)

    code, out, err = run(capsys, "sync", "--data-dir", data)

    assert code == 1, out + err
    assert CONTENT not in drive.asked()
    last = last_sync(capsys, data)
    assert last["last_failure"] == (
        f"{WEB_URL}: 80100 bytes, over the size limit of 80099 bytes, not fetched"
    )
    assert counts(last) == (0, 0, 0, 2)
    assert status_documents(capsys, data) == {}
    assert _cursor(data) == ""  # the next sync lists the drive again


def test_a_site_is_synced_from_its_default_library_and_health_shows_no_secret(
    drive: Graph,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = tmp_path / "data"
    site = "https://contoso.sharepoint.com/teams/1drvteam"
    site_id = (
        "contoso.sharepoint.com,2C712604-1370-44E7-A1F5-426573FDA80A,"
        "2D2244C3-251A-49EA-93A8-39E1C3A060FE"
    )
    drive.route("GET /v1.0/sites/contoso.sharepoint.com:/teams/1drvteam", recorded("site"))
    drive.route(f"GET /v1.0/sites/{site_id}/drive", recorded("drive"))
    _added(capsys, str(data), "--site", site + "/")

    code, out, err = run(capsys, "sync", "--data-dir", str(data))

    assert code == 0, out + err
    assert drive.asked()[:4] == [
        TOKEN,
        "GET /v1.0/sites/contoso.sharepoint.com:/teams/1drvteam",
        f"GET /v1.0/sites/{site_id}/drive",
        FIRST,
    ]
    code, out, err = run(capsys, "sources", "--data-dir", str(data))
    assert f"team: sharepoint {site} (collection team-docs, tenant {TENANT}" in out
    assert f"its secret in ${VAR}" in out
    with served_app(data, monkeypatch) as app:
        health = httpx.get(f"{app}/health", timeout=10)
    assert health.status_code == 200, health.text
    assert SECRET not in health.text
    (source,) = health.json()["checks"]["sources"]["sources"]
    assert {k: source[k] for k in ("name", "kind", "url", "collection", "documents")} == {
        "name": "team",
        "kind": "sharepoint",
        "url": site,
        "collection": "team-docs",
        "documents": 1,
    }


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--client-id", CLIENT, "--secret-env", VAR, "--drive", DRIVE], "required: --tenant"),
        (
            [*ADD[3:], "--secret-env", VAR, "--drive", DRIVE, "--site", "https://x.org/"],
            "not allowed with argument",
        ),
        ([*ADD[3:], "--secret-env", "my secret", "--drive", DRIVE], "the NAME of an environment"),
        ([*ADD[3:], "--secret-env", VAR, "--site", "http://x.sharepoint.com/a"], "its https://"),
        ([*ADD[3:], "--secret-env", VAR, "--site", "team"], "neither a site URL nor a site id"),
        ([*ADD[3:], "--secret-env", VAR, "--drive", DRIVE], "already synced by source 'team'"),
        ([*ADD[3:], "--secret-env", VAR, "--drive", "b!other", "--name", "team"], "already a"),
    ],
)
def test_sources_add_sharepoint_refuses_bad_input_with_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE)

    code, out, err = run(capsys, "sources", "add", "sharepoint", *argv, "--data-dir", data)

    assert code == 2, out + err
    assert says in " ".join(err.split())
    assert "Traceback" not in err


def test_a_link_off_graph_is_not_followed(
    drive: Graph, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE)
    drive.base = drive.download_base  # the feed's links now name another host: localhost

    code, out, err = run(capsys, "sync", "--data-dir", data)

    # Then: the token goes nowhere but Graph; the listing is not complete, nor kept as done
    assert code == 1, out + err
    assert drive.asked() == [TOKEN, FIRST, CONTENT, DOWNLOAD]
    assert last_sync(capsys, data)["last_failure"] == (
        f"https://graph.microsoft.com/v1.0/drives/{DRIVE}: Graph gave a link off "
        f"{graph_module.GRAPH_URL}, not followed"
    )
    assert _cursor(data) == ""
