"""Remove: the current object was deleted; remove its chunks and its registry entry."""

from typing import Any

from docchat.cloud import services
from docchat.lambda_handler import step_handler
from docchat.models import StepEvent, StepResult
from docchat.pipeline import remove


def _run(event: dict[str, Any]) -> StepResult:
    s = services()
    task = StepEvent.model_validate(event)
    return remove(
        task,
        objects=s.objects,
        index=s.index,
        registry=s.registry,
        artifacts_bucket=s.settings.artifacts_bucket,
    )


handler = step_handler("remove", _run)
