"""One wrapper for every ingestion Lambda: structured logs, a trace and a metric per step.

`step_handler` hands the step the raw event and does not parse it: each handler in functions/
validates its own event with its payload model from docchat.payloads (e.g.
`BatchTask.model_validate(event)`; convert's is the union `CONVERT_CALL`) and returns a pydantic
model, which the wrapper returns dumped as JSON data. Its log line names the result's `doc_id`
(or its `doc`'s) where the result has one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

# No service or namespace here: Powertools takes them from POWERTOOLS_SERVICE_NAME and
# POWERTOOLS_METRICS_NAMESPACE, which template.yaml sets for every function (Globals), and an
# argument would override those. Logger, Tracer and Metrics each resolve "argument, else the
# variable" when made (resolve_env_var_choice in logging/logger.py, tracing/tracer.py,
# metrics/base.py of aws-lambda-powertools 3.x); the variables:
# https://docs.aws.amazon.com/powertools/typescript/latest/environment-variables (shared by the
# Python library) and https://docs.aws.amazon.com/powertools/python/1.30.0/api/logging/index.html
logger = Logger()
tracer = Tracer()
metrics = Metrics()

Step = Callable[[dict[str, Any]], BaseModel]


def step_handler(name: str, step: Step) -> Callable[[dict[str, Any], LambdaContext], Any]:
    """A Lambda handler running `step` on the event and returning its result as JSON data."""

    @logger.inject_lambda_context(clear_state=True)
    @tracer.capture_lambda_handler(capture_response=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> Any:
        logger.append_keys(step=name)
        result = step(event)
        payload = result.model_dump(mode="json")
        doc = payload.get("doc") or {}
        logger.info("step done", extra={"doc_id": payload.get("doc_id") or doc.get("doc_id")})
        metrics.add_dimension(name="step", value=name)
        metrics.add_metric(name="StepSucceeded", unit=MetricUnit.Count, value=1)
        return payload

    wrapped: Callable[[dict[str, Any], LambdaContext], Any] = handler
    return wrapped
