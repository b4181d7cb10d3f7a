"""Finalize: drop the old version's chunks and mark the document INDEXED."""

from typing import Any

from docchat.ingest.steps import finalize
from docchat.payloads import FinalizeTask, StepResult
from docchat.processes import CleanupSettings
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler


def _run(event: dict[str, Any]) -> StepResult:
    s = services("finalize")
    settings = s.view(CleanupSettings)
    return finalize(
        FinalizeTask.model_validate(event),
        index=s.index,
        registry=s.registry,
        objects=s.objects,
        artifacts_bucket=settings.artifacts_bucket,
    )


handler = step_handler("finalize", _run)
