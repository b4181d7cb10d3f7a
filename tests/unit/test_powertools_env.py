"""The Lambda functions' service name and metrics namespace come from the environment the
template sets (POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE), not from the code."""

from __future__ import annotations

import json
import os

import yaml

from tests.conftest import REPO, fresh_python
from tests.infra.test_statemachine import CloudFormationLoader

# One step through `step_handler` in a fresh interpreter (the Powertools objects are made when
# docchat.wiring.lambda_handler is imported), with a LambdaContext shaped like
# https://docs.aws.amazon.com/lambda/latest/dg/python-context.html
PROBE = """
from dataclasses import dataclass
from pydantic import BaseModel
from docchat.wiring.lambda_handler import step_handler

class Done(BaseModel):
    doc_id: str

@dataclass
class Context:
    function_name: str = "probe"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:probe"
    memory_limit_in_mb: int = 128
    aws_request_id: str = "52fdfc07-2182-154f-163f-5f0f9a621d72"
    log_group_name: str = "/aws/lambda/probe"
    log_stream_name: str = "2026/11/23/[$LATEST]abc"

step_handler("probe", lambda event: Done(doc_id="doc-1"))({}, Context())
"""


def _run_step(env: dict[str, str]) -> list[dict[str, object]]:
    """The JSON lines a step handler prints (its log line and its metrics)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("POWERTOOLS_")}
    printed = fresh_python(
        PROBE, env={**clean, "POWERTOOLS_TRACE_DISABLED": "true", **env}, timeout=120
    )
    return [json.loads(line) for line in printed.splitlines() if line.startswith("{")]


def test_step_handlers_take_service_and_namespace_from_the_environment() -> None:
    lines = _run_step(
        {"POWERTOOLS_SERVICE_NAME": "ingest-blue", "POWERTOOLS_METRICS_NAMESPACE": "docchat-blue"}
    )

    [log] = [line for line in lines if line.get("message") == "step done"]
    [emf] = [line for line in lines if "_aws" in line]
    assert (log["service"], log["doc_id"], log["step"]) == ("ingest-blue", "doc-1", "probe")
    # CloudWatch embedded metric format: the namespace, and the service as a dimension
    # https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
    [directive] = emf["_aws"]["CloudWatchMetrics"]  # type: ignore[index]
    assert (directive["Namespace"], directive["Dimensions"]) == (
        "docchat-blue",
        [["step", "service"]],
    )
    assert (emf["service"], emf["StepSucceeded"]) == ("ingest-blue", [1.0])


def test_the_template_sets_both_variables_for_every_function() -> None:
    template = yaml.load((REPO / "template.yaml").read_text(), Loader=CloudFormationLoader)

    variables = template["Globals"]["Function"]["Environment"]["Variables"]

    assert variables["POWERTOOLS_SERVICE_NAME"] == "docchat"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "docchat"
