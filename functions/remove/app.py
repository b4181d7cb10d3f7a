"""Remove: an object was deleted; remove its chunks and its registry entry."""

from typing import Any

from docchat.cloud import services
from docchat.lambda_handler import step_handler
from docchat.models import StepEvent, StepResult
from docchat.pipeline import remove


def _run(event: dict[str, Any]) -> StepResult:
    s = services()
    return remove(StepEvent.model_validate(event), index=s.index, registry=s.registry)


handler = step_handler("remove", _run)
