"""What only a real Confluence Cloud site can show of `docchat sync` of a Confluence source: that
the site accepts the account's API token, that the v2 listing gives the space's pages with their
storage-format bodies and web addresses, that they are indexed, and that a second sync reads
nothing again. Skipped unless DOCCHAT_E2E_CONFLUENCE_SITE, DOCCHAT_E2E_CONFLUENCE_SPACE,
DOCCHAT_E2E_CONFLUENCE_EMAIL and DOCCHAT_E2E_CONFLUENCE_TOKEN are set; setup in docs/local.md,
"Syncing Confluence"."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from docchat.cli import main

_REAL_CONNECT = socket.socket.connect  # taken at import, before any test's guard replaces it
_NEEDED = (
    "DOCCHAT_E2E_CONFLUENCE_SITE",
    "DOCCHAT_E2E_CONFLUENCE_SPACE",
    "DOCCHAT_E2E_CONFLUENCE_EMAIL",
    "DOCCHAT_E2E_CONFLUENCE_TOKEN",
)


def _configured() -> bool:
    return all(os.environ.get(name) for name in _NEEDED)


@pytest.fixture(autouse=True)
def _loopback_only(_loopback_only: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback guard, lifted only for a run against a site."""
    if _configured():
        monkeypatch.setattr(socket.socket, "connect", _REAL_CONNECT)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert os.environ["DOCCHAT_E2E_CONFLUENCE_TOKEN"] not in captured.out + captured.err
    return code, captured.out + captured.err


def test_a_real_space_syncs_and_then_reads_nothing_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not _configured():
        pytest.skip("needs a site: set DOCCHAT_E2E_CONFLUENCE_* (docs/local.md, Confluence)")
    data = str(tmp_path / "data")
    site = os.environ["DOCCHAT_E2E_CONFLUENCE_SITE"]
    add = [
        *("sources", "add", "confluence", "--name", "e2e", "--site", site),
        *("--space", os.environ["DOCCHAT_E2E_CONFLUENCE_SPACE"]),
        *("--email", os.environ["DOCCHAT_E2E_CONFLUENCE_EMAIL"]),
        *("--token-env", "DOCCHAT_E2E_CONFLUENCE_TOKEN"),
    ]
    assert _run(capsys, *add, "--data-dir", data)[0] == 0

    code, said = _run(capsys, "sync", "--data-dir", data)

    assert code == 0, said
    code, said = _run(capsys, "status", "--json", "--data-dir", data)
    documents = json.loads(said)["documents"]
    assert documents, "the space holds no page: add one to it"
    assert all(d["source"].startswith(site.rstrip("/") + "/wiki/") for d in documents)
    assert os.environ["DOCCHAT_E2E_CONFLUENCE_TOKEN"] not in (
        Path(data) / "sources.json"
    ).read_text(encoding="utf-8")

    # When: synced again with nothing changed in between
    code, said = _run(capsys, "sync", "--data-dir", data)

    # Then: nothing is read again
    assert code == 0, said
    code, said = _run(capsys, "sources", "--json", "--data-dir", data)
    (source,) = json.loads(said)
    assert source["last_sync"]["fetched"] == 0
    assert source["last_sync"]["failed"] == 0
