"""The OpenSearch adapter holds to the ChunkStore contract: over the repository's stand-in
for a Serverless collection (tests/lambda_layout/opensearch_stub.py) always, and over a live
cluster when OPENSEARCH_URL is set (see tests/integration/test_opensearch_live.py)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from opensearchpy import OpenSearch

from docchat.adapters.opensearch_index import OpenSearchIndex, client_for
from docchat.ports import ChunkStore
from tests.contract.chunk_store import DIMENSION, MODEL, ChunkStoreContract
from tests.lambda_layout.opensearch_stub import OpenSearchStub

OPENSEARCH_URL = os.environ.get("OPENSEARCH_URL", "")


def adapter(client: OpenSearch, *, serverless: bool) -> OpenSearchIndex:
    return OpenSearchIndex(
        client=client,
        embedding_model=MODEL,
        dimension=DIMENSION,
        serverless=serverless,
        index_prefix=f"docchat-contract-{uuid.uuid4().hex[:10]}",
        wake_s=1.0,
    )


class TestStandInChunkStore(ChunkStoreContract):
    KEEPS_SENTENCES = False
    # The difference from OpenSearch: the stand-in lower-cases words for BM25 but does not
    # stem them, where the mapping asks for the `english` analyzer (which does).
    STEMS = False

    @pytest.fixture
    def store(self) -> Iterator[OpenSearchIndex]:
        with OpenSearchStub() as stub:
            client = client_for(stub.endpoint, region="us-east-1", service="aoss")
            yield adapter(client, serverless=True)
            client.close()


@pytest.mark.skipif(
    not OPENSEARCH_URL,
    reason="set OPENSEARCH_URL (e.g. http://127.0.0.1:9200 after `docker compose up -d`) "
    "to hold a live OpenSearch to the contract",
)
class TestLiveChunkStore(ChunkStoreContract):
    KEEPS_SENTENCES = False
    STEMS = True  # the mapping's `english` analyzer

    @pytest.fixture(params=[False, True], ids=["domain", "serverless-path"])
    def store(self, request: pytest.FixtureRequest) -> Iterator[OpenSearchIndex]:
        client = client_for(
            OPENSEARCH_URL,
            region=os.environ.get("AWS_REGION", "us-east-1"),
            service=os.environ.get("OPENSEARCH_SERVICE", "es"),
        )
        live = adapter(client, serverless=request.param)
        live.ensure_index()
        self._client = client
        try:
            yield live
        finally:
            client.indices.delete(index=live.index_name, ignore=404)
            client.close()

    def settle(self, store: ChunkStore) -> None:
        assert isinstance(store, OpenSearchIndex)
        self._client.indices.refresh(index=store.index_name)
