"""Watchdog: an ingestion run that timed out or was aborted never leaves a document stuck."""

from typing import Any

from docchat.ingest.failures import stopped_run
from docchat.payloads import ExecutionStatusEvent, StepResult
from docchat.processes import CleanupSettings
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler


def _run(event: dict[str, Any]) -> StepResult:
    s = services("watchdog")
    settings = s.view(CleanupSettings)
    task = ExecutionStatusEvent.model_validate(event)
    return stopped_run(
        task,
        executions=s.executions,
        index=s.index,
        registry=s.registry,
        objects=s.objects,
        artifacts_bucket=settings.artifacts_bucket,
    )


handler = step_handler("watchdog", _run)
