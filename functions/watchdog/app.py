"""Watchdog: an ingestion run that timed out or was aborted never leaves a document stuck."""

from typing import Any

from docchat.ingest.steps import mark_failed
from docchat.models import ExecutionStatusEvent, StepResult
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler

#: The settings this function cannot run without (DOCCHAT_<NAME>), checked on each invocation.
REQUIRED = ("documents_table", "opensearch_endpoint")


def _run(event: dict[str, Any]) -> StepResult:
    s = services().require(*REQUIRED, entry="the watchdog function")
    task = ExecutionStatusEvent.model_validate(event).failure_task()
    return mark_failed(task, index=s.index, registry=s.registry)


handler = step_handler("watchdog", _run)
