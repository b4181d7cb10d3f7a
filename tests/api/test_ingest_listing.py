"""A document `docchat ingest` is working on is listed by the server while it works (issue 44):
it has no record until it is indexed, so for the minutes a long filing takes the page showed
nothing. It is listed at its stage, in the collection it goes to, only to who may read that."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from docchat.ingest import claims
from docchat.serve.access import UsersFile, token_sha256
from tests.conftest import WordEmbedder
from tests.mcpkit import ingested, served_as_docchat_serve

USERS = {
    "users": [
        {"name": "ana", "token_sha256": token_sha256("ana-token"), "read": ["ferries"]},
        {"name": "bo", "token_sha256": token_sha256("bo-token"), "read": ["bridges"]},
    ]
}
ANA, BO = {"authorization": "Bearer ana-token"}, {"authorization": "Bearer bo-token"}
NEW_ID = "annual-report-2024-0a1b2c3d"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    data_dir = tmp_path / "data"
    ingested(data_dir, WordEmbedder(), own_collections=True)
    users_path = tmp_path / "users.json"
    users_path.write_text(json.dumps(USERS))
    with served_as_docchat_serve(data_dir, UsersFile.load(users_path)) as url:
        yield url, data_dir


def _listed(url: str, user: dict[str, str]) -> dict[str, dict[str, object]]:
    response = httpx.get(f"{url}/documents", headers=user, timeout=30)
    assert response.status_code == 200, response.text
    return {d["doc_id"]: d for d in response.json()["documents"]}


def test_a_document_being_ingested_is_listed_at_its_stage_to_who_may_read_it(
    server: tuple[str, Path],
) -> None:
    url, data_dir = server
    source = str(data_dir.parent / "Annual report 2024.pdf")
    held = claims.claim(data_dir, NEW_ID, source=source, collections=["ferries"])
    assert held is not None
    with held:
        held.report("embed", 120, 600)

        seen = _listed(url, ANA)[NEW_ID]
        assert (seen["status"], seen["file_name"], seen["collections"]) == (
            "EMBEDDING",
            "Annual report 2024.pdf",
            ["ferries"],
        )
        assert NEW_ID not in _listed(url, BO)

    assert NEW_ID not in _listed(url, ANA)  # done (or killed): listed by its record only


def test_a_claim_written_before_claims_named_collections_reads_as_the_default_one(
    tmp_path: Path,
) -> None:
    held = claims.claim(tmp_path, NEW_ID, source="report.pdf")
    assert held is not None
    with held:
        path = tmp_path / claims.FOLDER / f"{NEW_ID}.json"
        written = json.loads(path.read_text())
        del written["collections"]
        path.write_text(json.dumps(written))

        [work] = claims.in_progress(tmp_path)

    assert work.record.collections == ["default"]
