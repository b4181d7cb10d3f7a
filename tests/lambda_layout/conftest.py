"""One `sam build` (x86_64) and one Lambda layout per session; moto, the Bedrock stub and the
OpenSearch stand-in on loopback. Each test module makes its own stack (table, artifacts bucket,
OpenSearch stand-in)."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, table_schema
from tests.lambda_layout.bedrock_stub import BedrockStub
from tests.lambda_layout.harness import (
    Emulator,
    Layout,
    harness_variables,
    moto_client,
    prepare_layout,
    sam_build,
    why_not_runnable,
)
from tests.lambda_layout.opensearch_stub import OpenSearchStub

DOCS_BUCKET = "docchat-documents-example"  # the bucket the sample events name
PDF_KEY = "reports/dmca.pdf"


@pytest.fixture(scope="session")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    reason = why_not_runnable()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("lambda")
    started = time.monotonic()
    build = sam_build(work)
    prepared = prepare_layout(work, build)
    print(f"\nLambda layout ready in {time.monotonic() - started:.1f} s: {work}")
    return prepared


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """moto in server mode, one per module: its backends are the process's, which other tests'
    mock_aws resets, so no state is kept across modules."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        # The server shares moto's in-process backends: start from empty ones.
        urllib.request.urlopen(
            urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10
        ).close()
        s3 = moto_client("s3", endpoint)
        s3.create_bucket(Bucket=DOCS_BUCKET)
        s3.upload_file(str(EXAMPLES / "dmca.pdf"), DOCS_BUCKET, PDF_KEY)
        yield endpoint
    finally:
        server.stop()


@pytest.fixture(scope="module")
def opensearch() -> Iterator[OpenSearchStub]:
    """The collection's stand-in, one per module like moto: a stack's chunks stay in it."""
    with OpenSearchStub() as stub:
        yield stub


@pytest.fixture(scope="session")
def bedrock() -> Iterator[BedrockStub]:
    with BedrockStub() as stub:
        yield stub


@dataclass
class Stack:
    """One module's resources in moto, and how the harness resolves the template for them."""

    table: str
    artifacts: str
    data_dir: Path  # where an embedded index would go, which the cloud wiring never makes
    known: dict[str, str]
    extra: dict[str, str]

    def emulator(self, layout: Layout, logs: Path) -> Emulator:
        return Emulator(layout, self.known, self.extra, logs)


def make_stack(
    name: str, tmp: Path, *, moto_endpoint: str, bedrock_endpoint: str, opensearch_endpoint: str
) -> Stack:
    table, artifacts = f"docchat-documents-{name}", f"docchat-artifacts-{name}"
    moto_client("s3", moto_endpoint).create_bucket(Bucket=artifacts)
    moto_client("dynamodb", moto_endpoint).create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "doc_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "doc_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    conversations = f"docchat-conversations-{name}"
    # The template's ConversationsTable: the user's Cognito sub, then the conversation's id.
    moto_client("dynamodb", moto_endpoint).create_table(
        TableName=conversations,
        **table_schema("ConversationsTable"),
    )
    known = {
        "DocumentsTable": table,
        "ConversationsTable": conversations,
        "ArtifactsBucket": artifacts,
        "DocumentsBucket": DOCS_BUCKET,
        # The default stack creates a Serverless collection (DOCCHAT_OPENSEARCH_SERVICE aoss);
        # its stand-in speaks plain http on loopback (tests/lambda_layout/opensearch_stub.py).
        "VectorCollection.CollectionEndpoint": opensearch_endpoint,
        "ChatUserPoolClient": "harness-page-client",
        "ChatUserPool": "eu-west-1_HarnessPool",
    }
    extra = {
        **harness_variables(aws_endpoint=moto_endpoint, bedrock_endpoint=bedrock_endpoint),
        "DOCCHAT_DATA_DIR": str(tmp / "index"),
    }
    return Stack(table, artifacts, tmp / "index", known, extra)
