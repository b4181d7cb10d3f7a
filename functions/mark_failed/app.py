"""MarkFailed: record why ingestion failed and drop the document's stale chunks."""

from typing import Any

from docchat.ingest.failures import mark_failed
from docchat.payloads import FailureTask, StepResult
from docchat.processes import CleanupSettings
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler


def _run(event: dict[str, Any]) -> StepResult:
    s = services("mark_failed")
    settings = s.view(CleanupSettings)
    return mark_failed(
        FailureTask.model_validate(event),
        index=s.index,
        registry=s.registry,
        objects=s.objects,
        artifacts_bucket=settings.artifacts_bucket,
    )


handler = step_handler("mark_failed", _run)
