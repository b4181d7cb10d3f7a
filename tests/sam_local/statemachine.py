"""The ingestion state machine end to end with its Task states executed by the built functions in
containers: moto runs infra/statemachine/ingest.asl.json (as tests/functions does, waits and
retry intervals shortened the same way) and each `lambda:invoke` goes to `sam local
start-lambda`, which serves Lambda's Invoke API for every function of the built template."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import jsonata
from botocore.config import Config
from infra.sam_local import sam

from tests.aws_events import s3_event
from tests.functions.conftest import ARN_NAMES, _definition
from tests.lambda_layout.harness import ACCOUNT, REGION, free_port, moto_client

BUCKET = "docchat-documents-statemachine"
START_TIMEOUT_S = 120
EXECUTION_TIMEOUT_S = 600


@contextlib.contextmanager
def start_lambda(
    invoke_template: Path, *, env_vars: Path, layer_cache: Path, python_bin: Path, moto: str,
    log: Path,
) -> Iterator[str]:  # fmt: skip
    """`sam local start-lambda` for the `with` block; its endpoint."""
    port = free_port()
    command = sam.start_lambda_command(
        invoke_template, env_vars=env_vars, layer_cache=layer_cache, port=port
    )
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, cwd=invoke_template.parent, stdout=out, stderr=subprocess.STDOUT,
            env=sam.sam_environment(python_bin, aws_endpoint=moto), start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _listening(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"sam local start-lambda did not start:\n{_tail(log)}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)  # SAM stops its warm containers on Ctrl-C
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        _remove_lambda_containers()


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _tail(log: Path) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-40:])


def _remove_lambda_containers() -> None:
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "label=sam.cli.container.type=lambda"],
        capture_output=True, text=True, timeout=60, check=False,
    ).stdout.split()  # fmt: skip
    if found:
        subprocess.run(["docker", "rm", "-f", *found], capture_output=True, check=False)


def definition(ids: dict[str, str]) -> str:
    """The real definition with each function named by its logical id, as start-lambda knows it."""
    text = _definition()
    for name in ARN_NAMES.values():
        text = text.replace(f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}", ids[name])
    return text


@contextlib.contextmanager
def executing_in_moto(lambda_endpoint: str) -> Iterator[None]:
    """moto's Step Functions interpreter on, and its lambda:invoke sent to `lambda_endpoint`."""
    from moto.core.config import default_user_config
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
    from moto.stepfunctions.parser.asl.jsonata import jsonata as moto_jsonata

    def lambda_client(region: str, service: str, state_credentials: Any = None) -> Any:
        assert service == "lambda", service
        return _AsLambdaAnswers(
            boto3.client(
                "lambda", region_name=region, endpoint_url=lambda_endpoint,
                aws_access_key_id="testing", aws_secret_access_key="testing",
                config=Config(read_timeout=900, retries={"total_max_attempts": 1}),
            )
        )  # fmt: skip

    saved = (
        dict(default_user_config["stepfunctions"]),
        lambda_eval_utils.boto_client_for,
        moto_jsonata._eval_jsonata,
    )
    default_user_config["stepfunctions"]["execute_state_machine"] = True
    lambda_eval_utils.boto_client_for = lambda_client  # type: ignore[assignment]
    # As tests/functions/conftest.py: moto's JSONata needs a JS engine; the Python port serves.
    moto_jsonata._eval_jsonata = lambda expression: jsonata.Jsonata(expression).evaluate(None)
    try:
        yield
    finally:
        default_user_config["stepfunctions"].clear()
        default_user_config["stepfunctions"].update(saved[0])  # type: ignore[typeddict-item]
        lambda_eval_utils.boto_client_for = saved[1]  # type: ignore[assignment]
        moto_jsonata._eval_jsonata = saved[2]


class _AsLambdaAnswers:
    """`sam local start-lambda` answers a handler's exception (and an init error such as
    Runtime.HandlerNotFound) with status 200 and no X-Amz-Function-Error; Lambda marks it
    "Unhandled", which is what makes the Task fail and the state machine's Catch run. Seen
    here: Convert's error payload went on to Chunk as if it were Convert's result."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def invoke(self, **parameters: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self._client.invoke(**parameters)
        payload = answer["Payload"].read()
        try:
            raised = isinstance(body := json.loads(payload), dict) and "errorType" in body
        except ValueError:
            raised = False
        if raised and not answer.get("FunctionError"):
            answer["FunctionError"] = "Unhandled"
        answer["Payload"] = io.BytesIO(payload)
        return answer


def run_documents(
    moto: str, lambda_endpoint: str, ids: dict[str, str], documents: dict[str, bytes]
) -> dict[str, Any]:
    """Each document uploaded and its Object Created event run through the state machine, then
    the first one deleted and its Object Deleted event run; each execution's status and the
    states it entered."""
    s3 = moto_client("s3", moto)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    runs: dict[str, Any] = {}
    with executing_in_moto(lambda_endpoint):
        sfn = moto_client("stepfunctions", moto)
        arn = sfn.create_state_machine(
            name="ingest", definition=definition(ids), roleArn=f"arn:aws:iam::{ACCOUNT}:role/x"
        )["stateMachineArn"]
        sequence = 0x0062E99A88DC407460
        for key, data in documents.items():
            s3.put_object(Bucket=BUCKET, Key=key, Body=data)
            sequence += 1
            event = s3_event("object-created", bucket=BUCKET, key=key, sequencer=f"{sequence:018X}")
            runs[key] = _execute(sfn, arn, event)
        deleted = next(iter(documents))
        s3.delete_object(Bucket=BUCKET, Key=deleted)
        sequence += 1
        event = s3_event(
            "object-deleted-delete-marker", bucket=BUCKET, key=deleted, sequencer=f"{sequence:018X}"
        )
        runs[f"deleted {deleted}"] = _execute(sfn, arn, event)
    return runs


def _execute(sfn: Any, arn: str, event: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    execution = sfn.start_execution(
        stateMachineArn=arn, name=uuid.uuid4().hex, input=json.dumps(event)
    )["executionArn"]
    while time.monotonic() - started < EXECUTION_TIMEOUT_S:
        described = sfn.describe_execution(executionArn=execution)
        if described["status"] != "RUNNING":
            break
        time.sleep(0.2)
    history = sfn.get_execution_history(executionArn=execution)["events"]
    return {
        "status": described["status"],
        "seconds": round(time.monotonic() - started, 1),
        "states": [e["stateEnteredEventDetails"]["name"] for e in history
                   if "stateEnteredEventDetails" in e],
        "failure": [e.get("executionFailedEventDetails") or e.get("taskFailedEventDetails")
                    for e in history if "Failed" in e["type"]],
        "output": described.get("output"),
        # A function error that came back as a result: `sam local start-lambda` answers an init
        # error (Runtime.HandlerNotFound) without X-Amz-Function-Error, so the Task succeeds
        # with it where Lambda would fail it.
        "errors_as_results": [
            e["taskSucceededEventDetails"]["output"] for e in history
            if "errorType" in e.get("taskSucceededEventDetails", {}).get("output", "")
        ],
    }  # fmt: skip
