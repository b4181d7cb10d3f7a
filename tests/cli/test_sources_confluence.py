"""`docchat sources add confluence` / `docchat sync` against Confluence Cloud on 127.0.0.1
(tests/cli/confluencesite.py) answering with the REST API v2 documentation's example shapes
(tests/fixtures/confluence, see its README), serving a real PDF from ../shared/data and a Word
file made here: the space's pages are listed page by page with their storage-format bodies,
each page's attachments after it; what is synced is cited by its Confluence web address; a
version the last sync saw is not fetched again; the API token is never shown, kept or logged."""

from __future__ import annotations

import base64
import functools
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from docchat.cli import sources as cli_sources
from docchat.sources import confluence as confluence_module
from tests.cli.confluencesite import SITE, Confluence, recorded
from tests.cli.graphsite import file_bytes, serving
from tests.cli.run import counts, found, last_sync, run, served_app, status_documents
from tests.conftest import REPO
from tests.officegen import docx_file

SHARED = REPO.parent / "shared" / "data" / "pdfs" / "py-pdf-sample-files"
HANDBOOK = SHARED / "011-google-doc-document/google-doc-document.pdf"  # "Beautiful is better…"

TOKEN = "FAKE-confluence-token-for-tests-only-0000"
VAR = "DOCCHAT_TEST_CONFLUENCE_TOKEN"
EMAIL = "dana@example.com"
ADD = ["sources", "add", "confluence", "--site", SITE, "--space", "ENG", "--email", EMAIL]

SPACES = "GET /wiki/api/v2/spaces?keys=ENG"
FIRST = "GET /wiki/api/v2/spaces/98306/pages?body-format=storage&limit=250"
NEXT = f"{FIRST}&cursor=eyJpZCI6IjY1NTM3In0"
ONBOARDING_FILES = "GET /wiki/api/v2/pages/65537/attachments?limit=250"
RELEASE_FILES = "GET /wiki/api/v2/pages/65538/attachments?limit=250"
_DATED = "modificationDate=1765065600000&cacheVersion=1&api=v2"
PDF = f"GET /wiki/download/attachments/65537/handbook.pdf?version=1&{_DATED}"
DOCX = f"GET /wiki/download/attachments/65538/checklist.docx?version=2&{_DATED}"
_MEDIA = "binary?client=1a2b3c4d&token=media-token-placeholder&name={}&max-age=2940"
PDF_MEDIA = "GET /file/3f1c4c5e-5e1b-4a57-9a2c-1f0e2d3c4b5a/" + _MEDIA.format("handbook.pdf")
DOCX_MEDIA = "GET /file/c2d3e4f5-a6b7-4c8d-9e0f-1a2b3c4d5e6f/" + _MEDIA.format("checklist.docx")
FIRST_SYNC = [
    *(SPACES, FIRST, ONBOARDING_FILES, PDF, PDF_MEDIA),
    *(NEXT, RELEASE_FILES, DOCX, DOCX_MEDIA),
]
LISTINGS = [SPACES, FIRST, ONBOARDING_FILES, NEXT, RELEASE_FILES]

WIKI = f"{SITE}/wiki/spaces/ENG/pages"
ONBOARDING = f"{WIKI}/65537/Onboarding"
RELEASE = f"{WIKI}/65538/Release+process"
HANDBOOK_URL = f"{ONBOARDING}?preview=%2F65537%2F65601%2Fhandbook.pdf"
CHECKLIST_URL = f"{RELEASE}?preview=%2F65538%2F65603%2Fchecklist.docx"
EVERY_DOCUMENT = {ONBOARDING, HANDBOOK_URL, RELEASE, CHECKLIST_URL}
REFUSED = (
    f"the Confluence API token in ${VAR} was refused (401 Unauthorized): check that it is an API "
    f"token of {EMAIL} for {SITE}, not expired or revoked, and sync again"
)


@pytest.fixture
def handbook() -> bytes:
    if not HANDBOOK.is_file():
        pytest.skip(f"real PDFs not available: {SHARED} is absent")
    return HANDBOOK.read_bytes()


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds `docchat sync` waited (it does not sleep in tests)."""
    waited: list[float] = []
    patched = functools.partial(cli_sources.Syncer, sleep=waited.append)
    monkeypatch.setattr(cli_sources, "Syncer", patched)
    return waited


@pytest.fixture
def space(
    monkeypatch: pytest.MonkeyPatch, handbook: bytes, caplog: pytest.LogCaptureFixture
) -> Iterator[Confluence]:
    """Confluence serving space ENG: two pages listed over two listing pages, the first with a
    PDF and a PNG attached, the second with a Word file; every log record kept."""
    caplog.set_level(logging.DEBUG)
    site = Confluence()
    site.route(SPACES, recorded("spaces"))
    site.route(FIRST, recorded("pages-first"))
    site.route(NEXT, recorded("pages-last"))
    site.route(ONBOARDING_FILES, recorded("attachments-onboarding"))
    site.route(RELEASE_FILES, recorded("attachments-release"))
    site.route(PDF, recorded("download-handbook"))
    site.route(DOCX, recorded("download-checklist"))
    site.route(PDF_MEDIA, file_bytes(handbook, "application/pdf"))
    site.route(DOCX_MEDIA, file_bytes(docx_file()))
    with serving(site):
        monkeypatch.setattr(confluence_module, "api_root", lambda _site: site.base)
        monkeypatch.setenv(VAR, TOKEN)
        yield site


def _added(capsys: pytest.CaptureFixture[str], data: str) -> None:
    argv = [*ADD, "--token-env", VAR, "--name", "eng", "--collection", "eng-docs"]
    code, _, err = run(capsys, *argv, "--data-dir", data)
    assert code == 0, err


def _synced(capsys: pytest.CaptureFixture[str], data: str) -> tuple[int, str]:
    code, out, err = run(capsys, "sync", "--data-dir", data)
    return code, out + err


def test_sync_ingests_pages_and_readable_attachments_cited_by_their_web_addresses(
    space: Confluence,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data)

    code, said = _synced(capsys, data)

    # Then: the space by its key, its pages over two listing pages (_links.next), each page's
    # attachments after it; the PNG is not downloaded
    assert code == 0, said
    assert space.asked() == FIRST_SYNC
    # The account's token is sent to the site only; not to the media host the download
    # redirects to
    basic = "Basic " + base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()
    to_site = [r for r in space.requests if r.host.startswith("127.0.0.1:")]
    assert {r.headers.get("Authorization") for r in to_site} == {basic}
    to_media = [r for r in space.requests if not r.host.startswith("127.0.0.1:")]
    assert [f"GET {r.path}" for r in to_media] == [PDF_MEDIA, DOCX_MEDIA]
    assert all("Authorization" not in r.headers for r in to_media)
    assert counts(last_sync(capsys, data)) == (4, 0, 0, 0)
    documents = status_documents(capsys, data)
    assert set(documents) == EVERY_DOCUMENT
    assert {c for d in documents.values() for c in d["collections"]} == {"eng-docs"}
    assert found(capsys, data, "new engineer pairs with a buddy") == ONBOARDING
    assert found(capsys, data, "make bootstrap") == ONBOARDING  # a code macro's CDATA
    assert found(capsys, data, "second Tuesday freeze review") == RELEASE
    assert found(capsys, data, "Beautiful is better than ugly") == HANDBOOK_URL
    assert found(capsys, data, "Opening paragraph of chapter") == CHECKLIST_URL
    out = run(capsys, "sources", "--data-dir", data)[1]
    assert f"eng: confluence {SITE}/wiki/spaces/ENG (collection eng-docs, as {EMAIL}" in out
    assert f"the API token in ${VAR}" in out
    assert TOKEN not in (Path(data) / "sources.json").read_text(encoding="utf-8")
    assert TOKEN not in caplog.text


def test_a_second_sync_of_unchanged_versions_fetches_nothing_again(
    space: Confluence, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data)
    assert _synced(capsys, data)[0] == 0
    before = status_documents(capsys, data)
    space.requests.clear()

    code, said = _synced(capsys, data)

    # Then: the listings only; no attachment is downloaded and no document is read again
    assert code == 0, said
    assert space.asked() == LISTINGS
    assert {line for line in said.splitlines() if "unchanged" in line} == {
        f"{url}: unchanged (304)" for url in EVERY_DOCUMENT
    } | {"eng: 0 fetched, 4 unchanged, 0 removed, 0 failed, 0 skipped"}
    assert counts(last_sync(capsys, data)) == (0, 4, 0, 0)
    assert status_documents(capsys, data) == before


def test_a_page_of_another_version_is_read_again_and_only_it(
    space: Confluence, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data)
    assert _synced(capsys, data)[0] == 0
    before = status_documents(capsys, data)
    space.requests.clear()

    # When: the release page is edited (version 3 to 4, a new body)
    space.route(NEXT, recorded("pages-last-changed"))
    code, said = _synced(capsys, data)

    # Then
    assert code == 0, said
    assert space.asked() == LISTINGS
    assert f"{RELEASE}: indexed" in said.splitlines()
    assert f"{ONBOARDING}: unchanged (304)" in said.splitlines()
    assert counts(last_sync(capsys, data)) == (1, 3, 0, 0)
    after = status_documents(capsys, data)
    assert after[RELEASE]["revision"] == 2
    assert {u: d for u, d in after.items() if u != RELEASE} == {
        u: d for u, d in before.items() if u != RELEASE
    }
    assert found(capsys, data, "every Thursday once the staging soak has run") == RELEASE


def test_a_page_gone_from_the_complete_listing_is_removed_with_its_attachments(
    space: Confluence, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data)
    assert _synced(capsys, data)[0] == 0

    # When: the space's listing ends after the onboarding page (the release page was deleted)
    space.route(FIRST, recorded("pages-alone"))
    code, said = _synced(capsys, data)

    # Then
    assert code == 0, said
    assert f"{RELEASE}: removed: not in the space" in said
    assert f"{CHECKLIST_URL}: removed: not in the space" in said
    assert counts(last_sync(capsys, data)) == (0, 2, 2, 0)
    assert set(status_documents(capsys, data)) == {ONBOARDING, HANDBOOK_URL}


def test_a_refused_token_fails_the_sync_in_one_line_naming_its_variable_and_loses_nothing(
    space: Confluence,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data)
    assert _synced(capsys, data)[0] == 0
    before = status_documents(capsys, data)

    # When: the token is refused half-way through the listing (revoked meanwhile)
    space.requests.clear()
    space.route(NEXT, recorded("unauthorized"))
    code, said = _synced(capsys, data)

    # Then: the sync stops there, saying so on one line; the pages it did not reach are kept
    assert code == 1, said
    assert space.asked() == [SPACES, FIRST, ONBOARDING_FILES, NEXT]
    assert [line for line in said.splitlines() if "refused" in line] == [
        f"{SITE}/wiki/spaces/ENG: failed: {REFUSED}"
    ]
    last = last_sync(capsys, data)
    assert last["last_failure"] == REFUSED
    assert counts(last) == (0, 2, 0, 1)
    assert status_documents(capsys, data) == before

    # When: the token is not in the environment
    monkeypatch.delenv(VAR)
    space.requests.clear()
    code, said = _synced(capsys, data)

    # Then: nothing is asked of the site
    assert code == 1, said
    assert space.requests == []
    unset = f"${VAR} is not set: export the Confluence API token of {EMAIL} as {VAR} and sync again"
    assert last_sync(capsys, data)["last_failure"] == unset
    assert status_documents(capsys, data) == before
    assert TOKEN not in caplog.text


def test_sync_waits_as_retry_after_says_and_gives_up_after_three_retries(
    space: Confluence, waits: list[float], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data)
    space.route(FIRST, recorded("throttled"), recorded("pages-first"))

    code, said = _synced(capsys, data)

    assert code == 0, said
    assert waits == [5.0]
    assert space.asked().count(FIRST) == 2
    assert set(status_documents(capsys, data)) == EVERY_DOCUMENT

    # When: Confluence goes on throttling the listing
    space.requests.clear()
    space.route(NEXT, recorded("throttled"))
    code, said = _synced(capsys, data)

    # Then: asked four times in all, the sync fails, and nothing indexed is lost
    assert code == 1, said
    assert space.asked().count(NEXT) == 4
    assert waits == [5.0] * 4
    assert last_sync(capsys, data)["last_failure"] == (
        f"{SITE}/wiki/spaces/ENG: Confluence still answers 429 after 3 retries: sync again later"
    )
    assert set(status_documents(capsys, data)) == EVERY_DOCUMENT


def test_a_space_key_the_account_cannot_see_fails_with_what_to_check(
    space: Confluence, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data)
    space.route(SPACES, recorded("spaces-none"))

    code, said = _synced(capsys, data)

    assert code == 1, said
    assert space.asked() == [SPACES]
    assert last_sync(capsys, data)["last_failure"] == (
        f"{SITE}/wiki/spaces/ENG: Confluence lists no space ENG that {EMAIL} may read: check the "
        "space key (in the space's address) and that the account can view the space"
    )


def test_a_next_link_off_the_site_is_not_followed_and_removes_nothing(
    space: Confluence, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data)
    assert _synced(capsys, data)[0] == 0
    space.requests.clear()

    # When: the listing's next link is absolute, on another host
    elsewhere = recorded("pages-first")
    body = elsewhere.body.replace(b'"next": "/wiki', b'"next": "https://evil.example/wiki')
    space.route(FIRST, type(elsewhere)(elsewhere.status, elsewhere.headers, body))
    code, said = _synced(capsys, data)

    # Then: the token goes nowhere else, and the pages not reached are kept
    assert code == 1, said
    assert space.asked() == [SPACES, FIRST, ONBOARDING_FILES]
    assert last_sync(capsys, data)["last_failure"] == (
        f"{SITE}/wiki/spaces/ENG: Confluence gave a link off the site, not followed"
    )
    assert set(status_documents(capsys, data)) == EVERY_DOCUMENT


def test_health_lists_the_space_without_its_token(
    space: Confluence,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = tmp_path / "data"
    _added(capsys, str(data))
    assert _synced(capsys, str(data))[0] == 0

    with served_app(data, monkeypatch) as app:
        health = httpx.get(f"{app}/health", timeout=10)

    assert health.status_code == 200, health.text
    assert TOKEN not in health.text
    (source,) = health.json()["checks"]["sources"]["sources"]
    assert {k: source[k] for k in ("name", "kind", "url", "collection", "documents")} == {
        "name": "eng",
        "kind": "confluence",
        "url": f"{SITE}/wiki/spaces/ENG",
        "collection": "eng-docs",
        "documents": 4,
    }


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--site", SITE, "--space", "ENG", "--email", EMAIL], "required: --token-env"),
        ([*ADD[3:], "--token-env", "my token"], "the NAME of an environment variable"),
        ([*ADD[3:], "--token-env", TOKEN], "the NAME of an environment variable"),
        (["--site", "http://site.atlassian.net", *ADD[5:], "--token-env", VAR], "https://"),
        (["--site", f"{SITE}/wiki/x", *ADD[5:], "--token-env", VAR], "its https:// address"),
        ([*ADD[3:7], "--email", "dana", "--token-env", VAR], "email address of the Atlassian"),
        ([*ADD[3:5], "--space", "EN G", *ADD[7:], "--token-env", VAR], "the space's key"),
        ([*ADD[3:], "--token-env", VAR], "already synced by source 'eng'"),
        (
            ["--site", SITE, "--space", "OPS", *ADD[7:], "--token-env", VAR, "--name", "eng"],
            "there is already a source called 'eng'",
        ),
    ],
)
def test_sources_add_confluence_refuses_bad_input_with_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data)

    code, out, err = run(capsys, "sources", "add", "confluence", *argv, "--data-dir", data)

    assert code == 2, out + err
    assert says in " ".join(err.split())
    assert "Traceback" not in err
    assert TOKEN not in (Path(data) / "sources.json").read_text(encoding="utf-8")
