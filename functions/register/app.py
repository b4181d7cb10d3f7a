"""Register: decide whether an uploaded object needs ingesting and claim the document."""

from typing import Any

from docchat.ingest.steps import register
from docchat.payloads import RegisterResult, StepEvent
from docchat.processes import RegisterSettings
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler


def _run(event: dict[str, Any]) -> RegisterResult:
    s = services("register")
    settings = s.view(RegisterSettings)
    task = StepEvent.model_validate(event)
    return register(
        task,
        objects=s.objects,
        registry=s.registry,
        settings=settings,
        index_location=s.index.location,
    )


handler = step_handler("register", _run)
