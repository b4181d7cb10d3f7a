"""Remove: the current object was deleted; remove its chunks and its registry entry."""

from typing import Any

from docchat.ingest.steps import remove
from docchat.payloads import StepEvent, StepResult
from docchat.processes import CleanupSettings
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler


def _run(event: dict[str, Any]) -> StepResult:
    s = services("remove")
    settings = s.view(CleanupSettings)
    task = StepEvent.model_validate(event)
    return remove(
        task,
        objects=s.objects,
        index=s.index,
        registry=s.registry,
        artifacts_bucket=settings.artifacts_bucket,
    )


handler = step_handler("remove", _run)
