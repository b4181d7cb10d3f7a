"""What only a real tenant can show of `docchat sync` of a SharePoint / OneDrive source: that
Microsoft's token endpoint grants the app a token, that the drive's delta feed lists its files
and their webUrls, that their bytes download and are indexed, and that a second sync asks only
for changes. Skipped unless DOCCHAT_E2E_GRAPH_TENANT, DOCCHAT_E2E_GRAPH_CLIENT_ID,
DOCCHAT_E2E_GRAPH_SECRET and DOCCHAT_E2E_GRAPH_DRIVE (or DOCCHAT_E2E_GRAPH_SITE) are set; setup in
docs/local.md, "Syncing SharePoint or OneDrive"."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from docchat.cli import main

_REAL_CONNECT = socket.socket.connect  # taken at import, before any test's guard replaces it
_NEEDED = ("DOCCHAT_E2E_GRAPH_TENANT", "DOCCHAT_E2E_GRAPH_CLIENT_ID", "DOCCHAT_E2E_GRAPH_SECRET")


def _configured() -> bool:
    where = os.environ.get("DOCCHAT_E2E_GRAPH_DRIVE") or os.environ.get("DOCCHAT_E2E_GRAPH_SITE")
    return all(os.environ.get(name) for name in _NEEDED) and bool(where)


@pytest.fixture(autouse=True)
def _loopback_only(_loopback_only: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback guard, lifted only for a run against a tenant."""
    if _configured():
        monkeypatch.setattr(socket.socket, "connect", _REAL_CONNECT)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert os.environ["DOCCHAT_E2E_GRAPH_SECRET"] not in captured.out + captured.err
    return code, captured.out + captured.err


def test_a_real_drive_syncs_and_then_asks_only_for_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not _configured():
        pytest.skip("needs a tenant: set DOCCHAT_E2E_GRAPH_* (docs/local.md, SharePoint)")
    data = str(tmp_path / "data")
    drive = os.environ.get("DOCCHAT_E2E_GRAPH_DRIVE")
    where = ["--drive", drive] if drive else ["--site", os.environ["DOCCHAT_E2E_GRAPH_SITE"]]
    add = [
        *("sources", "add", "sharepoint", "--name", "e2e"),
        *("--tenant", os.environ["DOCCHAT_E2E_GRAPH_TENANT"]),
        *("--client-id", os.environ["DOCCHAT_E2E_GRAPH_CLIENT_ID"]),
        *("--secret-env", "DOCCHAT_E2E_GRAPH_SECRET", *where),
    ]
    assert _run(capsys, *add, "--data-dir", data)[0] == 0

    code, said = _run(capsys, "sync", "--data-dir", data)

    assert code == 0, said
    code, said = _run(capsys, "status", "--json", "--data-dir", data)
    documents = json.loads(said)["documents"]
    assert documents, "the drive holds no file docchat reads: add a PDF or .docx to it"
    assert all(d["source"].startswith("https://") for d in documents)

    # When: synced again with nothing changed in between
    code, said = _run(capsys, "sync", "--data-dir", data)

    # Then: nothing is downloaded again
    assert code == 0, said
    code, said = _run(capsys, "sources", "--json", "--data-dir", data)
    (source,) = json.loads(said)
    assert source["last_sync"]["fetched"] == 0
    assert source["last_sync"]["failed"] == 0
