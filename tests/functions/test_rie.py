"""Every Lambda in functions/ runs under the Lambda Runtime Interface Emulator, as
`sam local invoke <Function> -e events/<name>.json` would run it, but without Docker.

The emulator ships in the aws-sam-cli wheel (`make test` installs it into .venv-sam) and runs the
handler through awslambdaric with this venv's Python, so the layer's dependencies resolve. The
AWS services the handlers call are moto in server mode on loopback (`AWS_ENDPOINT_URL`).
The sample events are invoked in pipeline order against one document, examples/pdfs/dmca.pdf.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeDeserializer

from tests.conftest import EXAMPLES, REPO

REGION = "us-east-1"
DOCS_BUCKET = "docchat-documents-example"  # the bucket the sample events name
PDF_KEY = "reports/dmca.pdf"
ARTIFACTS_BUCKET = "docchat-artifacts-rie"
TABLE = "docchat-documents-rie"
DOC_ID = "dmca-75433a68"
VERSION = "931f4374c255bcf28690c0567ba7be8e53513bce682e3db8086a831b92fcdfb6"
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:docchat-ingest:example-run"
BATCH_KEY = f"artifacts/{DOC_ID}/{VERSION}/chunks/00000.json"
PIPELINE_ORDER = (
    "register",
    "convert",
    "chunk",
    "embed",
    "index",
    "finalize",
    "mark_failed",
    "watchdog",
    "remove",
)
RIE_IN_SAMCLI = "samcli/local/rapid/aws-lambda-rie-x86_64"
INVOKE_TIMEOUT_S = 120  # the emulator's function timeout; the HTTP wait allows a little more
START_TIMEOUT_S = 10
PROXIES = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}


def _rie_binary() -> Path | None:
    """aws-lambda-rie-x86_64 inside the aws-sam-cli install (.venv-sam, or DOCCHAT_SAM's venv)."""
    venvs = [REPO / ".venv-sam"]
    if os.environ.get("DOCCHAT_SAM"):
        venvs.insert(0, Path(os.environ["DOCCHAT_SAM"]).resolve().parent.parent)
    for venv in venvs:
        found = sorted(venv.glob(f"lib/python3*/site-packages/{RIE_IN_SAMCLI}"))
        if found:
            return found[0]
    return None


def _why_not_runnable() -> str | None:
    if platform.machine() not in ("x86_64", "AMD64"):
        return f"the emulator binary shipped by aws-sam-cli is x86_64; this is {platform.machine()}"
    if _rie_binary() is None:
        return "aws-lambda-rie-x86_64 not found: `make install` puts aws-sam-cli in .venv-sam"
    if importlib.util.find_spec("awslambdaric") is None:
        return "awslambdaric is not installed in this venv: run `make install`"
    try:
        import moto.server  # noqa: F401
    except ImportError as exc:
        return f"moto's server mode needs moto[server] ({exc}): add the extra to pyproject's dev"
    return None


_NOT_RUNNABLE = _why_not_runnable()
pytestmark = pytest.mark.skipif(_NOT_RUNNABLE is not None, reason=_NOT_RUNNABLE or "")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the emulator exited with {process.returncode}:\n{_tail(log)}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"the emulator did not listen within {START_TIMEOUT_S} s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the emulator and the runtime it started (both are in the process group we made)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
    with contextlib.suppress(ProcessLookupError):  # the runtime may outlive the emulator
        os.killpg(process.pid, signal.SIGKILL)


@dataclass
class Invocation:
    name: str
    status: int
    function_error: str
    body: Any
    log: str

    def ok(self) -> Any:
        """The handler's result; an invocation error fails the test with the handler's message."""
        raised = isinstance(self.body, dict) and "errorType" in self.body
        if self.status != 200 or self.function_error or raised:
            raise AssertionError(
                f"{self.name}: invocation failed (HTTP {self.status}, "
                f"function error {self.function_error or '-'}): "
                f"{json.dumps(self.body, indent=2)}\n--- emulator and function log ---\n{self.log}"
            )
        return self.body


class Emulator:
    """Runs one function folder under the emulator per invocation, like `sam local invoke`."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.invocations = 0

    def invoke(self, name: str, event: Any) -> Invocation:
        port, runtime_port = _free_port(), _free_port()
        self.invocations += 1
        log = self.logs / f"{self.invocations:02d}-{name}.log"
        env = {
            **self.env,
            "AWS_LAMBDA_FUNCTION_NAME": f"docchat-{name}",
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(INVOKE_TIMEOUT_S),
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        }
        command = [
            str(_rie_binary()),
            "--runtime-interface-emulator-address",
            f"127.0.0.1:{port}",
            "--runtime-api-address",
            f"127.0.0.1:{runtime_port}",
            sys.executable,
            "-m",
            "awslambdaric",
            "app.handler",
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(
                command,
                cwd=REPO / "functions" / name,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            _wait_for_port(port, process, log)
            return self._post(name, port, event, log)
        finally:
            _stop(process)

    @staticmethod
    def _post(name: str, port: int, event: Any, log: Path) -> Invocation:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/2015-03-31/functions/function/invocations",
            data=json.dumps(event).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=INVOKE_TIMEOUT_S + 30) as response:
                status, headers, raw = response.status, response.headers, response.read()
        except urllib.error.HTTPError as exc:
            status, headers, raw = exc.code, exc.headers, exc.read()
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        error = headers.get("X-Amz-Function-Error", "")
        return Invocation(name, status, error, body, _tail(log))


def _event(name: str) -> Any:
    return json.loads((REPO / "events" / f"{name}.json").read_text())


def _moto_client(service: str, endpoint: str) -> Any:
    return boto3.client(
        service,
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
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
        s3 = _moto_client("s3", endpoint)
        s3.create_bucket(Bucket=DOCS_BUCKET)
        s3.create_bucket(Bucket=ARTIFACTS_BUCKET)
        s3.upload_file(str(EXAMPLES / "dmca.pdf"), DOCS_BUCKET, PDF_KEY)
        _moto_client("dynamodb", endpoint).create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "doc_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "doc_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield endpoint
    finally:
        server.stop()


@pytest.fixture(scope="module")
def emulator(moto_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Emulator:
    base = tmp_path_factory.mktemp("rie")
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "DOCCHAT_", "POWERTOOLS_")) and k.upper() not in PROXIES
    }
    env = {
        **inherited,
        # The layer's code, as Lambda mounts it at /opt/python.
        "PYTHONPATH": str(REPO / "layers" / "docchat"),
        "AWS_ENDPOINT_URL": moto_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
        # conftest's socket guard does not reach this process: send any HTTP(S) call beyond
        # loopback to a closed port so it fails instead of leaving the machine.
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_SERVICE_NAME": "docchat",
        "POWERTOOLS_METRICS_NAMESPACE": "docchat-test",
        "DOCCHAT_DOCUMENTS_TABLE": TABLE,
        "DOCCHAT_ARTIFACTS_BUCKET": ARTIFACTS_BUCKET,
        "DOCCHAT_EMBEDDER": "local",
        "DOCCHAT_DATA_DIR": str(base / "index"),
    }
    logs = base / "logs"
    logs.mkdir()
    return Emulator(env, logs)


@dataclass
class Step:
    invocation: Invocation
    item_after: dict[str, Any] | None  # the document's registry item once the step returned

    def ok(self) -> Any:
        return self.invocation.ok()


@pytest.fixture(scope="module")
def steps(emulator: Emulator, moto_endpoint: str) -> dict[str, Step]:
    """Each sample event sent once, in pipeline order, to its function under the emulator."""
    return {
        name: Step(emulator.invoke(name, _event(name)), _item(moto_endpoint))
        for name in PIPELINE_ORDER
    }


def _doc() -> dict[str, str]:
    return {
        "doc_id": DOC_ID,
        "version": VERSION,
        "bucket": DOCS_BUCKET,
        "key": PDF_KEY,
        "execution_id": EXECUTION,
    }


def _item(endpoint: str) -> dict[str, Any] | None:
    found = _moto_client("dynamodb", endpoint).get_item(
        TableName=TABLE, Key={"doc_id": {"S": DOC_ID}}, ConsistentRead=True
    )
    if "Item" not in found:
        return None
    plain = TypeDeserializer()
    return {k: plain.deserialize(v) for k, v in found["Item"].items()}


def test_rie_sample_pdf_is_the_version_the_events_name() -> None:
    assert hashlib.sha256((EXAMPLES / "dmca.pdf").read_bytes()).hexdigest() == VERSION


def test_rie_covers_every_handler_with_its_sample_event() -> None:
    handlers = {p.parent.name for p in (REPO / "functions").glob("*/app.py")}
    events = {p.stem for p in (REPO / "events").glob("*.json")}
    assert handlers == events == set(PIPELINE_ORDER)


def test_rie_register_claims_the_uploaded_pdf(steps: dict[str, Step]) -> None:
    assert steps["register"].ok() == {"action": "process", "reason": "", "doc": _doc()}
    item = steps["register"].item_after
    assert item is not None
    assert (item["status"], item["execution_id"]) == ("QUEUED", EXECUTION)


def test_rie_convert_stores_the_pages(steps: dict[str, Step]) -> None:
    result = steps["convert"].ok()
    sample = _event("chunk")  # what the state machine hands Chunk is what Convert returned
    assert result == {
        "doc": _doc(),
        "title": sample["title"],
        "pages": sample["pages"],
        "pages_key": f"artifacts/{DOC_ID}/{VERSION}/pages.json",
    }
    _expect_item(steps["convert"], status="CHUNKING", pages=sample["pages"])


def test_rie_chunk_writes_the_batch_the_embed_and_index_events_name(
    steps: dict[str, Step],
) -> None:
    result = steps["chunk"].ok()
    assert result["doc"] == _doc()
    assert result["batches"] == [BATCH_KEY]
    assert BATCH_KEY == _event("embed")["batch_key"] == _event("index")["batch_key"]
    assert result["chunks"] == _event("finalize")["chunks"], (
        "events/finalize.json should carry the chunk count that chunk returns"
    )
    _expect_item(steps["chunk"], status="EMBEDDING", chunks=result["chunks"])


def test_rie_embed_and_index_handle_the_batch(steps: dict[str, Step]) -> None:
    expected = {"doc": _doc(), "batch_key": BATCH_KEY, "chunks": steps["chunk"].ok()["chunks"]}
    assert steps["embed"].ok() == expected
    assert steps["index"].ok() == expected


def test_rie_finalize_marks_the_document_indexed(steps: dict[str, Step]) -> None:
    result = steps["finalize"].ok()
    assert (result["doc_id"], result["status"]) == (DOC_ID, "INDEXED")
    chunks = _event("finalize")["chunks"]
    _expect_item(steps["finalize"], status="INDEXED", chunks=chunks, error="", error_code="")


def test_rie_mark_failed_and_watchdog_leave_an_indexed_document_alone(
    steps: dict[str, Step],
) -> None:
    unchanged = {"doc_id": DOC_ID, "status": "unchanged", "detail": "another run owns it"}
    assert steps["mark_failed"].ok() == unchanged
    assert steps["watchdog"].ok() == unchanged
    _expect_item(steps["watchdog"], status="INDEXED")


def test_rie_remove_forgets_the_deleted_pdf(steps: dict[str, Step]) -> None:
    assert steps["remove"].ok() == {"doc_id": DOC_ID, "status": "removed", "detail": ""}
    assert steps["remove"].item_after is None


def test_rie_handler_error_fails_the_invocation(emulator: Emulator) -> None:
    # Given an event Convert cannot parse, When it runs, Then the emulator reports the
    # handler's exception and ok() fails with its type and message.
    invocation = emulator.invoke("convert", {"doc_id": DOC_ID})

    # The emulator answers 200 with the error as the body (no X-Amz-Function-Error header).
    assert isinstance(invocation.body, dict)
    assert invocation.body["errorType"] == "ValidationError"
    with pytest.raises(AssertionError, match=r"(?s)ValidationError.*validation errors? for DocRef"):
        invocation.ok()


def _expect_item(step: Step, **expected: Any) -> None:
    """The document's registry item, once the step returned, has the `expected` fields."""
    item = step.item_after
    assert item is not None, f"{step.invocation.name}: the document vanished from the registry"
    assert {k: item.get(k) for k in expected} == expected, f"{step.invocation.name}: {item}"
