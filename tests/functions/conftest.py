"""The real state machine, executed by moto, calling the real handlers in-process.

moto runs Step Functions definitions for real but evaluates JSONata through a JVM bridge it
does not ship; jsonata-python (a pure-Python JSONata) fills that in. Its Lambda backend
(no Docker) echoes payloads: here it dispatches to functions/<name>/app.py instead.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import boto3
import jsonata
import numpy as np
import pytest
from botocore.exceptions import ClientError
from botocore.response import StreamingBody
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.stepfunctions.parser.asl.jsonata import jsonata as moto_jsonata

from tests.aws_events import DELETIONS, s3_event
from tests.conftest import REPO

REGION = "us-east-1"
ACCOUNT = "123456789012"
DOCS_BUCKET = "docchat-documents"
ARTIFACTS_BUCKET = "docchat-artifacts"
TABLE = "docchat-documents"
FUNCTIONS = (
    "register",
    "convert",
    "ocr",
    "chunk",
    "embed",
    "index",
    "finalize",
    "mark_failed",
    "remove",
    "watchdog",
)
ARN_NAMES = {
    "RegisterFunctionArn": "register",
    "ConvertFunctionArn": "convert",
    "OcrFunctionArn": "ocr",
    "ChunkFunctionArn": "chunk",
    "EmbedFunctionArn": "embed",
    "IndexFunctionArn": "index",
    "FinalizeFunctionArn": "finalize",
    "MarkFailedFunctionArn": "mark_failed",
    "RemoveFunctionArn": "remove",
}


@dataclass
class FakeContext:
    function_name: str
    memory_limit_in_mb: int = 1024
    aws_request_id: str = "test-request"

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"


class FakeBedrock:
    """bedrock-runtime's invoke_model for Titan v2: word-hash vectors; can throttle on demand."""

    meta = SimpleNamespace(region_name=REGION)

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.calls = 0
        self.throttle_next = 0
        self._lock = threading.Lock()

    def invoke_model(self, *, modelId: str, body: str, **_: Any) -> dict[str, Any]:
        with self._lock:
            self.calls += 1
            if self.throttle_next > 0:
                self.throttle_next -= 1
                raise ClientError(
                    {"Error": {"Code": "ThrottlingException", "Message": "Too many requests"}},
                    "InvokeModel",
                )
        text = json.loads(body)["inputText"]
        vector = np.zeros(self.dimension)
        for word in re.findall(r"[a-z]+", text.casefold()):
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1
        payload = json.dumps({"embedding": vector.tolist(), "inputTextTokenCount": 1}).encode()
        return {"body": StreamingBody(io.BytesIO(payload), len(payload))}


def _load_handler(name: str) -> ModuleType:
    path = REPO / "functions" / name / "app.py"
    spec = importlib.util.spec_from_file_location(f"docchat_fn_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FunctionsServices:
    """The functions' services, one per function as in the cloud, seen as one: an adapter read
    is the watchdog's (whose settings hold every adapter's but the chat model's), and one set
    replaces it in every function."""

    def __init__(self, services: Callable[[str], Any]) -> None:
        object.__setattr__(self, "_each", [services(name) for name in FUNCTIONS])
        object.__setattr__(self, "_reader", services("watchdog"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)

    def __setattr__(self, name: str, value: Any) -> None:
        for services in self._each:
            setattr(services, name, value)


class LambdaKilled(Exception):
    """Stands for a sandbox that died (out of memory, killed) after doing its work."""


class Pipeline:
    """Start runs of the real state machine and read what they left behind."""

    kills: Counter[str]  # function name -> invocations to kill after they did their work

    def __init__(self, sfn: Any, s3: Any, arn: str, services: Any, calls: Counter[str]) -> None:
        self.sfn, self.s3, self.arn, self.services, self.calls = sfn, s3, arn, services, calls
        self._sequence = 0x0062E99A88DC407460

    def next_sequencer(self) -> str:
        self._sequence += 1
        return f"{self._sequence:018X}"

    def event(
        self,
        kind: str,
        key: str,
        sequencer: str | None = None,
        *,
        reason: str = "DeleteObject",
        deletion_type: str = "Delete Marker Created",
    ) -> dict[str, Any]:
        """The S3 EventBridge event of `kind` about `key`, as its documentation page shows it
        (tests/aws_events.py); a deletion is a user's on a versioned bucket unless `reason` and
        `deletion_type` say otherwise."""
        name = "object-created" if kind == "Object Created" else DELETIONS[reason, deletion_type]
        return s3_event(
            name, bucket=DOCS_BUCKET, key=key, sequencer=sequencer or self.next_sequencer()
        )

    def upload(self, key: str, data: bytes, timeout: float = 120) -> dict[str, Any]:
        self.s3.put_object(Bucket=DOCS_BUCKET, Key=key, Body=data)
        return self.run(self.event("Object Created", key), timeout=timeout)

    def delete(self, key: str) -> dict[str, Any]:
        self.s3.delete_object(Bucket=DOCS_BUCKET, Key=key)
        return self.run(self.event("Object Deleted", key))

    def run(self, event: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
        execution = self.sfn.start_execution(
            stateMachineArn=self.arn, name=uuid.uuid4().hex, input=json.dumps(event)
        )["executionArn"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            described = self.sfn.describe_execution(executionArn=execution)
            if described["status"] != "RUNNING":
                return dict(described)
            time.sleep(0.05)
        raise AssertionError(f"execution did not finish in {timeout} s")

    def states_entered(self, execution: dict[str, Any]) -> list[str]:
        events = self.sfn.get_execution_history(executionArn=execution["executionArn"])["events"]
        return [
            e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e
        ]


def _definition(*, settle_seconds: int = 0) -> str:
    """The real definition with the stack's substitutions, retry waits cut to under a second
    and the waits for the search index's visibility delay cut to `settle_seconds`."""
    text = (REPO / "infra" / "statemachine" / "ingest.asl.json").read_text()
    for placeholder, name in ARN_NAMES.items():
        text = text.replace(
            "${" + placeholder + "}", f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
        )
    definition = json.loads(text)

    def shorten(node: Any) -> None:
        if isinstance(node, dict):
            if "IntervalSeconds" in node:
                node.update(IntervalSeconds=1, BackoffRate=1.0, MaxDelaySeconds=1)
                node.pop("JitterStrategy", None)
            if node.get("Type") == "Wait":
                node["Seconds"] = settle_seconds
            for value in node.values():
                shorten(value)
        elif isinstance(node, list):
            for value in node:
                shorten(value)

    shorten(definition)
    assert "${" not in json.dumps(definition)
    return json.dumps(definition)


@pytest.fixture
def pipeline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Pipeline]:
    with running_pipeline(monkeypatch, tmp_path) as running:
        yield running


@contextmanager
def running_pipeline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Pipeline]:
    """The state machine and its handlers over moto's S3, DynamoDB and Step Functions (for
    the `pipeline` fixture, and for tests elsewhere that need the cloud's ingestion)."""
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "docchat-test",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "DOCCHAT_DOCUMENTS_TABLE": TABLE,
        "DOCCHAT_ARTIFACTS_BUCKET": ARTIFACTS_BUCKET,
        "DOCCHAT_EMBEDDER": "titan",
        "DOCCHAT_EMBED_DIMENSION": "256",
        "DOCCHAT_EMBED_CONCURRENCY": "2",
        "DOCCHAT_CHUNKS_PER_BATCH": "2",
        # As the stack sets it on Convert (which has no OCR engine in the cloud): pages that
        # need OCR go through the OCR map, two pages an item so a short scan makes several.
        "DOCCHAT_OCR": "cloud",
        "DOCCHAT_OCR_PAGES_PER_TASK": "2",
        # Required by the index-writing handlers; the index itself is replaced below.
        "DOCCHAT_OPENSEARCH_ENDPOINT": "https://127.0.0.1:9",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(
        moto_jsonata, "_eval_jsonata", lambda expression: jsonata.Jsonata(expression).evaluate(None)
    )
    from docchat.adapters.bedrock_embedder import TitanEmbedder
    from docchat.adapters.sqlite_index import SqliteIndex
    from docchat.wiring.cloud import services

    handlers = {name: _load_handler(name) for name in FUNCTIONS}
    calls: Counter[str] = Counter()
    kills: Counter[str] = Counter()

    def invoke(
        self: Any,
        function_name: str,
        qualifier: Any,
        body: Any,
        headers: Any,
        response_headers: dict[str, str],
    ) -> bytes:
        name = function_name.rsplit(":", 1)[-1]
        calls[name] += 1
        event = json.loads(body) if body else {}
        try:
            result = handlers[name].handler(event, FakeContext(name))
            if kills[name] > 0:  # the work is done, then the sandbox dies before answering
                kills[name] -= 1
                raise LambdaKilled("Runtime exited with error: signal: killed")
        except Exception as exc:  # the Lambda runtime reports a handler's exception like this
            response_headers["x-amz-function-error"] = "Unhandled"
            kind = "Runtime.ExitError" if isinstance(exc, LambdaKilled) else type(exc).__name__
            error = {"errorType": kind, "errorMessage": str(exc)}
            return json.dumps(error).encode()
        return json.dumps(result).encode()

    monkeypatch.setattr(LambdaSimpleBackend, "invoke", invoke)
    with mock_aws(
        config={"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
    ):
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=DOCS_BUCKET)
        # As the stack makes it: versioned, so deletions leave delete markers.
        s3.put_bucket_versioning(Bucket=DOCS_BUCKET, VersioningConfiguration={"Status": "Enabled"})
        s3.create_bucket(Bucket=ARTIFACTS_BUCKET)
        boto3.client("dynamodb", region_name=REGION).create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "doc_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "doc_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        sfn = boto3.client("stepfunctions", region_name=REGION)
        arn = sfn.create_state_machine(
            name="ingest",
            definition=_definition(),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/ingest",
        )["stateMachineArn"]
        services.cache_clear()
        live = FunctionsServices(services)
        fake = FakeBedrock(dimension=256)
        live.embedder = TitanEmbedder(client=fake, dimension=256, concurrency=2)
        # The embedded index stands in for OpenSearch: it keeps the same chunks and answers
        # the same pipeline port (docchat.ports.ChunkStore); tests/unit/test_opensearch_index.py
        # and tests/lambda_layout cover the OpenSearch adapter itself.
        live.index = SqliteIndex(
            tmp_path / "index" / "index.sqlite3",
            embedding_model=live.embedder.model_id,
            dimension=live.embedder.dimension,
        )
        live.bedrock = fake
        pipeline = Pipeline(sfn, s3, arn, live, calls)
        pipeline.kills = kills
        yield pipeline
        live.index.close()
        services.cache_clear()


PdfMaker = Callable[..., bytes]
