"""Local mode over a cluster (adapters/cluster_index.py: records, page text and sentence
vectors in the SQLite file, chunks in OpenSearch, here the stand-in) holds to both ports'
contracts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from docchat.adapters.cluster_index import ClusterIndex
from docchat.adapters.opensearch_index import client_for
from docchat.adapters.sqlite_index import SqliteIndex
from tests.contract.catalog import DocumentCatalogContract
from tests.contract.chunk_store import DIMENSION, MODEL, ChunkStoreContract
from tests.contract.test_opensearch import adapter
from tests.lambda_layout.opensearch_stub import OpenSearchStub


@pytest.fixture
def cluster_index(tmp_path: Path) -> Iterator[ClusterIndex]:
    records = SqliteIndex(tmp_path / "index.sqlite3", embedding_model=MODEL, dimension=DIMENSION)
    with OpenSearchStub() as stub:
        client = client_for(stub.endpoint, region="us-east-1", service="aoss")
        yield ClusterIndex(records, adapter(client, serverless=True))
        client.close()
    records.close()


class TestClusterChunkStore(ChunkStoreContract):
    KEEPS_RECORDS = True
    KEEPS_SENTENCES = True  # in the SQLite file, by chunk id
    STEMS = False  # the stand-in's (see test_opensearch.py)

    @pytest.fixture
    def store(self, cluster_index: ClusterIndex) -> ClusterIndex:
        return cluster_index


class TestClusterCatalog(DocumentCatalogContract):
    TELLS_REVISIONS = True

    @pytest.fixture
    def catalog(self, cluster_index: ClusterIndex) -> ClusterIndex:
        return cluster_index
