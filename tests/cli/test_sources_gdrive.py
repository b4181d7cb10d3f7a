"""`docchat sources add gdrive` / `docchat sync` against Google Drive API v3 and Google's token
endpoint on 127.0.0.1 (tests/cli/gdrivesite.py) answering with the documentation's examples and
the resources' documented shapes (tests/fixtures/gdrive, see its README), serving real PDFs
from ../shared/data and Office files made here for Google's exports: a service account signs in
with a throwaway key the token endpoint verifies; a shared drive is listed page by page, then
only its changes are asked for; Google Docs and Sheets are exported; what is synced is cited by
its webViewLink; the key is never shown, kept or logged."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from docchat.cli import sources as cli_sources
from docchat.sources import gdrive as gdrive_module
from docchat.sources.store import load_sources
from tests.cli.gdrivesite import ACCESS_TOKEN, EMAIL, Drive, key_pair, recorded, route_key
from tests.cli.graphsite import file_bytes, serving
from tests.cli.run import counts, found, last_sync, run, served_app, status_documents
from tests.conftest import REPO
from tests.officegen import docx_file, xlsx_file

SHARED = REPO.parent / "shared" / "data" / "pdfs" / "py-pdf-sample-files"
REPORT = SHARED / "011-google-doc-document/google-doc-document.pdf"  # "Beautiful is better…"
REVISED = SHARED / "002-trivial-libre-office-writer/002-trivial-libre-office-writer.pdf"

VAR = "DOCCHAT_TEST_GDRIVE_KEY"
DRIVE_ID = "0AC3jVsk8eTr4Uk9PVA"
FOLDER_ID = "1dyUEebJaFnWa3Z4n0BFMVAXQ7mfUH11g"
SUB_ID = "1SuBfOlDeR9aBcDeFgHiJkLmNoPqRsTuV"
OUT_ID = "1OuTsIdE7aBcDeFgHiJkLmNoPqRsTuVwX"
REPORT_ID = "1Kq6TIxVtbp2vT4uX5hoB3Ttp1E_yWrMS"
PLAN_ID = "1xHg5DdGdmXJhF4tQbdVx-qU1ED7bVh9MXqzVJ6YrG9M"
FIGURES_ID = "1fIgUrEsQ3aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456"
REPORT_URL = f"https://drive.google.com/file/d/{REPORT_ID}/view?usp=drivesdk"
PLAN_URL = f"https://docs.google.com/document/d/{PLAN_ID}/edit?usp=drivesdk"
FIGURES_URL = f"https://docs.google.com/spreadsheets/d/{FIGURES_ID}/edit?usp=drivesdk"
WHERE = f"https://drive.google.com/drive/folders/{DRIVE_ID}"
OFFICE = "application/vnd.openxmlformats-officedocument"

ALL = {"includeItemsFromAllDrives": "true", "supportsAllDrives": "true"}
TOKEN = "POST /token"
SUPPORTS = {"supportsAllDrives": "true"}  # what files.get and getStartPageToken take
START = route_key("GET", "/drive/v3/changes/startPageToken", driveId=DRIVE_ID, **SUPPORTS)
_LIST = {"corpora": "drive", "driveId": DRIVE_ID, "pageSize": "1000", "q": "trashed = false"}
FIRST = route_key("GET", "/drive/v3/files", **_LIST, **ALL)
NEXT = route_key(
    "GET", "/drive/v3/files", **_LIST, **ALL, pageToken="~!!~AI9FV7T3q2mYv0cJm8n3_Y0dVq1vBtJ"
)
REPORT_MEDIA = route_key(
    "GET", f"/drive/v3/files/{REPORT_ID}", alt="media", supportsAllDrives="true"
)
PLAN_DOCX = route_key(
    "GET", f"/drive/v3/files/{PLAN_ID}/export", mimeType=f"{OFFICE}.wordprocessingml.document"
)
FIGURES_XLSX = route_key(
    "GET", f"/drive/v3/files/{FIGURES_ID}/export", mimeType=f"{OFFICE}.spreadsheetml.sheet"
)
FIRST_SYNC = [TOKEN, START, FIRST, REPORT_MEDIA, PLAN_DOCX, NEXT, FIGURES_XLSX]


def changes(token: str, *, drive: bool = True) -> str:
    """The route of changes.list from `token` (of the shared drive, or of the account's)."""
    scope = {"driveId": DRIVE_ID} if drive else {}
    return route_key("GET", "/drive/v3/changes", **scope, **ALL, pageSize="1000", pageToken=token)


def in_folder(folder: str) -> str:
    query = f"'{folder}' in parents and trashed = false"
    return route_key("GET", "/drive/v3/files", **ALL, pageSize="1000", q=query)


def file_get(file_id: str) -> str:
    return route_key("GET", f"/drive/v3/files/{file_id}", **SUPPORTS)


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
def key(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Drive, str]]:
    """Drive and its token endpoint on 127.0.0.1, knowing a throwaway service account key whose
    JSON is in $VAR; every log record kept (DEBUG)."""
    private, key_json = key_pair()
    drive = Drive(private.public_key())
    with serving(drive):
        monkeypatch.setattr(gdrive_module, "DRIVE_URL", drive.base + "/drive/v3")
        monkeypatch.setattr(gdrive_module, "TOKEN_URL", drive.base + "/token")
        monkeypatch.setenv(VAR, key_json)
        yield drive, key_json


@pytest.fixture
def drive(
    key: tuple[Drive, str], pdfs: tuple[bytes, bytes], caplog: pytest.LogCaptureFixture
) -> Drive:
    """A shared drive of a PDF, a Google Doc, a folder and a JPEG, then a Google Sheet."""
    caplog.set_level(logging.DEBUG)
    site = key[0]
    site.route(START, recorded("start-page-token"))
    site.route(FIRST, recorded("files-first"))
    site.route(NEXT, recorded("files-last"))
    site.route(REPORT_MEDIA, file_bytes(pdfs[0], "application/pdf"))
    site.route(PLAN_DOCX, file_bytes(docx_file()))
    site.route(FIGURES_XLSX, file_bytes(xlsx_file()))
    return site


def _secrets(key: tuple[Drive, str]) -> list[str]:
    """What must never be shown, kept or logged: the private key (a line of it) and the token."""
    pem = json.loads(key[1])["private_key"]
    return [pem.splitlines()[1], ACCESS_TOKEN]


def _sync(capsys: pytest.CaptureFixture[str], data: str, key: tuple[Drive, str]) -> tuple[int, str]:
    code, out, err = run(capsys, "sync", "--data-dir", data)
    assert not [s for s in _secrets(key) if s in out + err]
    return code, out + err


def _added(capsys: pytest.CaptureFixture[str], data: str, *where: str) -> None:
    argv = ["sources", "add", "gdrive", "--key-env", VAR, *where]
    code, _, err = run(
        capsys, *argv, "--name", "team", "--collection", "team-docs", "--data-dir", data
    )
    assert code == 0, err


def _synced_once(capsys: pytest.CaptureFixture[str], tmp_path: Path, key: tuple[Drive, str]) -> str:
    """A data directory with the shared drive added and synced once, the requests forgotten."""
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE_ID)
    assert _sync(capsys, data, key)[0] == 0
    key[0].requests.clear()
    return data


def _cursor(data: str) -> str:
    return load_sources(Path(data)).sources["team"].cursor


def test_sync_lists_the_drive_exports_google_files_then_follows_its_changes(
    drive: Drive,
    key: tuple[Drive, str],
    pdfs: tuple[bytes, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE_ID)

    code, said = _sync(capsys, data, key)

    # Then: one token, the start page token, the listing's two pages; the PDF downloaded, the
    # Doc and the Sheet exported; the folder and the JPEG passed over
    assert code == 0, said
    assert drive.routes_asked() == FIRST_SYNC
    ((claims),) = [a.claims for a in drive.assertions]
    assert {k: claims[k] for k in ("iss", "scope")} == {
        "iss": EMAIL,
        "scope": "https://www.googleapis.com/auth/drive.readonly",
    }
    assert counts(last_sync(capsys, data)) == (3, 0, 0, 0)
    documents = status_documents(capsys, data)
    assert set(documents) == {REPORT_URL, PLAN_URL, FIGURES_URL}
    # each named as in the drive (not "view?usp=drivesdk", which its link ends in)
    assert {u: d["file_name"] for u, d in documents.items()} == {
        REPORT_URL: "report.pdf",
        PLAN_URL: "Team plan.docx",
        FIGURES_URL: "Q3 figures.xlsx",
    }
    assert {c for d in documents.values() for c in d["collections"]} == {"team-docs"}
    assert found(capsys, data, "Beautiful is better than ugly") == REPORT_URL
    assert found(capsys, data, "Opening paragraph of chapter") == PLAN_URL
    assert _cursor(data) == "1432"

    # When: synced again with nothing changed
    drive.requests.clear()
    drive.route(changes("1432"), recorded("changes-none"))
    code, said = _sync(capsys, data, key)

    # Then: only the changes are asked for; nothing is downloaded
    assert code == 0, said
    assert drive.routes_asked() == [TOKEN, changes("1432")]
    assert counts(last_sync(capsys, data)) == (0, 0, 0, 0)

    # When: the PDF changes (its checksum), its change on the second page of changes
    drive.requests.clear()
    drive.route(changes("1432"), recorded("changes-edited-first"))
    drive.route(changes("1490"), recorded("changes-edited-last"))
    drive.route(REPORT_MEDIA, file_bytes(pdfs[1], "application/pdf"))
    code, said = _sync(capsys, data, key)

    # Then: it alone is downloaded again, and re-read
    assert code == 0, said
    assert drive.routes_asked() == [TOKEN, changes("1432"), changes("1490"), REPORT_MEDIA]
    assert counts(last_sync(capsys, data)) == (1, 0, 0, 0)
    assert status_documents(capsys, data)[REPORT_URL]["revision"] == 2
    assert found(capsys, data, "Lorem ipsum dolor") == REPORT_URL
    assert _cursor(data) == "1497"

    # When: the PDF is deleted (removed) and the Doc trashed
    drive.route(changes("1497"), recorded("changes-removed"))
    code, said = _sync(capsys, data, key)

    # Then: both documents are removed
    assert code == 0, said
    assert f"{REPORT_URL}: removed: deleted from Google Drive, or no longer shared" in said
    assert f"{PLAN_URL}: removed: moved to the trash" in said
    assert counts(last_sync(capsys, data)) == (0, 0, 2, 0)
    assert set(status_documents(capsys, data)) == {FIGURES_URL}
    assert _cursor(data) == "1519"
    kept = (Path(data) / "sources.json").read_text(encoding="utf-8")
    assert not [s for s in _secrets(key) if s in kept + caplog.text]


def test_a_file_renamed_in_the_drive_is_renamed_here_though_its_bytes_are_the_same(
    drive: Drive, key: tuple[Drive, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _synced_once(capsys, tmp_path, key)

    # When the PDF is renamed in the drive, its checksum unchanged
    drive.route(changes("1432"), recorded("changes-renamed"))
    code, said = _sync(capsys, data, key)

    # Then it is read again and shows its new name (before: "unchanged (304)" and its old name
    # kept), the same revision
    assert code == 0, said
    assert drive.routes_asked() == [TOKEN, changes("1432"), REPORT_MEDIA]
    assert counts(last_sync(capsys, data)) == (1, 0, 0, 0)
    documents = status_documents(capsys, data)
    assert documents[REPORT_URL]["file_name"] == "annual report.pdf"
    assert documents[REPORT_URL]["revision"] == 1
    # and its passages are found by the new name, which only the name holds (before: their
    # context named the file "view", the end of its link, and a rename changed nothing there)
    assert _keyword_hits(capsys, data, "annual") == [REPORT_URL]
    assert _keyword_hits(capsys, data, "view") == []


def _keyword_hits(capsys: pytest.CaptureFixture[str], data: str, query: str) -> list[str]:
    """The sources of the passages `docchat search` found by keyword (BM25) for `query`."""
    code, out, err = run(capsys, "search", query, "--json", "--data-dir", data)
    assert code == 0, err
    return list(dict.fromkeys(p["source"] for p in json.loads(out) if p["keyword_rank"]))


def test_sync_waits_as_retry_after_says_and_gives_up_after_three_retries(
    drive: Drive,
    key: tuple[Drive, str],
    waits: list[float],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE_ID)
    drive.route(FIRST, recorded("rate-limit"), recorded("files-first"))

    code, said = _sync(capsys, data, key)

    assert code == 0, said
    assert waits == [7.0]
    assert drive.routes_asked().count(FIRST) == 2
    assert len(status_documents(capsys, data)) == 3

    # When: Drive goes on refusing for the user's rate (403, no Retry-After)
    drive.requests.clear()
    drive.route(changes("1432"), recorded("user-rate-limit"))
    code, said = _sync(capsys, data, key)

    # Then: asked four times, waiting 1, 2 and 4 s; the sync fails; nothing indexed is lost
    assert code == 1, said
    assert drive.routes_asked() == [TOKEN] + [changes("1432")] * 4
    assert waits == [7.0, 1.0, 2.0, 4.0]
    assert last_sync(capsys, data)["last_failure"] == (
        f"{WHERE}: Google Drive still answers 403 (userRateLimitExceeded) after 3 retries: sync "
        "again later"
    )
    assert len(status_documents(capsys, data)) == 3
    assert _cursor(data) == "1432"


def test_a_refused_key_fails_the_sync_in_one_line_and_keeps_what_was_indexed(
    drive: Drive,
    key: tuple[Drive, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE_ID)
    assert _sync(capsys, data, key)[0] == 0
    before = status_documents(capsys, data)

    # When: the key was deleted in the Cloud console (its signature no longer verifies)
    drive.public = None
    drive.requests.clear()
    code, said = _sync(capsys, data, key)

    # Then
    assert code == 1, said
    assert drive.routes_asked() == [TOKEN]
    refused = (
        f"the Google service account key in ${VAR} was refused (invalid_grant: Invalid JWT "
        f"Signature.): check that it is a current key of {EMAIL} (a deleted or disabled key is "
        "refused), and sync again"
    )
    assert last_sync(capsys, data)["last_failure"] == refused
    code, out, _ = run(capsys, "sources", "--data-dir", data)
    assert f"  last failure: {refused}\n" in out
    assert status_documents(capsys, data) == before
    assert _cursor(data) == "1432"

    # When: the token is refused by Drive (as an expired one is), even asked for again
    drive.public = _public_of(key[1])  # the key is valid again
    drive.requests.clear()
    drive.route(changes("1432"), recorded("invalid-credentials"))
    code, said = _sync(capsys, data, key)

    assert code == 1, said
    assert drive.routes_asked() == [TOKEN, changes("1432"), TOKEN, changes("1432")]
    assert last_sync(capsys, data)["last_failure"] == (
        f"Google Drive refused the service account's token (401 Invalid Credentials): check the "
        f"key in ${VAR} and that {EMAIL} may use the Drive API, and sync again"
    )

    # When: the variable holds no key, or is not set
    for value, reason in [
        ("not a key", f"${VAR} does not hold a service account's JSON key (it is not JSON)"),
        (
            '{"type": "authorized_user", "client_email": "a@b", "private_key": "x"}',
            "authorized_user",
        ),
        (None, f"${VAR} is not set: export a JSON key of the Google service account"),
    ]:
        if value is None:
            monkeypatch.delenv(VAR)
        else:
            monkeypatch.setenv(VAR, value)
        drive.requests.clear()
        code, said = _sync(capsys, data, key)
        assert code == 1, said
        assert drive.requests == []
        assert reason in str(last_sync(capsys, data)["last_failure"])
    assert status_documents(capsys, data) == before
    assert not [s for s in _secrets(key) if s in caplog.text]


def _public_of(key_json: str) -> rsa.RSAPublicKey:
    pem = json.loads(key_json)["private_key"].encode()
    private = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(private, rsa.RSAPrivateKey)
    return private.public_key()


def test_a_refused_page_token_lists_the_drive_whole_again_downloading_nothing_unchanged(
    drive: Drive, key: tuple[Drive, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _synced_once(capsys, tmp_path, key)

    # When: Drive refuses the saved page token
    drive.route(changes("1432"), recorded("invalid-page-token"))
    drive.route(START, recorded("start-page-token-later"))
    code, said = _sync(capsys, data, key)

    # Then: the drive is listed again from a new start token; nothing is downloaded again
    assert code == 0, said
    assert drive.routes_asked() == [TOKEN, changes("1432"), START, FIRST, NEXT]
    assert counts(last_sync(capsys, data)) == (0, 3, 0, 0)
    assert _cursor(data) == "1519"


def test_a_drive_not_found_or_files_too_large_say_what_to_do(
    drive: Drive,
    key: tuple[Drive, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE_ID)
    drive.route(START, recorded("not-found"))

    code, said = _sync(capsys, data, key)

    assert code == 1, said
    assert last_sync(capsys, data)["last_failure"] == (
        f"{WHERE}: not found (notFound): check the shared drive's id, and that {EMAIL} is a "
        "member of it"
    )

    # When: the PDF is over the upload limit and the Doc over Google's export limit
    monkeypatch.setattr(gdrive_module, "MAX_UPLOAD_BYTES", 80_099)  # report.pdf's size: 80100
    drive.route(START, recorded("start-page-token"))
    drive.route(PLAN_DOCX, recorded("export-too-large"))
    drive.requests.clear()
    code, said = _sync(capsys, data, key)

    # Then: both fail with their reasons, the Sheet is indexed, the listing is asked again next time
    assert code == 1, said
    assert REPORT_MEDIA not in drive.routes_asked()
    assert f"{REPORT_URL}: failed: 80100 bytes, over the size limit of 80099 bytes" in said
    assert (
        f"{PLAN_URL}: failed: Google Drive exports at most 10 MB of a Google file, and this one is "
        "larger: split it, or save it as .docx in Drive and sync that"
    ) in said
    assert counts(last_sync(capsys, data)) == (1, 0, 0, 2)
    assert set(status_documents(capsys, data)) == {FIGURES_URL}
    assert _cursor(data) == ""


def test_a_folder_is_synced_with_its_subfolders_and_a_file_moved_out_is_removed(
    key: tuple[Drive, str],
    pdfs: tuple[bytes, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    drive = key[0]
    data = tmp_path / "data"
    start = route_key("GET", "/drive/v3/changes/startPageToken", **SUPPORTS)
    drive.route(start, recorded("start-page-token"))
    drive.route(file_get(FOLDER_ID), recorded("folder"))
    drive.route(in_folder(FOLDER_ID), recorded("folder-files"))
    drive.route(in_folder(SUB_ID), recorded("subfolder-files"))
    drive.route(REPORT_MEDIA, file_bytes(pdfs[0], "application/pdf"))
    drive.route(PLAN_DOCX, file_bytes(docx_file()))
    _added(capsys, str(data), "--folder", FOLDER_ID)

    code, said = _sync(capsys, str(data), key)

    assert code == 0, said
    assert drive.routes_asked() == [
        *(TOKEN, start, file_get(FOLDER_ID), in_folder(FOLDER_ID), PLAN_DOCX),
        *(in_folder(SUB_ID), REPORT_MEDIA),
    ]
    documents = status_documents(capsys, str(data))
    assert set(documents) == {PLAN_URL, REPORT_URL}
    with served_app(data, monkeypatch) as app:
        shown = httpx.get(f"{app}/documents/{documents[REPORT_URL]['doc_id']}/file", timeout=10)
    # the viewer shows the PDF from the drive (before: a download named "view?usp=drivesdk")
    assert shown.status_code == 200, shown.text
    assert (shown.content, shown.headers["content-type"]) == (pdfs[0], "application/pdf")
    assert shown.headers["content-disposition"] == 'inline; filename="report.pdf"'
    code, out, _ = run(capsys, "sources", "--data-dir", str(data))
    assert (
        f"team: gdrive folder and its subfolders https://drive.google.com/drive/folders/"
        f"{FOLDER_ID} (collection team-docs, as the service account whose key is in ${VAR})"
    ) in out

    # When: the PDF is moved to a folder outside it (whose parent the account cannot see)
    drive.requests.clear()
    drive.route(changes("1432", drive=False), recorded("changes-moved"))
    drive.route(file_get(OUT_ID), recorded("outside-folder"))
    drive.route(file_get("0AOwNeRsRoOt9PVA"), recorded("not-found"))
    code, said = _sync(capsys, str(data), key)

    # Then: Drive is asked up the moved file's parents, and its document is removed
    assert code == 0, said
    assert drive.routes_asked() == [
        TOKEN,
        changes("1432", drive=False),
        file_get(OUT_ID),
        file_get("0AOwNeRsRoOt9PVA"),
    ]
    assert f"{REPORT_URL}: removed: moved out of the folder" in said
    assert set(status_documents(capsys, str(data))) == {PLAN_URL}
    assert _cursor(str(data)) == "1440"
    with served_app(data, monkeypatch) as app:
        health = httpx.get(f"{app}/health", timeout=10)
    assert health.status_code == 200, health.text
    assert not [s for s in _secrets(key) if s in health.text]
    (source,) = health.json()["checks"]["sources"]["sources"]
    assert {k: source[k] for k in ("name", "kind", "url", "documents")} == {
        "name": "team",
        "kind": "gdrive",
        "url": f"https://drive.google.com/drive/folders/{FOLDER_ID}",
        "documents": 1,
    }


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--drive", DRIVE_ID], "required: --key-env"),
        (["--key-env", VAR, "--drive", DRIVE_ID, "--folder", FOLDER_ID], "not allowed with"),
        (["--key-env", VAR], "one of the arguments --drive --folder is required"),
        (["--key-env", "my key", "--drive", DRIVE_ID], "the NAME of an environment variable"),
        (["--key-env", VAR, "--folder", "a/b"], "give the folder's id"),
        (["--key-env", VAR, "--drive", DRIVE_ID], "already synced by source 'team'"),
        (["--key-env", VAR, "--folder", FOLDER_ID, "--name", "team"], "already a source"),
    ],
)
def test_sources_add_gdrive_refuses_bad_input_with_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    data = str(tmp_path / "data")
    _added(capsys, data, "--drive", DRIVE_ID)

    try:
        code, _, err = run(capsys, "sources", "add", "gdrive", *argv, "--data-dir", data)
    except SystemExit as exc:  # argparse refusing the command line
        code, err = int(exc.code or 0), capsys.readouterr().err

    assert code == 2, err
    assert says in " ".join(err.split())
    assert "Traceback" not in err
    assert len(load_sources(Path(data)).sources) == 1
