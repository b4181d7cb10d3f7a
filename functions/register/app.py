"""Register: decide whether an uploaded object needs ingesting and claim the document."""

from typing import Any

from docchat.ingest.steps import register
from docchat.payloads import RegisterResult, StepEvent
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler

#: The settings this function cannot run without (DOCCHAT_<NAME>), checked on each invocation.
REQUIRED = ("documents_table", "opensearch_endpoint")


def _run(event: dict[str, Any]) -> RegisterResult:
    s = services().require(*REQUIRED, entry="the register function")
    task = StepEvent.model_validate(event)
    return register(
        task,
        objects=s.objects,
        registry=s.registry,
        settings=s.settings,
        index_location=s.index.location,
    )


handler = step_handler("register", _run)
