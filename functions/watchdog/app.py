"""Watchdog: an ingestion run that timed out or was aborted never leaves a document stuck."""

from typing import Any

from docchat.ingest.failures import stopped_run
from docchat.payloads import ExecutionStatusEvent, StepResult
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler

#: The settings this function cannot run without (DOCCHAT_<NAME>), checked on each invocation.
REQUIRED = ("documents_table", "opensearch_endpoint", "artifacts_bucket")


def _run(event: dict[str, Any]) -> StepResult:
    s = services().require(*REQUIRED, entry="the watchdog function")
    task = ExecutionStatusEvent.model_validate(event)
    return stopped_run(
        task,
        executions=s.executions,
        index=s.index,
        registry=s.registry,
        objects=s.objects,
        artifacts_bucket=s.settings.artifacts_bucket,
    )


handler = step_handler("watchdog", _run)
