"""What only a real Google Drive can show of `docchat sync` of a Google Drive source: that
Google's token endpoint grants the service account a token for the assertion docchat signs,
that the shared drive or folder lists its files with their webViewLinks, that their bytes
download (and Google Docs export as .docx) and are indexed, and that a second sync asks only for
changes and downloads nothing. Skipped unless DOCCHAT_E2E_GDRIVE_KEY (the service account's
JSON key) and DOCCHAT_E2E_GDRIVE_DRIVE (a shared drive's id) or DOCCHAT_E2E_GDRIVE_FOLDER (a
folder's id) are set; setup in docs/local.md, "Syncing Google Drive"."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from tests.cli.run import run

_REAL_CONNECT = socket.socket.connect  # taken at import, before any test's guard replaces it


def _configured() -> bool:
    where = os.environ.get("DOCCHAT_E2E_GDRIVE_DRIVE") or os.environ.get(
        "DOCCHAT_E2E_GDRIVE_FOLDER"
    )
    return bool(os.environ.get("DOCCHAT_E2E_GDRIVE_KEY")) and bool(where)


@pytest.fixture(autouse=True)
def _loopback_only(_loopback_only: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback guard, lifted only for a run against a real Drive."""
    if _configured():
        monkeypatch.setattr(socket.socket, "connect", _REAL_CONNECT)


def _said(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code, out, err = run(capsys, *argv)
    key = json.loads(os.environ["DOCCHAT_E2E_GDRIVE_KEY"])["private_key"]
    assert key.splitlines()[1] not in out + err
    return code, out + err


def test_a_real_drive_syncs_and_then_asks_only_for_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not _configured():
        pytest.skip("needs a service account: set DOCCHAT_E2E_GDRIVE_* (docs/local.md)")
    data = str(tmp_path / "data")
    drive = os.environ.get("DOCCHAT_E2E_GDRIVE_DRIVE")
    where = ["--drive", drive] if drive else ["--folder", os.environ["DOCCHAT_E2E_GDRIVE_FOLDER"]]
    add = ["sources", "add", "gdrive", "--name", "e2e", "--key-env", "DOCCHAT_E2E_GDRIVE_KEY"]
    assert _said(capsys, *add, *where, "--data-dir", data)[0] == 0

    code, said = _said(capsys, "sync", "--data-dir", data)

    assert code == 0, said
    code, said = _said(capsys, "status", "--json", "--data-dir", data)
    documents = json.loads(said)["documents"]
    assert documents, "the drive holds no file docchat reads: add a PDF or a Google Doc to it"
    assert all(
        d["source"].startswith(("https://drive.google.com/", "https://docs.google.com/"))
        for d in documents
    )
    sources = (Path(data) / "sources.json").read_text(encoding="utf-8")
    assert "PRIVATE KEY" not in sources

    # When: synced again with nothing changed in between
    code, said = _said(capsys, "sync", "--data-dir", data)

    # Then: nothing is downloaded again
    assert code == 0, said
    code, said = _said(capsys, "sources", "--json", "--data-dir", data)
    (source,) = json.loads(said)
    assert source["last_sync"]["fetched"] == 0
    assert source["last_sync"]["failed"] == 0
