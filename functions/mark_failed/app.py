"""MarkFailed: record why ingestion failed and drop the document's stale chunks."""

from typing import Any

from docchat.cloud import services
from docchat.lambda_handler import step_handler
from docchat.models import FailureTask, StepResult
from docchat.pipeline import mark_failed


def _run(event: dict[str, Any]) -> StepResult:
    s = services()
    return mark_failed(FailureTask.model_validate(event), index=s.index, registry=s.registry)


handler = step_handler("mark_failed", _run)
