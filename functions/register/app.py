"""Register: decide whether an uploaded object needs ingesting and claim the document."""

from typing import Any

from docchat.cloud import services
from docchat.lambda_handler import step_handler
from docchat.models import RegisterResult, StepEvent
from docchat.pipeline import register


def _run(event: dict[str, Any]) -> RegisterResult:
    s = services()
    task = StepEvent.model_validate(event)
    return register(task, objects=s.objects, registry=s.registry, settings=s.settings)


handler = step_handler("register", _run)
