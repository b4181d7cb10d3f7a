"""`docchat ingest`, `search` and `rm` over an OpenSearch cluster (DOCCHAT_OPENSEARCH_ENDPOINT,
here the repository's stand-in, tests/lambda_layout/opensearch_stub.py): the chunks are the
cluster's, as `docchat serve`'s are; the data directory keeps the records and page text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.run import run
from tests.lambda_layout.opensearch_stub import OpenSearchStub
from tests.pdfgen import make_pdf

NOTES = make_pdf(
    [
        [("h1", "Bridge notes"), ("body", "The bridge reopens on Monday after repairs.")],
        [("h2", "Budget"), ("body", "The repairs cost four million euros.")],
    ]
)


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch, dummy_aws: None) -> Iterator[OpenSearchStub]:
    with OpenSearchStub() as running:
        monkeypatch.setenv("DOCCHAT_OPENSEARCH_ENDPOINT", running.endpoint)
        monkeypatch.setenv("DOCCHAT_OPENSEARCH_SERVICE", "aoss")
        yield running


def stored(stub: OpenSearchStub) -> dict[str, int]:
    """doc_id -> how many chunks the cluster holds of it."""
    found: dict[str, int] = {}
    for index in stub.indexes.values():
        for doc in index.docs.values():
            found[doc["doc_id"]] = found.get(doc["doc_id"], 0) + 1
    return found


def test_ingest_and_rm_over_a_cluster_write_and_remove_its_chunks(
    stub: OpenSearchStub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    (tmp_path / "notes.pdf").write_bytes(NOTES)

    # Ingesting writes the chunks to the cluster, and a search finds them there
    code, _, err = run(capsys, "ingest", str(tmp_path / "notes.pdf"), "--data-dir", data)
    assert code == 0, err
    status = json.loads(run(capsys, "status", "--json", "--data-dir", data)[1])
    (doc,) = status["documents"]
    assert doc["status"] == "INDEXED" and stored(stub) == {doc["doc_id"]: doc["chunks"]}
    found = json.loads(run(capsys, "search", "bridge repairs", "--json", "--data-dir", data)[1])
    assert found and {hit["doc_id"] for hit in found} == {doc["doc_id"]}

    # Removing it removes its chunks there too: nothing is left to find
    code, out, err = run(capsys, "rm", "notes.pdf", "--data-dir", data)
    assert code == 0 and "removed notes-" in out, err
    assert stored(stub) == {}
    assert json.loads(run(capsys, "status", "--json", "--data-dir", data)[1])["documents"] == []
