"""A data directory `docchat ingest` made (real embedder), shared by the tests that spawn
`docchat mcp`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_server.spawn import ingested_data_dir


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingested_data_dir(tmp_path_factory.mktemp("mcp-data"))
