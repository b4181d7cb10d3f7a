"""Watchdog: an ingestion run that timed out or was aborted never leaves a document stuck."""

from typing import Any

from docchat.cloud import services
from docchat.lambda_handler import step_handler
from docchat.models import ExecutionStatusEvent, StepResult
from docchat.pipeline import mark_failed


def _run(event: dict[str, Any]) -> StepResult:
    s = services()
    task = ExecutionStatusEvent.model_validate(event).failure_task()
    return mark_failed(task, index=s.index, registry=s.registry)


handler = step_handler("watchdog", _run)
